import { assertEvent, assign, setup } from 'xstate';
import { AGENT_ENTITY_KIND_TABLE } from '../protocol/agentEntityKinds';
import type { AgentEventOf } from '../protocol/eventSchemas';
import type { AgentMessageState } from './agentState';
import { cancelledBy, FINAL_STATES, failedBy, hasStatus, restoreFinalStates, terminated } from './entityLifecycle';
import { appendContent, type StoreTerminateEvent, withDefined, withMeta } from './entityUpdates';

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
  guards: { hasStatus },
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
    fail: assign({ entity: failedBy<AgentMessageState>('message.failed') }),
    cancel: assign({ entity: cancelledBy<AgentMessageState>('message.cancelled') }),
    terminate: assign({ entity: terminated<AgentMessageState>() }),
  },
}).createMachine({
  id: 'message',
  context: ({ input }) => ({ entity: input.entity }),
  initial: 'restoring',
  states: {
    restoring: {
      always: [...restoreFinalStates(AGENT_ENTITY_KIND_TABLE.message.finalStatuses), { target: 'streaming' }],
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
    ...FINAL_STATES,
  },
});
