import { assertEvent, assign, setup, stopChild } from 'xstate';
import type { AgentRunState } from './agentState';
import { runMachine } from './runMachine';

export interface StoreSpawnRunsEvent {
  type: 'store.spawn_runs';
  runs: ReadonlyArray<{ actorId: string; run: AgentRunState }>;
}

export interface StoreStopRunEvent {
  type: 'store.stop_run';
  actorId: string;
}

/**
 * The store's root actor: it owns one actor per running run. Finished runs are stopped
 * (their records stay in AgentState), so the actor system holds only live work.
 */
export const sessionMachine = setup({
  types: {
    events: {} as StoreSpawnRunsEvent | StoreStopRunEvent,
  },
  actors: { run: runMachine },
  actions: {
    spawnRuns: assign(({ event, spawn }) => {
      assertEvent(event, 'store.spawn_runs');
      for (const { actorId, run } of event.runs) spawn('run', { id: actorId, input: { run } });
      return {};
    }),
    stopRun: stopChild(({ event }) => {
      assertEvent(event, 'store.stop_run');
      return event.actorId;
    }),
  },
}).createMachine({
  id: 'agentSession',
  context: {},
  on: {
    'store.spawn_runs': { actions: 'spawnRuns' },
    'store.stop_run': { actions: 'stopRun' },
  },
});
