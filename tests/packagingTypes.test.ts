// The shipped declarations as a strict consumer checks them: `dist/*.d.ts` and `*.d.cts` (built
// by `npm run build`, which `npm test` runs before vitest) in node_modules/<name> of a scratch
// project, every entry imported, `tsc` with `strict` and `skipLibCheck: false` (so the
// declarations themselves are checked), once with `moduleResolution: bundler` and once with
// `nodenext` (an ES module file and a CommonJS file). The dependencies' types resolve from this
// repository's node_modules through symlinks.
import { execFile } from 'node:child_process';
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const repository = resolve(import.meta.dirname, '..');
const packageJson = JSON.parse(readFileSync(join(repository, 'package.json'), 'utf8')) as {
  name: string;
  exports: Record<string, unknown>;
};
const name = packageJson.name;
const specifiers = Object.keys(packageJson.exports)
  .filter((subpath) => subpath !== './package.json')
  .map((subpath) => `${name}${subpath.slice(1)}`);
const tsc = join(repository, 'node_modules', 'typescript', 'bin', 'tsc');
let root = '';

beforeAll(() => {
  const dist = join(repository, 'dist');
  if (!existsSync(join(dist, 'index.d.ts'))) throw new Error('No dist/index.d.ts: run `npm run build` first');
  root = mkdtempSync(join(tmpdir(), `${name}-types-`));
  const packageDir = join(root, 'node_modules', name);
  mkdirSync(join(packageDir, 'dist'), { recursive: true });
  cpSync(join(repository, 'package.json'), join(packageDir, 'package.json'));
  for (const file of readdirSync(dist).filter((file) => /\.d\.c?ts$/.test(file)))
    cpSync(join(dist, file), join(packageDir, 'dist', file));
  // Every dependency the declarations may name (xstate, zod, react, redis, vitest, @types/*).
  for (const entry of readdirSync(join(repository, 'node_modules'))) {
    if (entry.startsWith('.') || entry === name) continue;
    if (entry.startsWith('@')) {
      mkdirSync(join(root, 'node_modules', entry), { recursive: true });
      for (const scoped of readdirSync(join(repository, 'node_modules', entry)))
        symlinkSync(join(repository, 'node_modules', entry, scoped), join(root, 'node_modules', entry, scoped), 'dir');
    } else symlinkSync(join(repository, 'node_modules', entry), join(root, 'node_modules', entry), 'dir');
  }
  writeFileSync(join(root, 'package.json'), JSON.stringify({ name: 'consumer', private: true, type: 'module' }));
  const imports = specifiers.map((specifier, index) => `import * as entry${index} from '${specifier}';`).join('\n');
  const all = `export const entries = [${specifiers.map((_, index) => `entry${index}`).join(', ')}];\n`;
  writeFileSync(join(root, 'bundler.ts'), `${imports}\n${all}`);
  writeFileSync(join(root, 'esm.mts'), `${imports}\n${all}`);
  writeFileSync(
    join(root, 'commonjs.cts'),
    `${specifiers.map((specifier, index) => `import entry${index} = require('${specifier}');`).join('\n')}\n${all}`,
  );
  const strict = { strict: true, skipLibCheck: false, noEmit: true, target: 'es2022', types: ['node'] };
  const tsconfig = (options: object, files: string[]) =>
    JSON.stringify({ compilerOptions: { ...strict, ...options }, files });
  writeFileSync(
    join(root, 'tsconfig.bundler.json'),
    tsconfig({ module: 'esnext', moduleResolution: 'bundler', lib: ['es2023', 'dom'] }, ['bundler.ts']),
  );
  writeFileSync(
    join(root, 'tsconfig.nodenext.json'),
    tsconfig({ module: 'nodenext', moduleResolution: 'nodenext', lib: ['es2023', 'dom'] }, ['esm.mts', 'commonjs.cts']),
  );
});

afterAll(() => {
  if (root !== '') rmSync(root, { recursive: true, force: true });
});

/** The errors `tsc -p <project>` reports, one a line ('' when it passes). */
async function typecheck(project: string): Promise<string> {
  try {
    await promisify(execFile)(process.execPath, [tsc, '-p', project, '--pretty', 'false'], { cwd: root });
    return '';
  } catch (error) {
    return String((error as { stdout?: string }).stdout ?? error).trim();
  }
}

describe('packaging: the shipped declarations under strict and skipLibCheck: false', () => {
  it('every entry typechecks, with moduleResolution bundler and nodenext (ES module and CommonJS)', async () => {
    expect(specifiers).toEqual(expect.arrayContaining([name, `${name}/runtime`, `${name}/react`, `${name}/server`]));
    const [bundler, nodenext] = await Promise.all([
      typecheck('tsconfig.bundler.json'),
      typecheck('tsconfig.nodenext.json'),
    ]);
    expect({ bundler, nodenext }).toEqual({ bundler: '', nodenext: '' });
  }, 180_000);
});
