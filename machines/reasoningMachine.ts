import { assertEvent, assign, setup } from 'xstate';
import { AGENT_ENTITY_KIND_TABLE } from '../protocol/agentEntityKinds';
import type { AgentEventOf } from '../protocol/eventSchemas';
import type { AgentReasoningState } from './agentState';
import { cancelledBy, FINAL_STATES, failedBy, hasStatus, restoreFinalStates, terminated } from './entityLifecycle';
import { type StoreTerminateEvent, withDefined, withMeta } from './entityUpdates';

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
  guards: { hasStatus },
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
    fail: assign({ entity: failedBy<AgentReasoningState>('reasoning.failed') }),
    cancel: assign({ entity: cancelledBy<AgentReasoningState>('reasoning.cancelled') }),
    terminate: assign({ entity: terminated<AgentReasoningState>() }),
  },
}).createMachine({
  id: 'reasoning',
  context: ({ input }) => ({ entity: input.entity }),
  initial: 'restoring',
  states: {
    restoring: {
      always: [...restoreFinalStates(AGENT_ENTITY_KIND_TABLE.reasoning.finalStatuses), { target: 'streaming' }],
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
    ...FINAL_STATES,
  },
});
