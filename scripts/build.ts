// `npm run build`: dist/ for each entry of tsup.config.ts, its JavaScript (`.js` and `.cjs`, by
// tsup) and its declarations (`.d.ts` and `.d.cts`), built at the same time.
//
// The declarations: tsc writes one .d.ts per source file of the library (tsconfig.build.json)
// without type-checking it (`noCheck`: `npm test` and `npm run typecheck` check the whole
// project; an error in writing the declarations still fails the build), then rollup-plugin-dts
// bundles them per entry. Declarations that two entries share go to a chunk both import, as in
// the JavaScript, so a consumer importing `agent-machines` and `agent-machines/providers` sees
// one `AgentError` class, not two that do not assign to each other. The .d.ts files import their
// chunks as `.js`, the .d.cts files as `.cjs`.
import { spawn } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { isAbsolute, join, resolve } from 'node:path';

const repository = join(import.meta.dirname, '..');
const project = join(repository, 'tsconfig.build.json');
const require = createRequire(import.meta.url);

// tsc starts first, in its own process (it takes longest), with the terminal as its output.
const { compilerOptions } = JSON.parse(readFileSync(project, 'utf8')) as { compilerOptions: { outDir: string } };
const declarations = resolve(repository, compilerOptions.outDir);
rmSync(declarations, { recursive: true, force: true });
const tsc = spawn(process.execPath, [require.resolve('typescript/bin/tsc'), '-p', project], {
  cwd: repository,
  stdio: 'inherit',
});
const tscExit = new Promise<number>((done, fail) => {
  tsc.on('error', fail);
  tsc.on('exit', (code) => done(code ?? 1));
});

const { build } = await import('tsup');
const { default: tsupConfig, entry } = await import('../tsup.config');
try {
  await build({ ...tsupConfig, config: false });
} catch (error) {
  tsc.kill();
  throw error;
}
const tscStatus = await tscExit;
if (tscStatus !== 0) process.exit(tscStatus);

const { rollup } = await import('rollup');
const { dts } = await import('rollup-plugin-dts');
const bundle = await rollup({
  input: Object.fromEntries(
    Object.entries(entry).map(([name, source]) => [name, join(declarations, source.replace(/\.tsx?$/, '.d.ts'))]),
  ),
  // Dependencies (xstate, zod, react, ...) stay imports, resolved from the consumer's node_modules;
  // the rest is bundled, though tsc wrote it under node_modules/.cache.
  external: (id) => !id.startsWith('.') && !isAbsolute(id),
  plugins: [dts({ respectExternal: true })],
});
await Promise.all(
  ['.d.ts', '.d.cts'].map((extension) =>
    bundle.write({
      dir: join(repository, 'dist'),
      format: 'es',
      entryFileNames: `[name]${extension}`,
      // A chunk is named after its first module (`errors.d.ts`): `errors-<hash>.d.ts`.
      chunkFileNames: ({ name }) => `${name.replace(/\.d$/, '')}-[hash]${extension}`,
    }),
  ),
);
await bundle.close();
