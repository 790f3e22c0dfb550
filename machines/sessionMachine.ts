import { assertEvent, assign, setup, stopChild } from 'xstate';
import type { AgentRunState } from './agentState';
import { runMachine } from './runMachine';

export interface SpawnRunsEvent {
  type: 'runs.spawn';
  runs: ReadonlyArray<{ actorId: string; run: AgentRunState }>;
}

export interface StopRunEvent {
  type: 'run.stop';
  actorId: string;
}

/**
 * The store's root actor: it owns one actor per running run. Finished runs are stopped
 * (their records stay in AgentState), so the actor system holds only live work.
 */
export const sessionMachine = setup({
  types: {
    events: {} as SpawnRunsEvent | StopRunEvent,
  },
  actors: { run: runMachine },
  actions: {
    spawnRuns: assign(({ event, spawn }) => {
      assertEvent(event, 'runs.spawn');
      for (const { actorId, run } of event.runs) spawn('run', { id: actorId, input: { run } });
      return {};
    }),
    stopRun: stopChild(({ event }) => {
      assertEvent(event, 'run.stop');
      return event.actorId;
    }),
  },
}).createMachine({
  id: 'agentSession',
  context: {},
  on: {
    'runs.spawn': { actions: 'spawnRuns' },
    'run.stop': { actions: 'stopRun' },
  },
});
