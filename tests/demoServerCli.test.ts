// `npm start` runs examples/demo/server.ts as a command: it builds the page unless its folder
// holds a build of the same sources, listens on 127.0.0.1 and prints the URL. Here it runs as
// `npm start` runs it (the tsx loader, in a child process, with `PORT` and `DEMO_OUT_DIR` in its
// environment), on copies of the page built once for this run, and every child is stopped
// after its scenario.
import { type ChildProcessByStdio, spawn } from 'node:child_process';
import { cp, readFile, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join, relative, resolve } from 'node:path';
import type { Readable } from 'node:stream';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { DEMO_BUILD_STAMP, isDemoAppBuilt } from '../examples/demo/buildDemoApp';
import { sharedDemoPage } from './support/sharedDemoPage';
import { temporaryDirectory } from './support/temporaryDirectory';

const repository = resolve(import.meta.dirname, '..');
/** The variables that would send the demo's endpoints to the real services. */
const REAL_SERVICE_VARIABLES = [
  'OPENAI_API_KEY',
  'OPENAI_BASE_URL',
  'OPENAI_MODEL',
  'ANTHROPIC_API_KEY',
  'ANTHROPIC_BASE_URL',
  'ANTHROPIC_MODEL',
];
/** The build takes a few seconds alone; the machine may be busy with other tests. */
const START_TIMEOUT_MS = 120_000;
/** The run's page is built by the first file that asks: maybe this one, maybe another. */
const SHARED_PAGE_TIMEOUT_MS = 120_000;

/**
 * A copy of the page built for this run, for one CLI to serve or rebuild: the shared folder
 * stays as it is for the files that serve it meanwhile. The stamp still holds in a copy, since
 * it hashes the repository's sources, not the folder.
 */
async function copyOfSharedPage(): Promise<string> {
  const shared = await sharedDemoPage('agent-machines-demo-cli-page-');
  const copy = temporaryDirectory('agent-machines-demo-cli-');
  await cp(shared.directory, copy, { recursive: true });
  await shared.release();
  return copy;
}

interface CliRun {
  child: ChildProcessByStdio<null, Readable, Readable>;
  stdout(): string;
  stderr(): string;
  /** The exit code (`null` when a signal ended it), once it exits. */
  exited: Promise<number | null>;
}

const running = new Set<CliRun>();

/**
 * Starts the demo CLI with `PORT=port` and `DEMO_OUT_DIR=outDir`, its endpoints on their
 * recordings whatever this shell holds.
 */
function startCli(port: string, outDir: string): CliRun {
  const env: NodeJS.ProcessEnv = { ...process.env, PORT: port, DEMO_OUT_DIR: outDir };
  for (const name of REAL_SERVICE_VARIABLES) delete env[name];
  const child = spawn(process.execPath, ['--import', 'tsx', 'examples/demo/server.ts'], {
    cwd: repository,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (text: string) => {
    stdout += text;
  });
  child.stderr.setEncoding('utf8').on('data', (text: string) => {
    stderr += text;
  });
  const run: CliRun = {
    child,
    stdout: () => stdout,
    stderr: () => stderr,
    exited: new Promise((resolve) => child.once('exit', (code) => resolve(code))),
  };
  running.add(run);
  return run;
}

/** Resolves with the first match of `pattern` in the CLI's output; rejects if it exits first or takes too long. */
function outputMatching(run: CliRun, pattern: RegExp): Promise<RegExpMatchArray> {
  const output = () => `stdout:\n${run.stdout()}\nstderr:\n${run.stderr()}`;
  return new Promise((resolve, reject) => {
    const finish = () => {
      clearTimeout(timer);
      run.child.stdout.off('data', check);
      run.child.off('exit', onExit);
    };
    const check = () => {
      const match = run.stdout().match(pattern);
      if (match === null) return;
      finish();
      resolve(match);
    };
    const onExit = (code: number | null) => {
      finish();
      reject(new Error(`the CLI exited (${code}) before printing ${pattern}\n${output()}`));
    };
    const timer = setTimeout(() => {
      finish();
      reject(new Error(`no ${pattern} in ${START_TIMEOUT_MS} ms\n${output()}`));
    }, START_TIMEOUT_MS);
    // Registered after startCli's own listener, so the output already holds each new chunk.
    run.child.stdout.on('data', check);
    run.child.once('exit', onExit);
    check();
    if (run.child.exitCode !== null) onExit(run.child.exitCode);
  });
}

/** Stops the CLI as Ctrl+C would (SIGTERM), and kills it if it is still there after 5 s. */
async function stop(run: CliRun): Promise<void> {
  running.delete(run);
  if (run.child.exitCode !== null || run.child.signalCode !== null) return;
  run.child.kill('SIGTERM');
  const killer = setTimeout(() => run.child.kill('SIGKILL'), 5_000);
  await run.exited;
  clearTimeout(killer);
}

/** A loopback server that holds a free port, as another program would. */
async function occupyPort(): Promise<{ port: number; server: Server }> {
  const server = createServer((_request, response) => response.end('someone else'));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { port: (server.address() as AddressInfo).port, server };
}

describe('npm start: the demo server command', () => {
  let occupied: Server | undefined;
  /** The page this file's CLIs serve: a build of the sources as they are. */
  let pageDirectory: string;

  beforeAll(async () => {
    pageDirectory = await copyOfSharedPage();
  }, SHARED_PAGE_TIMEOUT_MS);

  afterEach(async () => {
    await Promise.all([...running].map(stop));
    await new Promise<void>((resolve) => (occupied === undefined ? resolve() : occupied.close(() => resolve())));
    occupied = undefined;
  });

  it(
    'on a port in use, says so, listens on the next free one and serves the page there',
    async () => {
      const { port, server } = await occupyPort();
      occupied = server;
      const run = startCli(String(port), pageDirectory);

      const [, url = '', listening = ''] = await outputMatching(
        run,
        /^agent-machines demo: (http:\/\/127\.0\.0\.1:(\d+)\/) .*Ctrl\+C stops\)$/m,
      );
      expect(run.stdout()).toContain(`Port ${port} on 127.0.0.1 is in use; trying ${port + 1}.\n`);
      expect(Number(listening)).not.toBe(port);

      const page = await fetch(url);
      expect(page.status).toBe(200);
      expect(page.headers.get('content-type')).toBe('text/html; charset=utf-8');
      const html = await page.text();
      expect(html).toContain('<title>agent-machines demo</title>');
      expect(html).toContain('<div id="root"></div>');
      expect(html).toMatch(/<script type="module" crossorigin src="\/assets\/index-[\w-]+\.js"><\/script>/);
      const config = await fetch(new URL('/api/config', url));
      expect(await config.json()).toEqual({ openai: 'recorded', anthropic: 'recorded' });
    },
    START_TIMEOUT_MS + 10_000,
  );

  it(
    'does not rebuild an unchanged page; a page built from other sources is rebuilt',
    async () => {
      const listening = /^agent-machines demo: http:\/\/127\.0\.0\.1:\d+\/ /m;
      // A relative DEMO_OUT_DIR is taken from where the command runs (here the repository).
      const unchanged = startCli('0', relative(repository, pageDirectory));
      await outputMatching(unchanged, listening);
      expect(unchanged.stdout()).toContain(
        `The page is unchanged since its last build; not rebuilt (${pageDirectory})\n`,
      );
      expect(unchanged.stdout()).not.toContain('Built the page');
      await stop(unchanged);

      // As if a source had changed since: the stamp's hash no longer matches the files.
      const stale = await copyOfSharedPage();
      const stampFile = join(stale, DEMO_BUILD_STAMP);
      const stamp = JSON.parse(await readFile(stampFile, 'utf8')) as { files: string[]; hash: string };
      expect(stamp.files).toContain('examples/demo/app/DemoApp.tsx');
      expect(stamp.files).toContain('react/useXChat.ts');
      expect(stamp.files.some((file) => file.includes('node_modules'))).toBe(false);
      await writeFile(stampFile, JSON.stringify({ ...stamp, hash: 'a build of other sources' }));
      expect(await isDemoAppBuilt(stale)).toBe(false);
      const rebuilt = startCli('0', stale);
      await outputMatching(rebuilt, listening);
      expect(rebuilt.stdout().match(/^Built the page in \d+\.\d s \((.+)\)$/m)?.[1]).toBe(stale);
      expect(rebuilt.stdout()).not.toContain('not rebuilt');
      // The CLI's build stamped the page anew: the next start would serve it as it is.
      expect(await isDemoAppBuilt(stale)).toBe(true);
    },
    2 * START_TIMEOUT_MS,
  );

  it(
    "serves the page's script compressed to a client that accepts it, and plain to one that does not",
    async () => {
      const run = startCli('0', pageDirectory);
      const [, url = ''] = await outputMatching(run, /^agent-machines demo: (http:\/\/127\.0\.0\.1:\d+\/) /m);
      const html = await (await fetch(url)).text();
      const script = new URL(html.match(/src="(\/assets\/index-[\w-]+\.js)"/)?.[1] ?? '/missing', url);
      const plain = await fetch(script, { headers: { 'accept-encoding': 'identity' } });
      const plainBody = Buffer.from(await plain.arrayBuffer());
      expect(plain.headers.get('content-encoding')).toBeNull();
      expect(plain.headers.get('vary')).toBe('Accept-Encoding');
      // fetch decodes what it asked for; the length header tells what went over the wire.
      for (const [accept, encoding] of [
        ['gzip, deflate, br', 'br'],
        ['gzip', 'gzip'],
        ['br;q=0, gzip', 'gzip'],
      ] as const) {
        const answer = await fetch(script, { headers: { 'accept-encoding': accept } });
        expect(answer.headers.get('content-encoding')).toBe(encoding);
        expect(answer.headers.get('vary')).toBe('Accept-Encoding');
        expect(Number(answer.headers.get('content-length'))).toBeLessThan(plainBody.length / 2);
        expect(Buffer.from(await answer.arrayBuffer()).equals(plainBody)).toBe(true);
      }
    },
    START_TIMEOUT_MS + 10_000,
  );

  it.each(['abc', '70000', '-1'])(
    'PORT=%s: one line that names the value, exit code 1, no build and no stack trace',
    async (value) => {
      const run = startCli(value, pageDirectory);
      const code = await run.exited;
      expect(code).toBe(1);
      expect(run.stderr()).toBe(
        `agent-machines demo: PORT must be a whole number from 0 to 65535 (0 for any free port), not "${value}".\n`,
      );
      expect(run.stdout()).toBe('');
    },
    20_000,
  );
});
