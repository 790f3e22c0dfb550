import { assertEvent, assign, setup } from 'xstate';
import type { AgentEventOf } from '../protocol/eventSchemas';
import type { AgentReasoningState } from './agentState';
import {
  cancelEntity,
  failEntity,
  RUN_TERMINATED_REASON,
  type StoreTerminateEvent,
  withDefined,
  withMeta,
} from './entityUpdates';

export type ReasoningMachineEvent =
  | AgentEventOf<'reasoning.delta' | 'reasoning.completed' | 'reasoning.failed' | 'reasoning.cancelled'>
  | StoreTerminateEvent;

/** The lifecycle of one reasoning stream: `streaming -> completed | failed | cancelled`. */
export const reasoningMachine = setup({
  types: {
    context: {} as { entity: AgentReasoningState },
    input: {} as { entity: AgentReasoningState },
    events: {} as ReasoningMachineEvent,
  },
  guards: {
    hasStatus: ({ context }, params: { status: AgentReasoningState['status'] }) =>
      context.entity.status === params.status,
  },
  actions: {
    appendDelta: assign({
      entity: ({ context, event }) => {
        assertEvent(event, 'reasoning.delta');
        const entity = context.entity;
        return { ...entity, content: entity.content + event.payload.delta, updatedAt: event.timestamp };
      },
    }),
    complete: assign({
      entity: ({ context, event }) => {
        assertEvent(event, 'reasoning.completed');
        const { content, summary } = event.payload;
        return withMeta(
          withDefined(context.entity, { status: 'completed', content, summary, updatedAt: event.timestamp }),
          event.meta,
        );
      },
    }),
    fail: assign({
      entity: ({ context, event }) => {
        assertEvent(event, 'reasoning.failed');
        return failEntity(context.entity, event.payload.error, event.timestamp);
      },
    }),
    cancel: assign({
      entity: ({ context, event }) => {
        assertEvent(event, 'reasoning.cancelled');
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
  id: 'reasoning',
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
        'reasoning.delta': { actions: 'appendDelta' },
        'reasoning.completed': { target: 'completed', actions: 'complete' },
        'reasoning.failed': { target: 'failed', actions: 'fail' },
        'reasoning.cancelled': { target: 'cancelled', actions: 'cancel' },
        'store.terminate': { target: 'cancelled', actions: 'terminate' },
      },
    },
    completed: { type: 'final' },
    failed: { type: 'final' },
    cancelled: { type: 'final' },
  },
});
