// How big a browser entry is for an application: bundled by esbuild for the browser,
// minified, dependencies included, gzipped at level 9. The size check and the bench
// measure with this one function, so their figures agree. An entry of the build imports
// the chunks it shares with other entries; esbuild follows those imports, so they count.
import { readFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import { build } from 'esbuild';

export interface BundleSize {
  minifiedKb: number;
  gzipKb: number;
  /** The files bundled, relative to the working directory (`dist/chunk-XXXX.js`, `node_modules/...`). */
  inputs: string[];
}

/** The size of a module whose source is `contents` (imports resolve from the working directory). */
export async function bundleSize(contents: string, external: readonly string[] = []): Promise<BundleSize> {
  const result = await build({
    stdin: { contents, resolveDir: process.cwd(), loader: 'js' },
    bundle: true,
    minify: true,
    format: 'esm',
    platform: 'browser',
    write: false,
    logLevel: 'silent',
    external: [...external],
    define: { 'process.env.NODE_ENV': '"production"' },
    metafile: true,
  });
  const code = result.outputFiles[0]?.contents ?? new Uint8Array();
  return {
    minifiedKb: code.length / 1024,
    gzipKb: gzipSync(code, { level: 9 }).length / 1024,
    inputs: Object.keys(result.metafile.inputs),
  };
}

/** A bundle whose size the README states: what an application that imports it pays. */
export interface StatedBundle {
  /** Stable key, for budgets. */
  id: 'core' | 'react' | 'app';
  /** How the README and bench/RESULTS.md name it (with the package's own name). */
  name: string;
  contents: string;
  external: readonly string[];
}

const packageName = (JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { name: string })
  .name;
const react = ['react', 'react-dom'];

/**
 * The sizes the README states, in its order, measured by the size check (`npm run size`,
 * which checks the README's block and bench/RESULTS.md's first rows against them) and by the
 * bench (the first rows of its size table): one list, so the three agree.
 */
export const statedBundles: readonly StatedBundle[] = [
  {
    id: 'core',
    name: `${packageName} (the core entry alone)`,
    contents: "export * from './dist/index.js';",
    external: [],
  },
  {
    id: 'react',
    name: `${packageName} + ${packageName}/react, React external`,
    contents: "export * from './dist/index.js'; export * from './dist/react.js';",
    external: react,
  },
  {
    id: 'app',
    name: `an app: useXChat + one provider (${packageName}/providers/openai), React external`,
    contents:
      "export { useXChat } from './dist/react.js'; export { createOpenAICompatibleAgentProvider } from './dist/providers-openai.js';",
    external: react,
  },
];
