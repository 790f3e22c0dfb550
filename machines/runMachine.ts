import { assertEvent, assign, setup, stopChild } from 'xstate';
import type { AgentEventOf } from '../protocol/eventSchemas';
import type { AgentEntityKind, AgentEntityStateMap, AgentRunState } from './agentState';
import { approvalMachine } from './approvalMachine';
import { artifactMachine } from './artifactMachine';
import type { CommandMachineEvent } from './commandEvents';
import type { StoreCommandSettledEvent } from './entityUpdates';
import { messageMachine } from './messageMachine';
import { reasoningMachine } from './reasoningMachine';
import { taskMachine } from './taskMachine';
import { toolCallMachine } from './toolCallMachine';

/** One entity actor to spawn: its actor id inside the run, and its record. */
export interface EntitySpawn<Kind extends AgentEntityKind = AgentEntityKind> {
  kind: Kind;
  actorId: string;
  entity: AgentEntityStateMap[Kind];
}

export interface StoreSpawnEntitiesEvent {
  type: 'store.spawn_entities';
  entities: readonly EntitySpawn[];
}

export interface StoreStopEntityEvent {
  type: 'store.stop_entity';
  actorId: string;
}

/** Sent by the store when the last entity a waiting run listed as pending has settled. */
export interface StoreInputSettledEvent {
  type: 'store.input_settled';
}

export type RunMachineEvent =
  | AgentEventOf<'run.completed' | 'run.failed' | 'run.cancelled'>
  | StoreSpawnEntitiesEvent
  | StoreStopEntityEvent
  | StoreInputSettledEvent
  | CommandMachineEvent<'run.cancel'>
  | StoreCommandSettledEvent;

/** The machine of each entity kind. */
export const entityMachines = {
  message: messageMachine,
  reasoning: reasoningMachine,
  toolCall: toolCallMachine,
  approval: approvalMachine,
  task: taskMachine,
  artifact: artifactMachine,
} as const;

/**
 * The lifecycle of one run: `running -> completed | failed | cancelled`. A run that completes
 * listing tool calls or approvals it leaves to the application (`pendingToolCallIds`,
 * `pendingApprovalIds`; AG-UI's `interrupt` outcome) is `waiting_for_input` until those
 * settle: its record says `completed`, and only those entities take events. The run actor owns
 * one child actor per live entity; entities are spawned in bulk (one `assign` for a batch)
 * and stopped as soon as they finish, so few actors are alive at any time.
 * While running it accepts the `run.cancel` command, one at a time.
 */
export const runMachine = setup({
  types: {
    context: {} as { run: AgentRunState },
    input: {} as { run: AgentRunState },
    events: {} as RunMachineEvent,
  },
  actors: entityMachines,
  guards: {
    hasStatus: ({ context }, params: { status: AgentRunState['status'] }) => context.run.status === params.status,
    listsPendingInput: ({ context }) =>
      context.run.status === 'completed' &&
      ((context.run.pendingToolCallIds?.length ?? 0) > 0 || (context.run.pendingApprovalIds?.length ?? 0) > 0),
    leavesInputPending: ({ event }) => {
      assertEvent(event, 'run.completed');
      const { pendingToolCallIds, pendingApprovalIds } = event.payload;
      return (pendingToolCallIds?.length ?? 0) > 0 || (pendingApprovalIds?.length ?? 0) > 0;
    },
  },
  actions: {
    spawnEntities: assign(({ event, spawn }) => {
      assertEvent(event, 'store.spawn_entities');
      for (const { kind, actorId, entity } of event.entities) {
        spawn(kind, { id: actorId, input: { entity } as never });
      }
      return {};
    }),
    stopEntity: stopChild(({ event }) => {
      assertEvent(event, 'store.stop_entity');
      return event.actorId;
    }),
    complete: assign({
      run: ({ context, event }) => {
        assertEvent(event, 'run.completed');
        const { output, usage, pendingToolCallIds, pendingApprovalIds } = event.payload;
        const run: AgentRunState = { ...context.run, status: 'completed', updatedAt: event.timestamp };
        run.endedAt = event.timestamp;
        if (output !== undefined) run.output = output;
        if (usage !== undefined) run.usage = usage;
        if (pendingToolCallIds !== undefined && pendingToolCallIds.length > 0) {
          run.pendingToolCallIds = pendingToolCallIds;
        }
        if (pendingApprovalIds !== undefined && pendingApprovalIds.length > 0) {
          run.pendingApprovalIds = pendingApprovalIds;
        }
        return run;
      },
    }),
    fail: assign({
      run: ({ context, event }) => {
        assertEvent(event, 'run.failed');
        const time = event.timestamp;
        return { ...context.run, status: 'failed', error: event.payload.error, updatedAt: time, endedAt: time };
      },
    }),
    cancel: assign({
      run: ({ context, event }) => {
        assertEvent(event, 'run.cancelled');
        const time = event.timestamp;
        const run: AgentRunState = { ...context.run, status: 'cancelled', updatedAt: time, endedAt: time };
        if (event.payload.reason !== undefined) run.reason = event.payload.reason;
        return run;
      },
    }),
  },
}).createMachine({
  id: 'run',
  context: ({ input }) => ({ run: input.run }),
  initial: 'restoring',
  states: {
    restoring: {
      always: [
        { guard: 'listsPendingInput', target: 'waiting_for_input' },
        { guard: { type: 'hasStatus', params: { status: 'completed' } }, target: 'completed' },
        { guard: { type: 'hasStatus', params: { status: 'failed' } }, target: 'failed' },
        { guard: { type: 'hasStatus', params: { status: 'cancelled' } }, target: 'cancelled' },
        { target: 'running' },
      ],
    },
    running: {
      tags: ['active'],
      initial: 'idle',
      states: {
        idle: { on: { 'run.cancel': { target: 'cancelling' } } },
        cancelling: { on: { 'store.command_settled': { target: 'idle' } } },
      },
      on: {
        'store.spawn_entities': { actions: 'spawnEntities' },
        'store.stop_entity': { actions: 'stopEntity' },
        'run.completed': [
          { guard: 'leavesInputPending', target: 'waiting_for_input', actions: 'complete' },
          { target: 'completed', actions: 'complete' },
        ],
        'run.failed': { target: 'failed', actions: 'fail' },
        'run.cancelled': { target: 'cancelled', actions: 'cancel' },
      },
    },
    waiting_for_input: {
      tags: ['waiting'],
      on: {
        'store.spawn_entities': { actions: 'spawnEntities' },
        'store.stop_entity': { actions: 'stopEntity' },
        'store.input_settled': { target: 'completed' },
      },
    },
    completed: { type: 'final' },
    failed: { type: 'final' },
    cancelled: { type: 'final' },
  },
});
