// The demo page, built at most once per `vitest run` for every file that serves it: the
// browser files, the demo server's forwarding test and the `npm start` tests. vitest's
// globalSetup (`tests/browser/demoPageBuild.ts`) only names the folder; the first file to ask
// builds the page there, in its own worker.
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { inject } from 'vitest';
import { buildDemoApp } from '../../examples/demo/buildDemoApp';

/** A built demo page, with its build stamp; served, never written to. */
export interface SharedDemoPage {
  directory: string;
  /** Removes the page if it was built for this caller alone; a shared one stays for the others. */
  release(): Promise<void>;
}

/** A ceiling for one build on a loaded machine, not a measure. */
const BUILD_WAIT_MS = 5 * 60_000;

/**
 * The demo page built for this run. Several files ask in parallel workers: the first takes the
 * lock (a folder `mkdir` creates for one caller only) and builds; the others wait for its mark,
 * or fail with its error. Outside the globalSetup (another config), a page of the caller's own
 * under `prefix`.
 */
export async function sharedDemoPage(prefix: string): Promise<SharedDemoPage> {
  const root = inject('demoPageDirectory');
  if (root === undefined) {
    const directory = await mkdtemp(join(tmpdir(), prefix));
    await buildDemoApp(directory);
    return { directory, release: () => rm(directory, { recursive: true, force: true }) };
  }
  const shared: SharedDemoPage = { directory: join(root, 'page'), release: async () => {} };
  const built = join(root, 'built');
  const failed = join(root, 'failed');
  await mkdir(root, { recursive: true });
  try {
    await mkdir(join(root, 'building'));
  } catch {
    const deadline = Date.now() + BUILD_WAIT_MS;
    while (!existsSync(built)) {
      if (existsSync(failed)) throw new Error(`the demo page's build failed: ${await readFile(failed, 'utf8')}`);
      if (Date.now() > deadline) throw new Error(`the demo page was not built within ${BUILD_WAIT_MS} ms`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    return shared;
  }
  try {
    await buildDemoApp(shared.directory);
  } catch (error) {
    await writeFile(failed, String(error));
    throw error;
  }
  await writeFile(built, '');
  return shared;
}
