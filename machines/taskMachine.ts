import { assertEvent, assign, setup } from 'xstate';
import type { AgentEventOf } from '../protocol/eventSchemas';
import type { AgentTaskState } from './agentState';
import {
  cancelEntity,
  failEntity,
  RUN_TERMINATED_REASON,
  type StoreTerminateEvent,
  withDefined,
  withMeta,
} from './entityUpdates';

export type TaskMachineEvent =
  | AgentEventOf<'task.updated' | 'task.completed' | 'task.failed' | 'task.cancelled'>
  | StoreTerminateEvent;

/** The lifecycle of one task: `running -> updated* -> completed | failed | cancelled`. */
export const taskMachine = setup({
  types: {
    context: {} as { entity: AgentTaskState },
    input: {} as { entity: AgentTaskState },
    events: {} as TaskMachineEvent,
  },
  guards: {
    hasStatus: ({ context }, params: { status: AgentTaskState['status'] }) => context.entity.status === params.status,
  },
  actions: {
    update: assign({
      entity: ({ context, event }) => {
        assertEvent(event, 'task.updated');
        const { title, description, progress, data } = event.payload;
        return withDefined(context.entity, { title, description, progress, data, updatedAt: event.timestamp });
      },
    }),
    complete: assign({
      entity: ({ context, event }) => {
        assertEvent(event, 'task.completed');
        return withMeta(
          withDefined(context.entity, {
            status: 'completed',
            result: event.payload.result,
            updatedAt: event.timestamp,
          }),
          event.meta,
        );
      },
    }),
    fail: assign({
      entity: ({ context, event }) => {
        assertEvent(event, 'task.failed');
        return failEntity(context.entity, event.payload.error, event.timestamp);
      },
    }),
    cancel: assign({
      entity: ({ context, event }) => {
        assertEvent(event, 'task.cancelled');
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
  id: 'task',
  context: ({ input }) => ({ entity: input.entity }),
  initial: 'restoring',
  states: {
    restoring: {
      always: [
        { guard: { type: 'hasStatus', params: { status: 'completed' } }, target: 'completed' },
        { guard: { type: 'hasStatus', params: { status: 'failed' } }, target: 'failed' },
        { guard: { type: 'hasStatus', params: { status: 'cancelled' } }, target: 'cancelled' },
        { target: 'running' },
      ],
    },
    running: {
      tags: ['active'],
      on: {
        'task.updated': { actions: 'update' },
        'task.completed': { target: 'completed', actions: 'complete' },
        'task.failed': { target: 'failed', actions: 'fail' },
        'task.cancelled': { target: 'cancelled', actions: 'cancel' },
        'store.terminate': { target: 'cancelled', actions: 'terminate' },
      },
    },
    completed: { type: 'final' },
    failed: { type: 'final' },
    cancelled: { type: 'final' },
  },
});
