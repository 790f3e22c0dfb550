// The sizes the README states and bench/RESULTS.md lists come from one measurement: the size
// check (`npm run size`) measures `statedBundles` and checks (or, with --write, writes) the
// README's marked block and RESULTS.md's first size rows. These check that text handling, and
// that the committed README and RESULTS agree with each other.
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { statedBundles } from '../scripts/bundleSize';
import {
  disagreements,
  README_END,
  README_START,
  readmeFigures,
  resultsFigures,
  withReadmeBlock,
  withResultsRows,
} from '../scripts/statedSizes';

const repository = resolve(import.meta.dirname, '..');
const sizes = [
  { name: 'core', gzipKb: 43.24 },
  { name: 'core + react', gzipKb: 61.46 },
  { name: 'an app', gzipKb: 63.95 },
];
const results = [
  '# Results',
  '',
  '## Bundle size (esbuild, minified, gzip, browser)',
  '',
  '| entry | KB |',
  '|---|---|',
  '| core | 40.0 |',
  '| core + react | 45.4 |',
  '| an app | 50.0 |',
  '| other | 16.5 |',
  '',
  '## Targets',
  '',
  '| other table | 1.0 |',
].join('\n');

describe('stated sizes: the README block and the RESULTS rows', () => {
  it('writes the README block between its markers, figures to 0.1 KB, and reads them back', () => {
    const readme = `# Title\n\nBefore.\n\n${README_START}\n| old | 45.4 |\n${README_END}\n\nAfter 45.4 KB.\n`;
    const written = withReadmeBlock(readme, sizes);
    expect(readmeFigures(written)).toEqual([43.2, 61.5, 64]);
    // As the formatter prints a table: every cell padded to its column's width.
    const heading = '| what the application imports (esbuild, minified, min+gzip, browser) | KB   |';
    expect(written).toContain(heading);
    expect(written).toContain(`| ${'-'.repeat(heading.indexOf(' | KB') - 2)} | ---- |`);
    expect(written).toContain(`| an app${' '.repeat(heading.indexOf(' | KB') - 2 - 'an app'.length)} | 64.0 |`);
    expect(written.startsWith('# Title\n\nBefore.\n\n')).toBe(true);
    expect(written.endsWith(`${README_END}\n\nAfter 45.4 KB.\n`)).toBe(true);
    expect(withReadmeBlock(written, sizes)).toBe(written);
    expect(() => readmeFigures('# No block')).toThrow(/needs one sizes block/);
  });

  it("rewrites only the first rows of RESULTS.md's size table", () => {
    expect(resultsFigures(results, 3)).toEqual([40, 45.4, 50]);
    const written = withResultsRows(results, sizes);
    expect(resultsFigures(written, 4)).toEqual([43.2, 61.5, 64, 16.5]);
    expect(written.split('\n').slice(-1)).toEqual(['| other table | 1.0 |']);
    expect(written.split('\n').length).toBe(results.split('\n').length);
  });

  it('fails figures that disagree beyond rounding, in words', () => {
    expect(disagreements('README.md', sizes, [43.2, 61.5, 64])).toEqual([]);
    expect(disagreements('README.md', sizes, [43.2, 45.4, 64])).toEqual([
      'README.md states 45.4 KB for core + react, measured 61.5 KB',
    ]);
    expect(disagreements('README.md', sizes, [43.4, 61.5, 64])).toEqual([
      'README.md states 43.4 KB for core, measured 43.2 KB',
    ]);
    expect(disagreements('bench/RESULTS.md', sizes, [43.2, 61.5])).toEqual([
      'bench/RESULTS.md states 2 sizes where the size check measures 3',
    ]);
  });

  it('the committed README states the same figures as the first rows of bench/RESULTS.md, one per stated bundle', () => {
    const readme = readFileSync(join(repository, 'README.md'), 'utf8');
    const benchResults = readFileSync(join(repository, 'bench', 'RESULTS.md'), 'utf8');
    const stated = readmeFigures(readme);
    expect(stated).toHaveLength(statedBundles.length);
    expect(resultsFigures(benchResults, statedBundles.length)).toEqual(stated);
    expect(statedBundles.map((bundle) => bundle.id)).toEqual(['core', 'react', 'app']);
  });
});
