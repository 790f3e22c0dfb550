// `npm run demo:terminal` runs examples/terminal-demo.ts: the whole agent loop on the local runtime. It
// must keep working on a fresh clone, so it runs here as that script runs it.
import { execFile } from 'node:child_process';
import { resolve } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const repository = resolve(import.meta.dirname, '..');

describe('npm run demo:terminal', () => {
  it('retries, approves, runs the client tool and continues, with no protocol issue', async () => {
    const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', 'examples/terminal-demo.ts'], {
      cwd: repository,
      timeout: 30_000,
    });
    expect(stdout).toContain('retry get_weather {"city":"Rome"}: succeeded');
    expect(stdout).toContain('approve "Email the forecast to the team?": succeeded');
    expect(stdout).toContain('run send_email on the client: succeeded');
    expect(stdout).toMatch(/toolCall {2}failed {13}get_weather\(\{"city":"Rome"\}\) attempt 1 -> "upstream timeout"/);
    expect(stdout).toMatch(/get_weather\(\{"city":"Rome"\}\) attempt 2 -> \{"city":"Rome","celsius":21\}/);
    expect(stdout).toMatch(/approval {2}resolved +Email the forecast to the team\? -> approved/);
    expect(stdout).toMatch(
      /\(continues [0-9a-f]{8}\): completed\n {2}message {3}completed {10}"Done: \{\\"sent\\":true\}\."/,
    );
    expect(stdout).toContain('protocol issues: 0');
  });
});
