import { assertEvent, assign, setup } from 'xstate';
import type { AgentEventOf } from '../protocol/eventSchemas';
import type { AgentMessageState } from './agentState';
import {
  appendContent,
  cancelEntity,
  failEntity,
  RUN_TERMINATED_REASON,
  type StoreTerminateEvent,
  withDefined,
  withMeta,
} from './entityUpdates';

export type MessageMachineEvent =
  | AgentEventOf<'message.delta' | 'message.completed' | 'message.failed' | 'message.cancelled'>
  | StoreTerminateEvent;

/** The lifecycle of one message: `streaming -> completed | failed | cancelled`. */
export const messageMachine = setup({
  types: {
    context: {} as { entity: AgentMessageState },
    input: {} as { entity: AgentMessageState },
    events: {} as MessageMachineEvent,
  },
  guards: {
    hasStatus: ({ context }, params: { status: AgentMessageState['status'] }) =>
      context.entity.status === params.status,
  },
  actions: {
    appendDelta: assign({
      entity: ({ context, event }) => {
        assertEvent(event, 'message.delta');
        const entity = context.entity;
        return { ...entity, content: appendContent(entity.content, event.payload.delta), updatedAt: event.timestamp };
      },
    }),
    complete: assign({
      entity: ({ context, event }) => {
        assertEvent(event, 'message.completed');
        return withMeta(
          withDefined(context.entity, {
            status: 'completed',
            content: event.payload.content,
            updatedAt: event.timestamp,
          }),
          event.meta,
        );
      },
    }),
    fail: assign({
      entity: ({ context, event }) => {
        assertEvent(event, 'message.failed');
        return failEntity(context.entity, event.payload.error, event.timestamp);
      },
    }),
    cancel: assign({
      entity: ({ context, event }) => {
        assertEvent(event, 'message.cancelled');
        return cancelEntity(context.entity, event.payload.reason, event.timestamp);
      },
    }),
    terminate: assign({
      entity: ({ context, event }) => {
        assertEvent(event, 'store.terminate');
        return cancelEntity(context.entity, RUN_TERMINATED_REASON, event.timestamp);
      },
    }),
  },
}).createMachine({
  id: 'message',
  context: ({ input }) => ({ entity: input.entity }),
  initial: 'restoring',
  states: {
    restoring: {
      always: [
        { guard: { type: 'hasStatus', params: { status: 'completed' } }, target: 'completed' },
        { guard: { type: 'hasStatus', params: { status: 'failed' } }, target: 'failed' },
        { guard: { type: 'hasStatus', params: { status: 'cancelled' } }, target: 'cancelled' },
        { target: 'streaming' },
      ],
    },
    streaming: {
      tags: ['active', 'acceptsDelta'],
      on: {
        'message.delta': { actions: 'appendDelta' },
        'message.completed': { target: 'completed', actions: 'complete' },
        'message.failed': { target: 'failed', actions: 'fail' },
        'message.cancelled': { target: 'cancelled', actions: 'cancel' },
        'store.terminate': { target: 'cancelled', actions: 'terminate' },
      },
    },
    completed: { type: 'final' },
    failed: { type: 'final' },
    cancelled: { type: 'final' },
  },
});
