// vitest's globalSetup: where the demo page is built, at most once per `vitest run`, for
// every file that serves it (`sharedDemoPage` in tests/support/, which makes the folder).
// Nothing is built or made here, so a run without those files pays nothing.
import { randomUUID } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';

declare module 'vitest' {
  export interface ProvidedContext {
    /** Where `sharedDemoPage` builds the demo page for this run. */
    demoPageDirectory: string;
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const directory = join(tmpdir(), `agent-machines-demo-page-${randomUUID()}`);
  project.provide('demoPageDirectory', directory);
  return () => rm(directory, { recursive: true, force: true });
}
