import { fileURLToPath } from 'node:url';
import { build } from 'vite';

/** The page's sources: `app/index.html` and the React code it loads. */
export const DEMO_APP_DIRECTORY = fileURLToPath(new URL('./app/', import.meta.url));
/** Where the built page goes by default (git-ignored). */
export const DEMO_DIST_DIRECTORY = fileURLToPath(new URL('./dist/', import.meta.url));

/**
 * Bundles the page with Vite's JS API. No config file is read: the page imports the
 * repository's TypeScript sources directly and Vite compiles them. Returns the time it took.
 */
export async function buildDemoApp(outDir: string = DEMO_DIST_DIRECTORY): Promise<number> {
  const started = performance.now();
  await build({
    root: DEMO_APP_DIRECTORY,
    configFile: false,
    logLevel: 'warn',
    mode: 'production',
    oxc: { jsx: { runtime: 'automatic' } },
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
  return performance.now() - started;
}
