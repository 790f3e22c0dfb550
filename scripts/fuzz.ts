// The store fuzz with fresh seeds: `npm test` runs it with one fixed seed so that it is
// reproducible; this draws new ones, so each run explores sequences nobody tried yet.
// `npm run fuzz` (5 seeds at 9x the runs of `npm test`), or `npm run fuzz -- <seeds> <scale>`.
// A failure prints its seed and the command that replays the shrunk case.
import { spawnSync } from 'node:child_process';
import { randomInt } from 'node:crypto';

const seeds = Number(process.argv[2] ?? 5);
const scale = Number(process.argv[3] ?? 9);
if (!Number.isSafeInteger(seeds) || seeds < 1)
  throw new Error(`the number of seeds must be a positive integer, got ${process.argv[2]}`);
if (!(scale > 0)) throw new Error(`the scale must be a positive number, got ${process.argv[3]}`);

const failed: number[] = [];
for (let index = 0; index < seeds; index += 1) {
  // fast-check seeds are 32-bit integers.
  const seed = randomInt(1, 2 ** 31 - 1);
  console.log(`fuzz ${index + 1}/${seeds}: AGENT_MACHINES_FUZZ_SEED=${seed} AGENT_MACHINES_FUZZ_SCALE=${scale}`);
  const run = spawnSync('npx', ['vitest', 'run', 'tests/fuzz'], {
    stdio: 'inherit',
    env: { ...process.env, AGENT_MACHINES_FUZZ_SEED: String(seed), AGENT_MACHINES_FUZZ_SCALE: String(scale) },
  });
  if (run.status !== 0) failed.push(seed);
}
if (failed.length > 0) {
  console.error(`fuzz failed with seeds ${failed.join(', ')}`);
  process.exit(1);
}
console.log(`fuzz: ${seeds} fresh seeds passed`);
