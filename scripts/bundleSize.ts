// How big a browser entry is for an application: bundled by esbuild for the browser,
// minified, dependencies included, gzipped at level 9. The size check and the bench
// measure with this one function, so their figures agree. An entry of the build imports
// the chunks it shares with other entries; esbuild follows those imports, so they count.
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
