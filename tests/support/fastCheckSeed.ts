// Every property test outside the fuzz suite draws from one seed, so `npm test` gives the
// same values on every run and a failure reproduces. `AGENT_MACHINES_PROPERTY_SEED` picks
// another seed (fast-check prints the one that failed).
import fc from 'fast-check';

const text = process.env.AGENT_MACHINES_PROPERTY_SEED;
const seed = text === undefined ? 20_261_201 : Number(text);
if (!Number.isSafeInteger(seed)) throw new Error(`AGENT_MACHINES_PROPERTY_SEED must be an integer, got "${text}"`);
fc.configureGlobal({ seed });
