import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Plugin } from 'vite';
import * as z from 'zod/mini';

/** The page's sources: `app/index.html` and the React code it loads. */
export const DEMO_APP_DIRECTORY = fileURLToPath(new URL('./app/', import.meta.url));
/** Where the built page goes by default (git-ignored). */
export const DEMO_DIST_DIRECTORY = fileURLToPath(new URL('./dist/', import.meta.url));
/** Beside the built page: the repository's files it was bundled from, and their content hash. */
export const DEMO_BUILD_STAMP = '.demo-build.json';

const REPOSITORY = resolve(fileURLToPath(new URL('../../', import.meta.url)));
/**
 * What the bundle depends on besides its own modules: this build's settings, and the
 * installed packages (the lock file stands for every file under node_modules).
 */
const ALWAYS_HASHED = ['examples/demo/buildDemoApp.ts', 'package-lock.json'];

const stampSchema = z.object({ files: z.array(z.string()), hash: z.string() });

/** The content hash of `files` (relative to the repository); a missing file hashes as missing. */
async function hashOf(files: readonly string[]): Promise<string> {
  const hash = createHash('sha256');
  for (const file of [...ALWAYS_HASHED, ...files]) {
    hash.update(`${file}\0`);
    try {
      hash.update(await readFile(join(REPOSITORY, file)));
    } catch {
      hash.update('\0missing\0');
    }
    hash.update('\0');
  }
  return hash.digest('hex');
}

/** Collects the repository files (not node_modules) the bundle is made of. */
function sourcesCollector(files: Set<string>): Plugin {
  return {
    name: 'demo-build-sources',
    generateBundle(_options, bundle) {
      for (const output of Object.values(bundle)) {
        if (output.type !== 'chunk') continue;
        for (const id of output.moduleIds) {
          const path = id.split('?')[0] ?? id;
          if (!path.startsWith(REPOSITORY) || path.includes('/node_modules/')) continue;
          files.add(relative(REPOSITORY, path));
        }
      }
    },
  };
}

/**
 * Bundles the page with Vite's JS API. No config file is read: the page imports the
 * repository's TypeScript sources directly and Vite compiles them. Writes `DEMO_BUILD_STAMP`
 * beside the page (see `isDemoAppBuilt`). Returns the time it took.
 */
export async function buildDemoApp(outDir: string = DEMO_DIST_DIRECTORY): Promise<number> {
  const started = performance.now();
  const sources = new Set<string>([relative(REPOSITORY, join(DEMO_APP_DIRECTORY, 'index.html'))]);
  // Loaded here, not on import: `npm start` on an unchanged page never needs Vite, which takes
  // a second or two to load under tsx.
  const { build } = await import('vite');
  await build({
    root: DEMO_APP_DIRECTORY,
    configFile: false,
    logLevel: 'warn',
    mode: 'production',
    oxc: { jsx: { runtime: 'automatic' } },
    plugins: [sourcesCollector(sources)],
    build: {
      outDir,
      emptyOutDir: true,
      chunkSizeWarningLimit: 4096,
      reportCompressedSize: false,
      rolldownOptions: {
        // antd marks its modules "use client", which means nothing in a client-only bundle.
        onwarn(warning, warn) {
          if (warning.code !== 'MODULE_LEVEL_DIRECTIVE') warn(warning);
        },
      },
    },
  });
  const files = [...sources].sort();
  await writeFile(join(outDir, DEMO_BUILD_STAMP), `${JSON.stringify({ files, hash: await hashOf(files) })}\n`);
  return performance.now() - started;
}

/**
 * Whether `outDir` holds a page built from the sources as they are now: its stamp's hash
 * (of each repository file the bundle was made of, the build settings and the lock file)
 * matches the files' current content. A stamp that is missing or unreadable means no.
 */
export async function isDemoAppBuilt(outDir: string = DEMO_DIST_DIRECTORY): Promise<boolean> {
  if (!existsSync(join(outDir, 'index.html'))) return false;
  let stamp: z.infer<typeof stampSchema>;
  try {
    stamp = stampSchema.parse(JSON.parse(await readFile(join(outDir, DEMO_BUILD_STAMP), 'utf8')));
  } catch {
    return false;
  }
  return stamp.hash === (await hashOf(stamp.files));
}
