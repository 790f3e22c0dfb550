// Checkpoint cost of a 10,000-entity session, run by bench/run.ts in a process of its own.
// First the checkpoint-shaped cost: a JSON round trip of the AgentState, and that plus
// `reset` into a store (medians of 5 runs after 2 warm-ups). Then the checkpoint API end to
// end, save and restore: the coordinator saves (build, its checks, `storage.save`), then
// `loadAgentCheckpoint` (parse, validate) and `reset` into an empty store, over memory
// storage and over Web Storage (an in-memory Storage-like object), the two taking turns.
// Prints the figures as JSON.
import { AGENT_CHECKPOINT_SCHEMA_VERSION, type AgentCheckpointStorage } from '../checkpoint/AgentCheckpoint';
import { createAgentCheckpointCoordinator } from '../checkpoint/createAgentCheckpointCoordinator';
import { createMemoryAgentCheckpointStorage } from '../checkpoint/createMemoryAgentCheckpointStorage';
import {
  type AgentCheckpointWebStorage,
  createWebStorageAgentCheckpointStorage,
} from '../checkpoint/createWebStorageAgentCheckpointStorage';
import { loadAgentCheckpoint } from '../checkpoint/loadAgentCheckpoint';
import type { AgentState } from '../machines/agentState';
import { type AgentStore, createAgentStore } from '../machines/createAgentStore';
import { AGENT_COMMAND_PROTOCOL_VERSION, AGENT_EVENT_PROTOCOL_VERSION } from '../protocol/constants';
import { storeWithEntities } from './workload';

const gc = (globalThis as { gc?: () => void }).gc ?? (() => {});

function median(values: readonly number[]): number {
  return [...values].sort((a, b) => a - b)[Math.floor((values.length - 1) / 2)] as number;
}

function medianOf(run: () => void): number {
  run();
  run();
  const times: number[] = [];
  for (let index = 0; index < 5; index += 1) {
    const start = performance.now();
    run();
    times.push(performance.now() - start);
  }
  return median(times);
}

const { store } = storeWithEntities(10_000, 0);
const state: AgentState = store.getSnapshot();
const target = createAgentStore();
gc();
const roundTripAndResetMs = medianOf(() => target.reset(JSON.parse(JSON.stringify(state)) as AgentState));
const roundTripMs = medianOf(() => JSON.parse(JSON.stringify(state)));
const messages = Object.keys(state.messages).length;
store.destroy();
target.destroy();

/** A Storage-like object in memory: `setItem` keeps the text, as `localStorage` does. */
function memoryWebStorage(): AgentCheckpointWebStorage {
  const items = new Map<string, string>();
  return {
    getItem: (key) => items.get(key) ?? null,
    setItem: (key, value) => void items.set(key, value),
    removeItem: (key) => void items.delete(key),
  };
}

interface RestoreTimes {
  saveMs: number;
  loadMs: number;
  resetMs: number;
  totalMs: number;
}

const RESTORE_WARMUPS = 2;
const RESTORE_RUNS = 9;

/**
 * One save and restore of a session with 10,000 entities and its run still streaming (its
 * input and cursor are saved). Each round has a session and an empty store of its own, made
 * before the clock starts: a checkpoint measured once has its sizes remembered
 * (`measureJsonSize`), which the first save of a session does not have.
 */
async function saveAndRestore(storage: AgentCheckpointStorage): Promise<RestoreTimes> {
  const sessionId = 's';
  const { store: source } = storeWithEntities(10_000, 0);
  source.getSnapshot();
  const restored: AgentStore = createAgentStore();
  const coordinator = createAgentCheckpointCoordinator({
    storage,
    sessionId,
    // As the runtime's `buildConversationCheckpoint` builds it for one running run.
    build: () => ({
      schemaVersion: AGENT_CHECKPOINT_SCHEMA_VERSION,
      eventProtocolVersion: AGENT_EVENT_PROTOCOL_VERSION,
      commandProtocolVersion: AGENT_COMMAND_PROTOCOL_VERSION,
      sessionId,
      state: source.getSnapshot(),
      inputByRun: { r: { messages: [{ role: 'user', content: 'Summarize the thread.' }] } },
      cursorByRun: { r: 'cursor-1' },
      pendingCommands: [],
      savedAt: Date.now(),
    }),
    visibility: null,
  });
  const start = performance.now();
  coordinator.schedule('terminal');
  await coordinator.flush();
  const saved = performance.now();
  const checkpoint = await loadAgentCheckpoint(storage, sessionId);
  const loaded = performance.now();
  if (checkpoint === undefined) throw new Error('the checkpoint was not saved');
  restored.reset(checkpoint.state);
  // What restoring reads at once (restoreConversation does): the store's AgentState.
  const state = restored.getSnapshot();
  const end = performance.now();
  const error = coordinator.lastError;
  coordinator.stop();
  if (error !== undefined) throw error;
  if (Object.keys(state.messages).length !== messages) throw new Error('the restored state lost messages');
  source.destroy();
  restored.destroy();
  return { saveMs: saved - start, loadMs: loaded - saved, resetMs: end - loaded, totalMs: end - start };
}

const storages = {
  memory: createMemoryAgentCheckpointStorage,
  webStorage: () => createWebStorageAgentCheckpointStorage(memoryWebStorage()),
};
const samples = { memory: [] as RestoreTimes[], webStorage: [] as RestoreTimes[] };
gc();
for (let round = 0; round < RESTORE_WARMUPS + RESTORE_RUNS; round += 1) {
  for (const name of ['memory', 'webStorage'] as const) {
    const times = await saveAndRestore(storages[name]());
    if (round >= RESTORE_WARMUPS) samples[name].push(times);
  }
}
const mediansOf = (times: RestoreTimes[]): RestoreTimes => ({
  saveMs: median(times.map((time) => time.saveMs)),
  loadMs: median(times.map((time) => time.loadMs)),
  resetMs: median(times.map((time) => time.resetMs)),
  totalMs: median(times.map((time) => time.totalMs)),
});

process.stdout.write(
  JSON.stringify({
    roundTripAndResetMs,
    roundTripMs,
    messages,
    restoreRuns: RESTORE_RUNS,
    restore: { memory: mediansOf(samples.memory), webStorage: mediansOf(samples.webStorage) },
  }),
);
