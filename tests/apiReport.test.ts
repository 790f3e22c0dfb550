import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { apiReportDifferences, apiReportFileName, apiReports, lineDiff, packageApiEntries } from '../scripts/apiReport';

const repository = join(dirname(fileURLToPath(import.meta.url)), '..');

describe('api/', () => {
  it('holds the API report of every entry, as the built declarations are', () => {
    const entries = packageApiEntries(repository);
    const missing = entries.filter(({ typesFile }) => !existsSync(join(repository, typesFile)));
    expect(
      missing.map(({ typesFile }) => typesFile),
      'dist is missing or incomplete: run `npm run build` (npm test builds before vitest)',
    ).toEqual([]);
    const differences = apiReportDifferences(repository, apiReports(repository, entries));
    expect(
      differences.map(({ path }) => path),
      `The public surface differs from the committed API reports. If the change is meant, run \`npm run build && npm run api\` and commit api/.\n\n${differences.map(({ diff }) => diff).join('\n')}`,
    ).toEqual([]);
  });
});

describe('apiReports', () => {
  const directory = mkdtempSync(join(tmpdir(), 'api-report-'));
  afterAll(() => rmSync(directory, { recursive: true, force: true }));
  const write = (name: string, text: string) => writeFileSync(join(directory, name), text);
  write(
    'chunk-AbC123.d.ts',
    [
      'interface Base { readonly id: string }',
      '/** A thing. */',
      'interface Thing<T extends string = "a"> extends Base {',
      '  kind: T;',
      '  size?: number;',
      '  resize(size: number): Thing<T>;',
      // biome-ignore lint/suspicious/noTemplateCurlyInString: a template literal type in declaration text
      '  [key: `x-${string}`]: unknown;',
      '}',
      'type Status = "running" | "idle" | "done";',
      'declare class Failure extends Error {',
      '  readonly code: Status;',
      '  private secret;',
      '  constructor(code: Status, options?: { cause?: unknown });',
      '  static is(value: unknown): value is Failure;',
      '}',
      'export { Base as B, Thing as T, Status as S, Failure as F };',
    ].join('\n'),
  );
  write(
    'entry.d.ts',
    [
      'import { T as Thing, S as Status, F as Failure } from "./chunk-AbC123.js";',
      'export { B as Base } from "./chunk-AbC123.js";',
      'declare function make<T extends string>(kind: T): Thing<T>;',
      'declare function make(): Thing;',
      'declare const statuses: readonly Status[];',
      'declare function fail(): Failure;',
      'declare enum Level { Low = 1, High = 2 }',
      'export { Failure, Level, Status, type Thing, fail, make, statuses };',
    ].join('\n'),
  );
  write('other.d.ts', 'export declare const answer: 42;\n');

  const reports = apiReports(directory, [
    { subpath: '.', typesFile: 'entry.d.ts' },
    { subpath: './other', typesFile: 'other.d.ts' },
  ]);
  const report = reports.get('api/index.api.md') ?? '';

  it('lists every exported name, sorted, by kind with its signature as the checker prints it', () => {
    expect([...reports.keys()]).toEqual(['api/index.api.md', 'api/other.api.md']);
    expect(report).toContain('# API report: `.`');
    expect(report).toContain(
      [
        '```ts',
        'interface Base {',
        '  readonly id: string;',
        '}',
        '',
        'class Failure extends Error {',
        '  readonly code: Status;',
        '  constructor(code: Status, options?: {',
        '    cause?: unknown;',
        '  });',
        '  static is(value: unknown): value is Failure;',
        '}',
        '',
        'enum Level {',
        '  Low = 1,',
        '  High = 2,',
        '}',
        '',
        'type Status = "done" | "idle" | "running";',
        '',
        'interface Thing<T extends string = "a"> extends Base {',
        '  kind: T;',
        '  size?: number;',
        '  resize(size: number): Thing<T>;',
        // biome-ignore lint/suspicious/noTemplateCurlyInString: a template literal type in declaration text
        '  [key: `x-${string}`]: unknown;',
        '}',
        '',
        'function fail(): Failure;',
        '',
        'function make<T extends string>(kind: T): Thing<T>;',
        'function make(): Thing<"a">;',
        '',
        'const statuses: readonly Status[];',
        '```',
      ].join('\n'),
    );
    expect(reports.get('api/other.api.md')).toContain('const answer: 42;');
  });

  it('names no chunk file, no private member and no absolute path', () => {
    expect(report).not.toContain('AbC123');
    expect(report).not.toContain('secret');
    expect(report).not.toContain(directory);
  });

  it('prints the same report from a fresh program', () => {
    expect(apiReports(directory, [{ subpath: '.', typesFile: 'entry.d.ts' }]).get('api/index.api.md')).toBe(report);
  });
});

describe('apiReportFileName', () => {
  it('names a report after the subpath, without the package name', () => {
    expect(['.', './react', './providers/agui', './server/redis'].map(apiReportFileName)).toEqual([
      'index.api.md',
      'react.api.md',
      'providers-agui.api.md',
      'server-redis.api.md',
    ]);
  });
});

describe('lineDiff', () => {
  it('marks removed and added lines around unchanged context', () => {
    expect(lineDiff('a\nb\nc\nd\n', 'a\nb\nx\nd\n', 'api/index.api.md')).toBe(
      ['--- api/index.api.md (committed)', '+++ api/index.api.md (built)', '  a', '  b', '- c', '+ x', '  d', ''].join(
        '\n',
      ),
    );
  });
});
