import fc from 'fast-check';

/** The seed every fuzz property uses unless `AGENT_MACHINES_FUZZ_SEED` says otherwise. */
export const DEFAULT_FUZZ_SEED = 20_250_611;

function readSeed(): number {
  const text = process.env.AGENT_MACHINES_FUZZ_SEED;
  if (text === undefined || text.trim() === '') return DEFAULT_FUZZ_SEED;
  const seed = Number(text);
  if (!Number.isSafeInteger(seed)) throw new Error(`AGENT_MACHINES_FUZZ_SEED must be an integer, got "${text}"`);
  // fast-check seeds are 32-bit integers.
  return seed | 0;
}

/** The seed of this run: fixed by default, so `npm test` is reproducible. */
export const FUZZ_SEED = readSeed();

function readScale(): number {
  const text = process.env.AGENT_MACHINES_FUZZ_SCALE;
  if (text === undefined || text.trim() === '') return 1;
  const scale = Number(text);
  if (!(scale > 0)) throw new Error(`AGENT_MACHINES_FUZZ_SCALE must be a positive number, got "${text}"`);
  return scale;
}

/** Multiplies every property's number of runs (`AGENT_MACHINES_FUZZ_SCALE=10` for a long local fuzz). */
const SCALE = readScale();

/** A failing counterexample to replay directly (`AGENT_MACHINES_FUZZ_PATH`, printed on failure). */
const REPLAY_PATH = process.env.AGENT_MACHINES_FUZZ_PATH;

/**
 * Runs one property with the run's seed and throws a message that says how to reproduce
 * a failure: the seed, fast-check's counterexample path and the command line.
 */
export function assertFuzzProperty<Ts extends [unknown, ...unknown[]]>(
  name: string,
  property: fc.IProperty<Ts>,
  numRuns: number,
): void {
  const parameters: fc.Parameters<Ts> = { seed: FUZZ_SEED, numRuns: Math.max(1, Math.round(numRuns * SCALE)) };
  if (REPLAY_PATH !== undefined && REPLAY_PATH !== '') {
    parameters.path = REPLAY_PATH;
    parameters.endOnFailure = true;
  }
  const details = fc.check(property, parameters);
  if (!details.failed) return;
  const reproduce = [
    `Fuzz property "${name}" failed with seed ${details.seed}, counterexample path "${details.counterexamplePath}".`,
    `Reproduce: AGENT_MACHINES_FUZZ_SEED=${details.seed} npx vitest run tests/fuzz -t '${name}'`,
    `Replay only the shrunk counterexample: AGENT_MACHINES_FUZZ_SEED=${details.seed} AGENT_MACHINES_FUZZ_PATH='${details.counterexamplePath}' npx vitest run tests/fuzz -t '${name}'`,
  ].join('\n');
  throw new Error(`${reproduce}\n\n${fc.defaultReportMessage(details) ?? ''}`, { cause: details.errorInstance });
}
