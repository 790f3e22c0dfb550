// Writes api/<entry>.api.md from the built declarations (`npm run api`, after `npm run build`),
// or with `--check` writes nothing and exits 1 with a diff of each report that differs.
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { API_DIRECTORY, apiReportDifferences, apiReports, packageApiEntries } from './apiReport';

const repository = join(dirname(fileURLToPath(import.meta.url)), '..');
const check = process.argv.includes('--check');
const { name: packageName } = JSON.parse(readFileSync(join(repository, 'package.json'), 'utf8')) as { name: string };
const entries = packageApiEntries(repository);

const missing = entries.filter(({ typesFile }) => !existsSync(join(repository, typesFile)));
if (missing.length > 0) {
  console.error(
    `No built declarations for ${missing.map(({ subpath }) => subpath).join(', ')}: run \`npm run build\` first.`,
  );
  process.exit(1);
}

const reports = apiReports(repository, entries);
const differences = apiReportDifferences(repository, reports);

if (check) {
  if (differences.length > 0) {
    console.error(`The public surface of ${packageName} differs from the committed API reports:\n`);
    for (const { diff } of differences) console.error(diff);
    console.error('If the change is meant, run `npm run build && npm run api` and commit api/.');
    process.exit(1);
  }
  console.log(`API reports up to date (${entries.length} entries of ${packageName}).`);
} else {
  mkdirSync(join(repository, API_DIRECTORY), { recursive: true });
  for (const { path } of differences) {
    const text = reports.get(path);
    if (text === undefined) rmSync(join(repository, path));
    else writeFileSync(join(repository, path), text);
  }
  console.log(`Wrote ${differences.length} of ${entries.length} API reports of ${packageName} in ${API_DIRECTORY}/.`);
}
