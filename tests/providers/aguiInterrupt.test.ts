import { type BaseEvent, EventType, type RunAgentInput } from '@ag-ui/core';
import { RunAgentInputSchema } from '@ag-ui/core/schemas';
import { EventEncoder } from '@ag-ui/encoder';
import { afterAll, describe, expect, it } from 'vitest';
import { createAgentStore } from '../../machines/createAgentStore';
import { selectPendingInput } from '../../machines/selectors';
import { AgentValidationError } from '../../protocol/errors';
import { getAgentEntityKey } from '../../protocol/getAgentEntityKey';
import type { AgentApprovalAnswer } from '../../providers/AgentProvider';
import { type AgUIAgentInput, createAgUIAgentProvider } from '../../providers/agui/createAgUIAgentProvider';
import { toAgUIMessages } from '../../providers/agui/toAgUIMessages';
import { runAgentProvider } from '../../providers/runAgentProvider';
import { startHttpServer } from '../support/httpServer';

/** What the agent streams for each run, by the run id the request carries. */
const scripts = new Map<string, BaseEvent[]>();
const encoder = new EventEncoder();
const server = await startHttpServer(async (request, response) => {
  const { runId } = JSON.parse(request.body) as RunAgentInput;
  response.writeHead(200, { 'content-type': encoder.getContentType(), 'cache-control': 'no-cache' });
  for (const event of scripts.get(runId) ?? []) {
    response.write(encoder.encodeSSE(event));
    await new Promise((resolve) => setImmediate(resolve));
  }
  response.end();
});
afterAll(() => server.close());

const provider = createAgUIAgentProvider({ url: server.url });

/** The RunAgentInput the agent received for a run. */
function requestOf(runId: string): RunAgentInput {
  const request = server.requests.find((recorded) => JSON.parse(recorded.body).runId === runId);
  if (request === undefined) throw new Error(`the agent got no request for ${runId}`);
  return JSON.parse(request.body);
}

/** A run that asks to delete files, with a tool call the interrupt is about, and stops for the user's answer. */
function interruptingRun(threadId: string, runId: string): BaseEvent[] {
  return [
    { type: EventType.RUN_STARTED, threadId, runId } as BaseEvent,
    { type: EventType.TEXT_MESSAGE_START, messageId: `${runId}-msg`, role: 'assistant' } as BaseEvent,
    {
      type: EventType.TEXT_MESSAGE_CONTENT,
      messageId: `${runId}-msg`,
      delta: 'I will delete 12 log files.',
    } as BaseEvent,
    { type: EventType.TEXT_MESSAGE_END, messageId: `${runId}-msg` } as BaseEvent,
    {
      type: EventType.TOOL_CALL_START,
      toolCallId: 'call-del',
      toolCallName: 'delete_files',
      parentMessageId: `${runId}-msg`,
    } as BaseEvent,
    { type: EventType.TOOL_CALL_ARGS, toolCallId: 'call-del', delta: '{"glob":"*.log"}' } as BaseEvent,
    { type: EventType.TOOL_CALL_END, toolCallId: 'call-del' } as BaseEvent,
    {
      type: EventType.RUN_FINISHED,
      threadId,
      runId,
      outcome: {
        type: 'interrupt',
        interrupts: [{ id: 'int-1', reason: 'confirmation', message: 'Delete 12 log files?', toolCallId: 'call-del' }],
      },
    } as BaseEvent,
  ];
}

/** Runs the interrupting run, then the one that answers it; returns the store. */
async function interruptThenAnswer(sessionId: string, answer: AgentApprovalAnswer, resumed: BaseEvent[]) {
  const store = createAgentStore();
  const input: AgUIAgentInput = { prompt: 'Clean up the logs' };
  const first = `${sessionId}-run-1`;
  const second = `${sessionId}-run-2`;
  scripts.set(first, interruptingRun(sessionId, first));
  scripts.set(second, resumed);
  const result1 = await runAgentProvider({
    provider,
    input,
    sessionId,
    runId: first,
    history: store.getSnapshot(),
    onEvent: store.dispatch,
  });
  const waiting = store.getSnapshot();
  const result2 = await runAgentProvider({
    provider,
    input,
    sessionId,
    runId: second,
    history: waiting,
    continuation: { runId: first, approvals: [answer] },
    onEvent: store.dispatch,
  });
  return { store, input, first, second, result1, result2, waiting };
}

describe('AG-UI interrupts: a run waits, the next run answers it with resume entries (real loopback server)', () => {
  it('sends the conversation and the resume, and settles the waiting run with what the resumed stream reports', async () => {
    const threadId = 'thread-approve';
    const resumed: BaseEvent[] = [
      { type: EventType.RUN_STARTED, threadId, runId: `${threadId}-run-2` } as BaseEvent,
      {
        type: EventType.TOOL_CALL_RESULT,
        messageId: 'tool-msg-1',
        toolCallId: 'call-del',
        content: 'deleted 12 files',
      } as BaseEvent,
      { type: EventType.TEXT_MESSAGE_START, messageId: 'done-msg', role: 'assistant' } as BaseEvent,
      { type: EventType.TEXT_MESSAGE_CONTENT, messageId: 'done-msg', delta: 'Done: 12 files deleted.' } as BaseEvent,
      { type: EventType.TEXT_MESSAGE_END, messageId: 'done-msg' } as BaseEvent,
      { type: EventType.RUN_FINISHED, threadId, runId: `${threadId}-run-2`, outcome: { type: 'success' } } as BaseEvent,
    ];
    const { store, input, first, second, result1, result2, waiting } = await interruptThenAnswer(
      threadId,
      { approvalId: 'int-1', status: 'resolved', decision: 'approved' },
      resumed,
    );
    const prompt = { id: `prompt-${first}`, role: 'user', content: 'Clean up the logs' };
    const assistant = {
      id: `${first}-msg`,
      role: 'assistant',
      content: 'I will delete 12 log files.',
      toolCalls: [
        { id: 'call-del', type: 'function', function: { name: 'delete_files', arguments: '{"glob":"*.log"}' } },
      ],
    };

    // Run 1: the prompt went out as a user message, and the run ended waiting.
    expect(result1).toEqual({ runId: first, status: 'completed' });
    expect(requestOf(first)).toEqual({ threadId, runId: first, messages: [prompt], tools: [], context: [] });
    expect(waiting.runs[first]).toMatchObject({
      status: 'completed',
      pendingApprovalIds: ['int-1'],
      pendingToolCallIds: ['call-del'],
    });
    expect(waiting.approvals[getAgentEntityKey(first, 'int-1')]).toMatchObject({
      status: 'waiting',
      toolCallId: 'call-del',
    });
    const pending = selectPendingInput(waiting, first);
    expect([pending.approvals.map((a) => a.id), pending.toolCalls.map((t) => t.id)]).toEqual([['int-1'], ['call-del']]);

    // Run 2: the conversation from the history, the answer as a resume entry, no new user message.
    expect(result2).toEqual({ runId: second, status: 'completed' });
    const request = requestOf(second);
    expect(request).toEqual({
      threadId,
      runId: second,
      messages: [prompt, assistant],
      tools: [],
      context: [],
      resume: [{ interruptId: 'int-1', status: 'resolved', payload: { decision: 'approved' } }],
    });
    expect(RunAgentInputSchema.safeParse(request).success).toBe(true);

    // The waiting run's approval and tool call are settled, and stay its records.
    const state = store.getSnapshot();
    expect(state.approvals[getAgentEntityKey(first, 'int-1')]).toMatchObject({
      runId: first,
      status: 'resolved',
      decision: 'approved',
      meta: { agui: { resolvedBy: 'resume', resumeStatus: 'resolved' } },
    });
    expect(state.toolCalls[getAgentEntityKey(first, 'call-del')]).toMatchObject({
      runId: first,
      status: 'completed',
      result: 'deleted 12 files',
    });
    expect(state.toolCalls[getAgentEntityKey(second, 'call-del')]).toBeUndefined();
    expect(state.approvals[getAgentEntityKey(second, 'int-1')]).toBeUndefined();
    expect(selectPendingInput(state, first)).toEqual({ toolCalls: [], approvals: [] });
    expect(state.runs[second]).toMatchObject({ status: 'completed', continuesRunId: first });
    expect(Object.values(state.messages).filter((message) => message.runId === second)).toMatchObject([
      { id: 'done-msg', role: 'assistant', content: 'Done: 12 files deleted.' },
    ]);
    expect(state.issues).toEqual([]);

    // Run 3: a new prompt carries the whole conversation, every id as the agent knows it.
    const third = `${threadId}-run-3`;
    scripts.set(third, [
      { type: EventType.RUN_STARTED, threadId, runId: third } as BaseEvent,
      { type: EventType.RUN_FINISHED, threadId, runId: third } as BaseEvent,
    ]);
    await runAgentProvider({
      provider,
      input: { ...input, prompt: 'Thanks' },
      sessionId: threadId,
      runId: third,
      history: store.getSnapshot(),
      onEvent: store.dispatch,
    });
    expect(requestOf(third).messages).toEqual([
      prompt,
      assistant,
      { id: 'tool-msg-1', role: 'tool', toolCallId: 'call-del', content: 'deleted 12 files' },
      { id: 'done-msg', role: 'assistant', content: 'Done: 12 files deleted.' },
      { id: `prompt-${third}`, role: 'user', content: 'Thanks' },
    ]);
    expect(requestOf(third).resume).toBeUndefined();
    expect(toAgUIMessages(store.getSnapshot(), threadId)).toEqual(requestOf(third).messages);
    expect(store.getSnapshot().issues).toEqual([]);
    store.destroy();
  });

  it('sends a cancelled answer as a cancelled entry and resolves the approval as rejected, without RUN_STARTED', async () => {
    const threadId = 'thread-cancel';
    const resumed: BaseEvent[] = [
      // No RUN_STARTED: the first event confirms the resume.
      {
        type: EventType.TOOL_CALL_RESULT,
        messageId: 'tool-msg-1',
        toolCallId: 'call-del',
        content: 'not run: the user declined',
      } as BaseEvent,
      { type: EventType.RUN_FINISHED, threadId, runId: `${threadId}-run-2` } as BaseEvent,
    ];
    const { store, first, second, result2 } = await interruptThenAnswer(
      threadId,
      { approvalId: 'int-1', status: 'cancelled', data: { note: 'not now' } },
      resumed,
    );
    expect(result2.status).toBe('completed');
    expect(requestOf(second).resume).toEqual([
      { interruptId: 'int-1', status: 'cancelled', payload: { data: { note: 'not now' } } },
    ]);
    const state = store.getSnapshot();
    expect(state.approvals[getAgentEntityKey(first, 'int-1')]).toMatchObject({
      status: 'resolved',
      decision: 'rejected',
      resolvedData: { note: 'not now' },
      meta: { agui: { resolvedBy: 'resume', resumeStatus: 'cancelled' } },
    });
    expect(state.toolCalls[getAgentEntityKey(first, 'call-del')]).toMatchObject({
      status: 'completed',
      result: 'not run: the user declined',
    });
    expect(selectPendingInput(state, first)).toEqual({ toolCalls: [], approvals: [] });
    expect(state.runs[second]).toMatchObject({ status: 'completed', continuesRunId: first });
    expect(state.issues).toEqual([]);
    store.destroy();
  });

  it('leaves the approvals waiting when the resumed stream opens with RUN_ERROR', async () => {
    const threadId = 'thread-refused';
    const resumed: BaseEvent[] = [
      { type: EventType.RUN_ERROR, message: 'Unknown interrupt', code: 'bad_resume' } as BaseEvent,
    ];
    const { store, first, second, result2 } = await interruptThenAnswer(
      threadId,
      { approvalId: 'int-1', status: 'resolved', decision: 'modified', data: { glob: '*.tmp' } },
      resumed,
    );
    expect(requestOf(second).resume).toEqual([
      { interruptId: 'int-1', status: 'resolved', payload: { decision: 'modified', data: { glob: '*.tmp' } } },
    ]);
    expect(result2.status).toBe('failed');
    const state = store.getSnapshot();
    expect(state.runs[second]?.error).toEqual({ message: 'Unknown interrupt', code: 'bad_resume' });
    expect(state.approvals[getAgentEntityKey(first, 'int-1')]?.status).toBe('waiting');
    expect(selectPendingInput(state, first).approvals.map((approval) => approval.id)).toEqual(['int-1']);
    expect(state.issues).toEqual([]);
    store.destroy();
  });

  it('lets an explicit input.resume replace the entries built from the answers', async () => {
    const threadId = 'thread-explicit';
    const store = createAgentStore();
    const first = `${threadId}-run-1`;
    const second = `${threadId}-run-2`;
    scripts.set(first, interruptingRun(threadId, first));
    scripts.set(second, [
      { type: EventType.RUN_STARTED, threadId, runId: second } as BaseEvent,
      { type: EventType.RUN_FINISHED, threadId, runId: second } as BaseEvent,
    ]);
    await runAgentProvider({
      provider,
      input: { prompt: 'Go' },
      sessionId: threadId,
      runId: first,
      onEvent: store.dispatch,
    });
    const resume = [{ interruptId: 'int-1', status: 'resolved' as const, payload: { ok: true } }];
    await runAgentProvider({
      provider,
      input: { prompt: 'Go', resume },
      sessionId: threadId,
      runId: second,
      history: store.getSnapshot(),
      continuation: { runId: first, approvals: [{ approvalId: 'int-1', status: 'resolved', decision: 'approved' }] },
      onEvent: store.dispatch,
    });
    expect(requestOf(second).resume).toEqual(resume);
    expect(store.getSnapshot().approvals[getAgentEntityKey(first, 'int-1')]?.decision).toBe('approved');
    store.destroy();
  });
});

describe('AG-UI input that cannot become a request', () => {
  const runWith = async (input: AgUIAgentInput) => {
    const store = createAgentStore();
    const runId = 'bad-run';
    const before = server.requests.length;
    const result = await runAgentProvider({
      provider,
      input,
      sessionId: 'thread-bad',
      runId,
      history: store.getSnapshot(),
      onEvent: store.dispatch,
    });
    const sent = server.requests.length - before;
    const state = store.getSnapshot();
    store.destroy();
    return { result, state, runId, sent };
  };

  it('fails the run with an AgentValidationError, sending nothing, when there is neither messages, prompt nor continuation', async () => {
    const { result, state, runId, sent } = await runWith({});
    expect(sent).toBe(0);
    expect(result.status).toBe('failed');
    expect(AgentValidationError.isInstance(result.error)).toBe(true);
    const reason = 'the input has neither `messages` nor `prompt`, and the run continues none';
    expect(result.error).toMatchObject({ code: 'invalid_input', failure: { path: 'messages', reason } });
    expect(state.runs[runId]).toMatchObject({
      status: 'failed',
      error: { code: 'invalid_input', message: `Invalid AG-UI input: messages: ${reason}` },
    });
    expect(Object.keys(state.messages)).toEqual([]);
    expect(state.issues).toEqual([]);
  });

  it('refuses an empty prompt', async () => {
    const { result, sent } = await runWith({ prompt: '' });
    expect(sent).toBe(0);
    expect(result.error).toMatchObject({ code: 'invalid_input', failure: { path: 'prompt', reason: 'is empty' } });
  });

  it('sends explicit messages as they are, over the history, and a prompt after them', async () => {
    const threadId = 'thread-explicit-messages';
    const runId = `${threadId}-run-1`;
    scripts.set(runId, [
      { type: EventType.RUN_STARTED, threadId, runId } as BaseEvent,
      { type: EventType.RUN_FINISHED, threadId, runId } as BaseEvent,
    ]);
    const store = createAgentStore();
    const messages = [
      { id: 'u-0', role: 'user' as const, content: 'Earlier' },
      { id: 'u-1', role: 'user' as const, content: 'Now' },
    ];
    await runAgentProvider({
      provider,
      input: { messages, prompt: 'Later' },
      sessionId: threadId,
      runId,
      history: store.getSnapshot(),
      onEvent: store.dispatch,
    });
    expect(requestOf(runId).messages).toEqual([...messages, { id: `prompt-${runId}`, role: 'user', content: 'Later' }]);
    // The last message, the prompt, is this run's new message.
    expect(Object.values(store.getSnapshot().messages)).toMatchObject([
      { id: `prompt-${runId}`, role: 'user', content: 'Later' },
    ]);
    store.destroy();
  });

  it("takes the last explicit message, the user's, as the run's new message, under its own id", async () => {
    const threadId = 'thread-explicit-last';
    const runId = `${threadId}-run-1`;
    scripts.set(runId, [
      { type: EventType.RUN_STARTED, threadId, runId } as BaseEvent,
      { type: EventType.RUN_FINISHED, threadId, runId } as BaseEvent,
    ]);
    const store = createAgentStore();
    const messages = [
      { id: 'u-0', role: 'user' as const, content: 'Earlier' },
      { id: 'u-1', role: 'user' as const, content: 'Now' },
    ];
    await runAgentProvider({
      provider,
      input: { messages, prompt: 'Now' },
      sessionId: threadId,
      runId,
      history: store.getSnapshot(),
      onEvent: store.dispatch,
    });
    expect(requestOf(runId).messages).toEqual(messages);
    expect(Object.values(store.getSnapshot().messages)).toMatchObject([{ id: 'u-1', role: 'user', content: 'Now' }]);
    store.destroy();
  });

  it('refuses an answer to an approval the continued run does not wait on', async () => {
    const threadId = 'thread-stale';
    const store = createAgentStore();
    const first = `${threadId}-run-1`;
    scripts.set(first, interruptingRun(threadId, first));
    await runAgentProvider({
      provider,
      input: { prompt: 'Go' },
      sessionId: threadId,
      runId: first,
      onEvent: store.dispatch,
    });
    const before = server.requests.length;
    const result = await runAgentProvider({
      provider,
      input: { prompt: 'Go' },
      sessionId: threadId,
      runId: `${threadId}-run-2`,
      history: store.getSnapshot(),
      continuation: { runId: first, approvals: [{ approvalId: 'int-9', status: 'resolved', decision: 'approved' }] },
      onEvent: store.dispatch,
    });
    expect(server.requests.length).toBe(before);
    expect(result.error).toMatchObject({
      code: 'invalid_input',
      failure: {
        path: 'continuation.approvals.0.approvalId',
        reason: `run "${first}" does not wait on approval "int-9" (unknown)`,
      },
    });
    expect(store.getSnapshot().approvals[getAgentEntityKey(first, 'int-1')]?.status).toBe('waiting');
    store.destroy();
  });
});
