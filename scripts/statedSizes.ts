// The sizes the README states and bench/RESULTS.md lists, as text: the README's marked block
// (written whole) and the first rows of RESULTS.md's size table (their figures). The size
// check measures `statedBundles` and writes (`--write`) or checks both with these.

/** A stated bundle's name and its size in KB (min+gzip). */
export interface StatedSize {
  name: string;
  gzipKb: number;
}

export const README_START =
  '<!-- sizes: written by `npm run size -- --write`, checked by `npm run size`; do not edit by hand -->';
export const README_END = '<!-- /sizes -->';
const RESULTS_HEADING = '## Bundle size (esbuild, minified, gzip, browser)';

/** Figures differ beyond rounding when they are further apart than this (one 0.1 KB step). */
export const TOLERANCE_KB = 0.1;

/** The README's block for these sizes, markers included. */
export function readmeBlock(sizes: readonly StatedSize[]): string {
  const header = ['what the application imports (esbuild, minified, min+gzip, browser)', 'KB'];
  const rows = sizes.map((size) => [size.name, size.gzipKb.toFixed(1)]);
  // Columns padded as the formatter (biome) prints a Markdown table, so `npm run lint` agrees.
  const widths = header.map((_, column) => Math.max(3, ...[header, ...rows].map((row) => row[column]!.length)));
  const line = (cells: readonly string[]) =>
    `| ${cells.map((cell, column) => cell.padEnd(widths[column]!)).join(' | ')} |`;
  return [
    README_START,
    line(header),
    line(widths.map((width) => '-'.repeat(width))),
    ...rows.map(line),
    README_END,
  ].join('\n');
}

/** The block's place in the README, or an error when it has none (or more than one). */
function readmeBlockRange(readme: string): { start: number; end: number } {
  const start = readme.indexOf(README_START);
  const end = readme.indexOf(README_END);
  if (start < 0 || end < start || readme.indexOf(README_START, start + 1) >= 0)
    throw new Error(`README.md needs one sizes block (${README_START} ... ${README_END})`);
  return { start, end: end + README_END.length };
}

/** The figures of the README's block, in its order. */
export function readmeFigures(readme: string): number[] {
  const { start, end } = readmeBlockRange(readme);
  return figuresOf(readme.slice(start, end).split('\n'));
}

/** The README with its block rewritten for these sizes. */
export function withReadmeBlock(readme: string, sizes: readonly StatedSize[]): string {
  const { start, end } = readmeBlockRange(readme);
  return readme.slice(0, start) + readmeBlock(sizes) + readme.slice(end);
}

/** The data rows of RESULTS.md's size table: their line numbers. */
function resultsRows(results: string): number[] {
  const lines = results.split('\n');
  const heading = lines.indexOf(RESULTS_HEADING);
  if (heading < 0) throw new Error(`bench/RESULTS.md has no "${RESULTS_HEADING}" section`);
  const rows: number[] = [];
  for (let index = heading + 1; index < lines.length; index += 1) {
    const line = lines[index] as string;
    if (line.startsWith('#')) break;
    if (/^\| .* \| [\d.]+ \|$/.test(line)) rows.push(index);
  }
  return rows;
}

/** The figures of the first `count` rows of RESULTS.md's size table (the stated bundles). */
export function resultsFigures(results: string, count: number): number[] {
  const lines = results.split('\n');
  return figuresOf(
    resultsRows(results)
      .slice(0, count)
      .map((row) => lines[row] as string),
  );
}

/** RESULTS.md with the first rows of its size table rewritten for these sizes. */
export function withResultsRows(results: string, sizes: readonly StatedSize[]): string {
  const lines = results.split('\n');
  const rows = resultsRows(results);
  if (rows.length < sizes.length) throw new Error('bench/RESULTS.md: its size table has too few rows');
  sizes.forEach((size, index) => {
    lines[rows[index] as number] = `| ${size.name} | ${size.gzipKb.toFixed(1)} |`;
  });
  return lines.join('\n');
}

/** What disagrees beyond rounding between the measured sizes and stated figures, in words. */
export function disagreements(where: string, measured: readonly StatedSize[], stated: readonly number[]): string[] {
  if (stated.length !== measured.length)
    return [`${where} states ${stated.length} sizes where the size check measures ${measured.length}`];
  return measured.flatMap((size, index) => {
    const figure = stated[index] as number;
    return Math.abs(figure - size.gzipKb) > TOLERANCE_KB + 1e-9
      ? [`${where} states ${figure} KB for ${size.name}, measured ${size.gzipKb.toFixed(1)} KB`]
      : [];
  });
}

function figuresOf(lines: readonly string[]): number[] {
  return lines.flatMap((line) => {
    const match = /^\| .* \| ([\d.]+) *\|$/.exec(line);
    return match ? [Number(match[1])] : [];
  });
}
