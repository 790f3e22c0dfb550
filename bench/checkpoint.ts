// The checkpoint-shaped cost, run by bench/run.ts in a process of its own: a JSON round
// trip of a 10,000-entity AgentState, and that plus `reset` into a store. Prints medians
// of 5 runs after 2 warm-ups, as JSON.
import type { AgentState } from '../machines/agentState';
import { createAgentStore } from '../machines/createAgentStore';
import { storeWithEntities } from './workload';

function medianOf(run: () => void): number {
  run();
  run();
  const times: number[] = [];
  for (let index = 0; index < 5; index += 1) {
    const start = performance.now();
    run();
    times.push(performance.now() - start);
  }
  times.sort((a, b) => a - b);
  return times[2] as number;
}

const { store } = storeWithEntities(10_000, 0);
const state: AgentState = store.getSnapshot();
const target = createAgentStore();
(globalThis as { gc?: () => void }).gc?.();
const roundTripAndResetMs = medianOf(() => target.reset(JSON.parse(JSON.stringify(state)) as AgentState));
const roundTripMs = medianOf(() => JSON.parse(JSON.stringify(state)));
process.stdout.write(
  JSON.stringify({ roundTripAndResetMs, roundTripMs, messages: Object.keys(state.messages).length }),
);
store.destroy();
target.destroy();
