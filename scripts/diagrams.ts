// Writes docs/machines (`npm run diagrams`), or with `--check` exits 1 listing the files
// that differ from what the machines generate, without writing.
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DIAGRAMS_DIRECTORY, machineDiagramFiles } from './machineDiagrams';

const repository = join(dirname(fileURLToPath(import.meta.url)), '..');
const check = process.argv.includes('--check');
const files = machineDiagramFiles();
const directory = join(repository, DIAGRAMS_DIRECTORY);

// The directory holds generated files only: a diagram of a machine that is gone is stale.
const stale = existsSync(directory)
  ? readdirSync(directory)
      .filter((name) => name.endsWith('.md'))
      .map((name) => `${DIAGRAMS_DIRECTORY}/${name}`)
      .filter((path) => !files.has(path))
  : [];
const differing = [...files].filter(([path, text]) => {
  const file = join(repository, path);
  return !existsSync(file) || readFileSync(file, 'utf8') !== text;
});

if (check) {
  if (differing.length > 0 || stale.length > 0) {
    console.error('Machine diagrams out of date (run `npm run diagrams`):');
    for (const [path] of differing) console.error(`  ${path}`);
    for (const path of stale) console.error(`  ${path} (no machine generates it)`);
    process.exit(1);
  }
  console.log(`Machine diagrams up to date (${files.size} files).`);
} else {
  mkdirSync(directory, { recursive: true });
  for (const [path, text] of differing) writeFileSync(join(repository, path), text);
  for (const path of stale) rmSync(join(repository, path));
  console.log(`Wrote ${differing.length} and removed ${stale.length} of ${files.size} files in ${DIAGRAMS_DIRECTORY}.`);
}
