import { assertEvent, assign, setup } from 'xstate';
import { AGENT_ENTITY_KIND_TABLE } from '../protocol/agentEntityKinds';
import type { AgentEventOf } from '../protocol/eventSchemas';
import type { AgentToolCallState } from './agentState';
import type { CommandMachineEvent } from './commandEvents';
import {
  cancelledBy,
  completedWithResult,
  FINAL_STATES,
  failedBy,
  hasStatus,
  restoreFinalStates,
  terminated,
} from './entityLifecycle';
import type { StoreCommandSettledEvent, StoreTerminateEvent } from './entityUpdates';

/** Sent by the store when a new tool call names this one as `retryOf`: it takes no other retry. */
export interface StoreRetriedEvent {
  type: 'store.retried';
  toolCallId: string;
  timestamp: number;
}

/** Sent by the store when a run ends listing this tool in `pendingToolCallIds`. */
export interface StoreSettlePendingEvent {
  type: 'store.settle_pending';
  timestamp: number;
}

export type ToolCallMachineEvent =
  | AgentEventOf<
      | 'tool.arguments_delta'
      | 'tool.arguments_completed'
      | 'tool.running'
      | 'tool.completed'
      | 'tool.failed'
      | 'tool.cancelled'
    >
  | StoreTerminateEvent
  | StoreSettlePendingEvent
  | StoreRetriedEvent
  | CommandMachineEvent<'tool.retry' | 'tool.submit_result'>
  | StoreCommandSettledEvent;

/**
 * Where a tool call waits for the application's result: it accepts one `tool.submit_result`
 * at a time; the result itself arrives as `tool.completed` or `tool.failed`. `tool.running`
 * moves a call awaiting execution to running and keeps a submission in flight.
 */
function awaitingResult(running: { target: string; actions: 'markRunning' } | undefined, submitting: string) {
  const onRunning = (target: string) =>
    running === undefined ? {} : { 'tool.running': { target, actions: running.actions } };
  return {
    initial: 'idle',
    states: {
      idle: {
        on: { 'tool.submit_result': { target: 'submitting' }, ...onRunning(`${running?.target}.idle`) },
      },
      submitting: {
        on: { 'store.command_settled': { target: 'idle' }, ...onRunning(submitting) },
      },
    },
  } as const;
}

function completeArguments(entity: AgentToolCallState, text: string, timestamp: number): AgentToolCallState {
  const next: AgentToolCallState = { ...entity, status: 'awaiting_execution', arguments: text, updatedAt: timestamp };
  if (text.trim() === '') return next;
  try {
    next.parsedArguments = JSON.parse(text);
  } catch (error) {
    next.argumentsError = error instanceof Error ? error.message : String(error);
  }
  return next;
}

/**
 * The lifecycle of one tool call: `open` (`streaming_arguments -> awaiting_execution ->
 * running`) `-> completed | failed | cancelled`,
 * where `tool.running`, `tool.completed` and `tool.failed` may also follow the argument
 * stream directly (the seed's lifecycle) and complete the arguments as they do.
 * A failure marked `retryable` accepts the `tool.retry` command (the retry itself arrives
 * as a new tool call with `retryOf`, after which this one records `retriedBy` and takes no
 * other retry); a call awaiting execution or running accepts the
 * application's `tool.submit_result`; while a command is submitting, a second is refused.
 */
export const toolCallMachine = setup({
  types: {
    context: {} as { entity: AgentToolCallState },
    input: {} as { entity: AgentToolCallState },
    events: {} as ToolCallMachineEvent,
  },
  guards: {
    hasStatus,
    wasRetryableFailure: ({ context }) =>
      context.entity.status === 'failed' &&
      context.entity.error?.retryable === true &&
      context.entity.retriedBy === undefined,
    isRetryableFailure: ({ event }) => {
      assertEvent(event, 'tool.failed');
      return event.payload.error.retryable === true;
    },
  },
  actions: {
    appendArguments: assign({
      entity: ({ context, event }) => {
        assertEvent(event, 'tool.arguments_delta');
        const entity = context.entity;
        return { ...entity, arguments: entity.arguments + event.payload.delta, updatedAt: event.timestamp };
      },
    }),
    completeArguments: assign({
      entity: ({ context, event }) => {
        assertEvent(event, [
          'tool.arguments_completed',
          'store.settle_pending',
          'tool.running',
          'tool.completed',
          'tool.failed',
        ]);
        const text = event.type === 'tool.arguments_completed' ? event.payload.arguments : undefined;
        return completeArguments(context.entity, text ?? context.entity.arguments, event.timestamp);
      },
    }),
    markRunning: assign({
      entity: ({ context, event }) => {
        assertEvent(event, 'tool.running');
        return { ...context.entity, status: 'running', updatedAt: event.timestamp };
      },
    }),
    complete: assign({ entity: completedWithResult<AgentToolCallState>('tool.completed') }),
    fail: assign({ entity: failedBy<AgentToolCallState>('tool.failed') }),
    cancel: assign({ entity: cancelledBy<AgentToolCallState>('tool.cancelled') }),
    terminate: assign({ entity: terminated<AgentToolCallState>() }),
    markRetried: assign({
      entity: ({ context, event }) => {
        assertEvent(event, 'store.retried');
        return { ...context.entity, retriedBy: event.toolCallId, updatedAt: event.timestamp };
      },
    }),
  },
}).createMachine({
  id: 'toolCall',
  context: ({ input }) => ({ entity: input.entity }),
  initial: 'restoring',
  states: {
    restoring: {
      always: [
        { guard: { type: 'hasStatus', params: { status: 'awaiting_execution' } }, target: 'open.awaiting_execution' },
        { guard: { type: 'hasStatus', params: { status: 'running' } }, target: 'open.running' },
        { guard: 'wasRetryableFailure', target: 'retryable' },
        ...restoreFinalStates(AGENT_ENTITY_KIND_TABLE.toolCall.finalStatuses),
        { target: 'open.streaming_arguments' },
      ],
    },
    // The states in which the tool call is not settled: they share how it completes, fails,
    // is cancelled or is closed by its run's end.
    open: {
      tags: ['active'],
      initial: 'streaming_arguments',
      on: {
        'tool.completed': { target: 'completed', actions: 'complete' },
        'tool.failed': [
          { guard: 'isRetryableFailure', target: 'retryable', actions: 'fail' },
          { target: 'failed', actions: 'fail' },
        ],
        'tool.cancelled': { target: 'cancelled', actions: 'cancel' },
        'store.terminate': { target: 'cancelled', actions: 'terminate' },
      },
      states: {
        streaming_arguments: {
          tags: ['acceptsDelta'],
          on: {
            'tool.arguments_delta': { actions: 'appendArguments' },
            'tool.arguments_completed': { target: 'awaiting_execution', actions: 'completeArguments' },
            'store.settle_pending': { target: 'awaiting_execution', actions: 'completeArguments' },
            // The seed's lifecycle has no `tool.arguments_completed`: the arguments are complete
            // at whichever of these comes first.
            'tool.running': { target: 'running', actions: ['completeArguments', 'markRunning'] },
            'tool.completed': { target: '#toolCall.completed', actions: ['completeArguments', 'complete'] },
            'tool.failed': [
              {
                guard: 'isRetryableFailure',
                target: '#toolCall.retryable',
                actions: ['completeArguments', 'fail'],
              },
              { target: '#toolCall.failed', actions: ['completeArguments', 'fail'] },
            ],
          },
        },
        awaiting_execution: {
          tags: ['settleable'],
          ...awaitingResult(
            { target: '#toolCall.open.running', actions: 'markRunning' },
            '#toolCall.open.running.submitting',
          ),
        },
        // Settleable: a run may end with a tool the application is running (a client-side tool).
        running: { tags: ['settleable'], ...awaitingResult(undefined, '') },
      },
    },
    // A failure that may be retried, until its retry arrives: then it is failed for good.
    retryable: {
      initial: 'idle',
      states: {
        idle: { on: { 'tool.retry': { target: 'submitting' } } },
        submitting: { on: { 'store.command_settled': { target: 'idle' } } },
      },
      on: { 'store.retried': { target: 'failed', actions: 'markRetried' } },
    },
    ...FINAL_STATES,
  },
});
