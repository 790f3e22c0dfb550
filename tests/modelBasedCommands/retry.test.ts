import { expect } from 'vitest';
import { assign, setup } from 'xstate';
import type { AgentErrorInfo } from '../../protocol/eventSchemas';
import type { LocalAgentStep } from '../../providers/local/localAgentChunks';
import {
  type ChatHarness,
  decideAndSettle,
  type InteractionModel,
  localBackend,
  type ModelState,
  remoteBackend,
} from '../support/interactionHarness';
import { describeModel } from '../support/interactionModelRunner';

// --- Tool retry: failed -> retrying -> a new attempt completed | failed (retried again) ------

const MAX_ATTEMPTS = 3;
const ARGUMENTS = '{"q":"paris"}';
const RETRYABLE: AgentErrorInfo = { message: 'upstream timeout', code: 'timeout', retryable: true };
const FOR_GOOD: AgentErrorInfo = { message: 'bad query', code: 'invalid_query', retryable: false };
const RETRY_RESULT = { hits: 3 };

/** The id of a tool call's attempt, as the local runtime names retries. */
const attemptId = (attempt: number) => (attempt === 1 ? 'tool-0' : `tool-0-retry-${attempt}`);

/**
 * A failed tool call as its user sees it: a retryable failure can be retried; the retry
 * submits, and a new attempt arrives that completes, fails for good, or fails retryably and
 * can be retried again (up to the model's horizon of three attempts).
 */
const retryInteraction = setup({
  types: {
    context: {} as RetryContext,
    input: {} as { retryable: boolean },
    events: {} as {
      type:
        | 'user.retry'
        | 'runtime.retry_completes'
        | 'runtime.retry_fails'
        | 'runtime.retry_fails_for_good'
        | 'runtime.provider_error';
    },
  },
  guards: {
    firstFailureRetryable: ({ context }) => context.firstRetryable,
    belowMaxAttempts: ({ context }) => context.attempt < MAX_ATTEMPTS,
    noCommandFailedYet: ({ context }) => context.commandFailedAt === undefined,
  },
  actions: {
    nextAttempt: assign({ attempt: ({ context }) => context.attempt + 1 }),
    commandFailed: assign({ commandFailedAt: ({ context }) => context.attempt }),
  },
}).createMachine({
  id: 'retryInteraction',
  context: ({ input }) => ({ attempt: 1, firstRetryable: input.retryable, commandFailedAt: undefined }),
  initial: 'started',
  states: {
    started: { always: [{ guard: 'firstFailureRetryable', target: 'failed' }, { target: 'failed_for_good' }] },
    failed: { on: { 'user.retry': { guard: 'belowMaxAttempts', target: 'retrying' } } },
    retrying: {
      on: {
        'runtime.retry_completes': { target: 'completed', actions: 'nextAttempt' },
        'runtime.retry_fails': { target: 'failed', actions: 'nextAttempt' },
        'runtime.retry_fails_for_good': { target: 'failed_for_good', actions: 'nextAttempt' },
        // The runtime could not carry the retry out: no new attempt, the user may retry again.
        'runtime.provider_error': { guard: 'noCommandFailedYet', target: 'failed', actions: 'commandFailed' },
      },
    },
    completed: { type: 'final' },
    failed_for_good: { type: 'final' },
  },
});

const RETRY_OUTCOMES = ['runtime.retry_completes', 'runtime.retry_fails', 'runtime.retry_fails_for_good'];

/** A type, not an interface: the model runner hands contexts over as records. */
type RetryContext = {
  attempt: number;
  firstRetryable: boolean;
  /** The attempt whose retry command the runtime failed to carry out. */
  commandFailedAt: number | undefined;
};

/** The local tool step whose retries all do what the path's retries do. */
function retriedToolStep(retryable: boolean, events: readonly string[]): LocalAgentStep {
  const outcome = events.find((event) => RETRY_OUTCOMES.includes(event));
  return {
    type: 'tool',
    name: 'search',
    argumentDeltas: ['{"q":', '"paris"}'],
    error: retryable ? RETRYABLE : FOR_GOOD,
    ...(outcome === 'runtime.retry_completes' ? { retryResult: RETRY_RESULT } : {}),
    ...(outcome === 'runtime.retry_fails_for_good' ? { retryError: FOR_GOOD } : {}),
  };
}

function attemptOf(state: ModelState): number {
  return (state.context as { attempt: number }).attempt;
}

const retryModel: InteractionModel<{ retryable: boolean }> = {
  name: 'tool retry',
  machine: retryInteraction,
  variants: [
    { label: 'retryable failure', input: { retryable: true } },
    { label: 'failure not retryable', input: { retryable: false } },
  ],
  backends: [
    // Every retry of a local tool step yields the same: its `retryResult` or its `retryError`.
    localBackend(
      (events) =>
        new Set(events.filter((event) => RETRY_OUTCOMES.includes(event))).size <= 1 &&
        !events.includes('runtime.provider_error'),
      ({ retryable }, events) => ({ steps: [retriedToolStep(retryable, events), { type: 'stall' }] }),
    ),
    remoteBackend(
      (events, { retryable }) => [
        events.emit('tool.requested', { toolCallId: 'tool-0', name: 'search' }),
        events.emit('tool.arguments_completed', { toolCallId: 'tool-0', arguments: ARGUMENTS }),
        events.emit('tool.running', { toolCallId: 'tool-0' }),
        events.emit('tool.failed', { toolCallId: 'tool-0', error: retryable ? RETRYABLE : FOR_GOOD }),
      ],
      async function* (harness, command, run, signal) {
        if (command.type !== 'tool.retry') return;
        const outcome = await harness.decisions.next(signal);
        if (outcome === 'runtime.provider_error') throw new Error('the tool runner answered 503');
        const retryOf = command.payload.toolCallId;
        const attempt = (harness.toolCall(retryOf)?.attempt ?? 1) + 1;
        const toolCallId = attemptId(attempt);
        yield run.events.emit('tool.requested', { toolCallId, name: 'search', attempt, retryOf });
        yield run.events.emit('tool.arguments_completed', { toolCallId, arguments: ARGUMENTS });
        yield run.events.emit('tool.running', { toolCallId });
        yield outcome === 'runtime.retry_completes'
          ? run.events.emit('tool.completed', { toolCallId, result: RETRY_RESULT })
          : run.events.emit('tool.failed', {
              toolCallId,
              error: outcome === 'runtime.retry_fails' ? RETRYABLE : FOR_GOOD,
            });
      },
    ),
  ],
  actions: {
    'user.retry': (harness, state) =>
      harness.chat.agentActions.retryTool({ runId: harness.runId, toolCallId: attemptId(attemptOf(state)) }),
    'user.submit_result': (harness, state) =>
      harness.chat.agentActions.submitToolResult({
        runId: harness.runId,
        toolCallId: attemptId(attemptOf(state)),
        result: { hits: 0 },
      }),
  },
  runtime: Object.fromEntries(
    [...RETRY_OUTCOMES, 'runtime.provider_error'].map((outcome) => [
      outcome,
      (harness: ChatHarness) => decideAndSettle(harness, outcome),
    ]),
  ),
  expectState(harness, state) {
    const attempt = attemptOf(state);
    const latest = harness.toolCall(attemptId(attempt));
    expect(harness.run()?.status).toBe('running');
    expect(Object.keys(harness.state().toolCalls)).toHaveLength(attempt);
    // Earlier attempts stay as history: failed, retryably.
    for (let earlier = 1; earlier < attempt; earlier += 1) {
      expect(harness.toolCall(attemptId(earlier))).toMatchObject({ status: 'failed', error: RETRYABLE });
    }
    expect(latest).toMatchObject({ name: 'search', attempt, parsedArguments: { q: 'paris' } });
    if (attempt > 1) expect(latest?.retryOf).toBe(attemptId(attempt - 1));
    switch (state.value) {
      case 'failed':
        expect(latest).toMatchObject({ status: 'failed', error: RETRYABLE });
        break;
      case 'failed_for_good':
        expect(latest).toMatchObject({ status: 'failed', error: FOR_GOOD });
        break;
      case 'completed':
        expect(latest).toMatchObject({ status: 'completed', result: RETRY_RESULT });
        break;
      case 'retrying':
        expect(latest).toMatchObject({ status: 'failed', error: RETRYABLE });
        harness.expectCommand('tool.retry', attemptId(attempt), 'submitting');
        return;
    }
    if ((state.context as RetryContext).commandFailedAt === attempt) {
      // The retry failed before any new attempt: the failure is on its command, retryable as the provider says.
      harness.expectCommand('tool.retry', attemptId(attempt), { failed: 'provider_error' });
      harness.expectOutcome({ rejected: 'provider_error' });
      expect(harness.command('tool.retry', attemptId(attempt))?.error?.message).toMatch(/answered 503/);
      return;
    }
    harness.expectCommand('tool.retry', attemptId(attempt), 'none');
    if (attempt === 1) return;
    // The retry that made this attempt was taken.
    harness.expectCommand('tool.retry', attemptId(attempt - 1), 'succeeded');
    harness.expectOutcome('fulfilled');
  },
  refusals(_harness, state) {
    const id = attemptId(attemptOf(state));
    const failed = {
      action: 'user.submit_result',
      reason: new RegExp(`tool call "${id}" is failed: it takes no result`),
    };
    switch (state.value) {
      case 'failed':
        return [failed];
      case 'retrying':
        return [
          { action: 'user.retry', reason: new RegExp(`a retry of tool call "${id}" is already submitting`) },
          failed,
        ];
      case 'failed_for_good':
        return [
          { action: 'user.retry', reason: new RegExp(`tool call "${id}" failed without retryable: true`) },
          failed,
        ];
      default:
        return [
          { action: 'user.retry', reason: new RegExp(`tool call "${id}" is completed, not failed`) },
          { action: 'user.submit_result', reason: new RegExp(`tool call "${id}" is completed: it takes no result`) },
        ];
    }
  },
  label: (state) => {
    const failedAt = (state.context as RetryContext).commandFailedAt;
    return `${String(state.value)}#${attemptOf(state)}${failedAt === undefined ? '' : `[retry #${failedAt} failed]`}`;
  },
};

describeModel(retryModel);
