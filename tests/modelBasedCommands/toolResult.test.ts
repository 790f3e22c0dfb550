import { expect } from 'vitest';
import { assign, setup } from 'xstate';
import {
  type ChatHarness,
  decideAndSettle,
  type InteractionModel,
  localBackend,
  remoteBackend,
} from '../support/interactionHarness';
import { describeModel } from '../support/interactionModelRunner';

// --- Tool result: awaiting the application's result -> submitting -> completed | failed -----

const READ_RESULT = { text: 'A' };
const READ_ERROR = { message: 'no such file', code: 'ENOENT' };

/**
 * A tool the application executes: awaiting its result (the runtime may mark it running
 * meanwhile), the result or error submitting, then the call completed or failed.
 */
const resultInteraction = setup({
  types: {
    context: {} as { running: boolean; submitted: 'result' | 'error' | undefined },
    events: {} as { type: 'runtime.start_running' | 'user.submit_result' | 'user.submit_error' | 'runtime.take' },
  },
  guards: {
    submittedResult: ({ context }) => context.submitted === 'result',
  },
  actions: {
    markRunning: assign({ running: true }),
    submit: assign((_, params: { submitted: 'result' | 'error' }) => ({ submitted: params.submitted })),
  },
}).createMachine({
  id: 'resultInteraction',
  context: { running: false, submitted: undefined },
  initial: 'awaiting_execution',
  states: {
    awaiting_execution: {
      on: {
        'runtime.start_running': { target: 'running', actions: 'markRunning' },
        'user.submit_result': { target: 'submitting', actions: { type: 'submit', params: { submitted: 'result' } } },
        'user.submit_error': { target: 'submitting', actions: { type: 'submit', params: { submitted: 'error' } } },
      },
    },
    running: {
      on: {
        'user.submit_result': { target: 'submitting', actions: { type: 'submit', params: { submitted: 'result' } } },
        'user.submit_error': { target: 'submitting', actions: { type: 'submit', params: { submitted: 'error' } } },
      },
    },
    submitting: {
      on: { 'runtime.take': [{ guard: 'submittedResult', target: 'completed' }, { target: 'failed' }] },
    },
    completed: { type: 'final' },
    failed: { type: 'final' },
  },
});

function submitToolResult(harness: ChatHarness, outcome: { result: unknown } | { error: typeof READ_ERROR }) {
  return harness.chat.agentActions.submitToolResult({ runId: harness.runId, toolCallId: 'tool-0', ...outcome });
}

const resultModel: InteractionModel<undefined> = {
  name: 'tool result',
  machine: resultInteraction,
  variants: [{ label: 'client tool', input: undefined }],
  backends: [
    localBackend(
      (events) => !events.includes('runtime.start_running'),
      () => ({
        steps: [
          { type: 'tool', name: 'read_file', argumentDeltas: ['{"path":', '"a.txt"}'], waitFor: 'command' },
          { type: 'stall' },
        ],
      }),
    ),
    remoteBackend(
      (events) => [
        events.emit('tool.requested', { toolCallId: 'tool-0', name: 'read_file' }),
        events.emit('tool.arguments_completed', { toolCallId: 'tool-0', arguments: '{"path":"a.txt"}' }),
      ],
      async function* (harness, command, run, signal) {
        if (command.type !== 'tool.submit_result') return;
        await harness.decisions.next(signal);
        const { toolCallId, result, error } = command.payload;
        const meta = { meta: { agentMachines: { executedBy: 'client', commandId: command.commandId } } };
        yield error === undefined
          ? run.events.emit('tool.completed', { toolCallId, result }, meta)
          : run.events.emit('tool.failed', { toolCallId, error }, meta);
      },
    ),
  ],
  actions: {
    'user.submit_result': (harness) => submitToolResult(harness, { result: READ_RESULT }),
    'user.submit_error': (harness) => submitToolResult(harness, { error: READ_ERROR }),
    'user.retry': (harness) => harness.chat.agentActions.retryTool({ runId: harness.runId, toolCallId: 'tool-0' }),
  },
  runtime: {
    'runtime.start_running': async (harness) => {
      harness.remoteRun?.push((events) => [events.emit('tool.running', { toolCallId: 'tool-0' })]);
    },
    'runtime.take': (harness) => decideAndSettle(harness, 'take'),
  },
  expectState(harness, state) {
    const { running, submitted } = state.context as { running: boolean; submitted: 'result' | 'error' | undefined };
    const toolCall = harness.toolCall('tool-0');
    expect(harness.run()?.status).toBe('running');
    expect(toolCall).toMatchObject({ name: 'read_file', parsedArguments: { path: 'a.txt' } });
    switch (state.value) {
      case 'awaiting_execution':
      case 'running':
        expect(toolCall?.status).toBe(state.value);
        harness.expectCommand('tool.submit_result', 'tool-0', 'none');
        return;
      case 'submitting':
        expect(toolCall?.status).toBe(running ? 'running' : 'awaiting_execution');
        harness.expectCommand('tool.submit_result', 'tool-0', 'submitting');
        expect(harness.command('tool.submit_result', 'tool-0')?.command.payload).toEqual(
          submitted === 'result'
            ? { toolCallId: 'tool-0', result: READ_RESULT }
            : { toolCallId: 'tool-0', error: READ_ERROR },
        );
        return;
      case 'completed':
        expect(toolCall).toMatchObject({
          status: 'completed',
          result: READ_RESULT,
          meta: { agentMachines: { executedBy: 'client', commandId: harness.action?.commandId } },
        });
        break;
      case 'failed':
        expect(toolCall).toMatchObject({ status: 'failed', error: READ_ERROR });
        break;
    }
    harness.expectCommand('tool.submit_result', 'tool-0', 'succeeded');
    harness.expectOutcome('fulfilled');
  },
  refusals(_harness, state) {
    const { running } = state.context as { running: boolean };
    const notFailed = (status: string) => ({
      action: 'user.retry',
      reason: new RegExp(`tool call "tool-0" is ${status}, not failed`),
    });
    const submits = (reason: RegExp) => [
      { action: 'user.submit_result', reason },
      { action: 'user.submit_error', reason },
    ];
    switch (state.value) {
      case 'awaiting_execution':
      case 'running':
        return [notFailed(String(state.value))];
      case 'submitting':
        return [
          ...submits(/a result for tool call "tool-0" is already submitting/),
          notFailed(running ? 'running' : 'awaiting_execution'),
        ];
      case 'completed':
        return [...submits(/tool call "tool-0" is completed: it takes no result/), notFailed('completed')];
      default:
        return [
          ...submits(/tool call "tool-0" is failed: it takes no result/),
          { action: 'user.retry', reason: /tool call "tool-0" failed without retryable: true/ },
        ];
    }
  },
  label: (state) => {
    const { running, submitted } = state.context as { running: boolean; submitted: string | undefined };
    const hints = [running ? 'running' : '', submitted ?? ''].filter((hint) => hint !== '');
    return hints.length === 0 ? String(state.value) : `${String(state.value)}(${hints.join(', ')})`;
  },
};

describeModel(resultModel);
