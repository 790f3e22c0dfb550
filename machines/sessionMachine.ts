import { assertEvent, assign, enqueueActions, setup } from 'xstate';
import { type AgentRunInput, agentRunMachine } from './runMachine';

export interface StoreSpawnRunsEvent {
  type: 'store.spawn_runs';
  runs: ReadonlyArray<{ actorId: string; input: AgentRunInput }>;
}

/**
 * The store's root actor: it owns one actor per run that is running or waiting for input.
 * A run actor that reaches its final state is stopped (its record stays in AgentState), so
 * the actor system holds only live work.
 */
export const sessionMachine = setup({
  types: {
    events: {} as StoreSpawnRunsEvent | { type: `xstate.done.actor.${string}`; actorId: string },
  },
  actors: { run: agentRunMachine },
  actions: {
    spawnRuns: assign(({ event, spawn }) => {
      assertEvent(event, 'store.spawn_runs');
      for (const { actorId, input } of event.runs) spawn('run', { id: actorId, systemId: actorId, input });
      return {};
    }),
    stopRun: enqueueActions(({ event, enqueue }) => {
      enqueue.stopChild((event as { actorId: string }).actorId);
    }),
  },
}).createMachine({
  id: 'agentSession',
  context: {},
  on: {
    'store.spawn_runs': { actions: 'spawnRuns' },
    'xstate.done.actor.*': { actions: 'stopRun' },
  },
});
