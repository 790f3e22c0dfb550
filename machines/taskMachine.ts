import { assertEvent, assign, setup } from 'xstate';
import { AGENT_ENTITY_KIND_TABLE } from '../protocol/agentEntityKinds';
import type { AgentEventOf } from '../protocol/eventSchemas';
import type { AgentTaskState } from './agentState';
import {
  cancelledBy,
  completedWithResult,
  FINAL_STATES,
  failedBy,
  hasStatus,
  restoreFinalStates,
  terminated,
} from './entityLifecycle';
import { type StoreTerminateEvent, withDefined } from './entityUpdates';

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
  guards: { hasStatus },
  actions: {
    update: assign({
      entity: ({ context, event }) => {
        assertEvent(event, 'task.updated');
        const { title, description, progress, data } = event.payload;
        return withDefined(context.entity, { title, description, progress, data, updatedAt: event.timestamp });
      },
    }),
    complete: assign({ entity: completedWithResult<AgentTaskState>('task.completed') }),
    fail: assign({ entity: failedBy<AgentTaskState>('task.failed') }),
    cancel: assign({ entity: cancelledBy<AgentTaskState>('task.cancelled') }),
    terminate: assign({ entity: terminated<AgentTaskState>() }),
  },
}).createMachine({
  id: 'task',
  context: ({ input }) => ({ entity: input.entity }),
  initial: 'restoring',
  states: {
    restoring: {
      always: [...restoreFinalStates(AGENT_ENTITY_KIND_TABLE.task.finalStatuses), { target: 'running' }],
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
    ...FINAL_STATES,
  },
});
