import { assertEvent, assign, enqueueActions, setup } from 'xstate';
import { type AgentRunInput, agentRunMachine } from './runMachine';

/** Sent by the store when it is reset or rebuilt: every run actor is stopped, the session stays. */
export interface StoreResetEvent {
  type: 'store.reset';
}

export interface StoreSpawnRunsEvent {
  type: 'store.spawn_runs';
  runs: ReadonlyArray<{ actorId: string; input: AgentRunInput }>;
}

/**
 * The store's root actor (`systemId: 'session'`): it owns one actor per run that is running
 * or waiting for input (`run:<runId>`). A run actor that reaches its final state is stopped
 * (its record stays in AgentState), so the actor system holds only live work. A reset or a
 * restore stops every run actor and keeps this one, so an inspector keeps following it.
 */
export const sessionMachine = setup({
  types: {
    events: {} as StoreSpawnRunsEvent | StoreResetEvent | { type: `xstate.done.actor.${string}`; actorId: string },
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
    stopRuns: enqueueActions(({ enqueue, self }) => {
      for (const actorId of Object.keys(self.getSnapshot().children)) enqueue.stopChild(actorId);
    }),
  },
}).createMachine({
  id: 'agentSession',
  context: {},
  on: {
    'store.spawn_runs': { actions: 'spawnRuns' },
    'xstate.done.actor.*': { actions: 'stopRun' },
    'store.reset': { actions: 'stopRuns' },
  },
});
