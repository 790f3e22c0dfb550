import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll } from 'vitest';

const made: string[] = [];

// Imported by a test file, this registers on that file: its folders go when its tests are done.
afterAll(() => {
  for (const directory of made.splice(0)) rmSync(directory, { recursive: true, force: true });
});

/** A fresh folder under the system's temporary folder, removed once the test file has run. */
export function temporaryDirectory(prefix = 'agent-machines-'): string {
  const directory = mkdtempSync(join(tmpdir(), prefix));
  made.push(directory);
  return directory;
}
