import { and, assertEvent, assign, setup } from 'xstate';
import { AGENT_ENTITY_KIND_TABLE } from '../protocol/agentEntityKinds';
import type { AgentEventOf } from '../protocol/eventSchemas';
import type { AgentApprovalState } from './agentState';
import type { CommandMachineEvent } from './commandEvents';
import { hasStatus, restoreFinalStates, terminated } from './entityLifecycle';
import { type StoreCommandSettledEvent, type StoreTerminateEvent, withDefined, withMeta } from './entityUpdates';

export type ApprovalMachineEvent =
  | AgentEventOf<'approval.resolved'>
  | StoreTerminateEvent
  | CommandMachineEvent<'approval.resolve'>
  | StoreCommandSettledEvent;

/**
 * The lifecycle of one approval: `waiting -> resolved` (approved, rejected, modified or
 * expired, as the runtime reports). While waiting it accepts the `approval.resolve` command
 * when the expected version matches and, for `modified`, the request did not say
 * `editable: false`; while one is submitting, a second is refused. Expiry is the runtime's
 * to decide (an `expired` resolution): `expiresAt` is for display
 * (`isApprovalExpired`), never a reason to refuse a decision.
 */
export const approvalMachine = setup({
  types: {
    context: {} as { entity: AgentApprovalState },
    input: {} as { entity: AgentApprovalState },
    events: {} as ApprovalMachineEvent,
  },
  guards: {
    hasStatus,
    versionMatches: ({ context, event }) => {
      assertEvent(event, 'approval.resolve');
      const expected = event.command.payload.expectedVersion;
      return expected === undefined || expected === context.entity.version;
    },
    editableWhenModified: ({ context, event }) => {
      assertEvent(event, 'approval.resolve');
      return event.command.payload.decision !== 'modified' || context.entity.editable !== false;
    },
  },
  actions: {
    resolve: assign({
      entity: ({ context, event }) => {
        assertEvent(event, 'approval.resolved');
        return withMeta(
          withDefined(context.entity, {
            status: 'resolved',
            decision: event.payload.decision,
            resolvedData: event.payload.data,
            updatedAt: event.timestamp,
          }),
          event.meta,
        );
      },
    }),
    terminate: assign({ entity: terminated<AgentApprovalState>() }),
  },
}).createMachine({
  id: 'approval',
  context: ({ input }) => ({ entity: input.entity }),
  initial: 'restoring',
  states: {
    restoring: {
      always: [...restoreFinalStates(AGENT_ENTITY_KIND_TABLE.approval.finalStatuses), { target: 'waiting' }],
    },
    waiting: {
      tags: ['active', 'settleable'],
      initial: 'idle',
      states: {
        idle: {
          on: {
            'approval.resolve': {
              guard: and(['versionMatches', 'editableWhenModified']),
              target: 'submitting',
            },
          },
        },
        submitting: { on: { 'store.command_settled': { target: 'idle' } } },
      },
      on: {
        'approval.resolved': { target: 'resolved', actions: 'resolve' },
        'store.terminate': { target: 'cancelled', actions: 'terminate' },
      },
    },
    resolved: { type: 'final' },
    cancelled: { type: 'final' },
  },
});
