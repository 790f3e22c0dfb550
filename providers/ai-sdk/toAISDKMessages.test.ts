import { describe, expect, it } from 'vitest';
import type { AgentState } from '../../machines/agentState';
import { createAgentStore } from '../../machines/createAgentStore';
import { createAgentEventFactory } from '../../protocol/createAgentEventFactory';
import type { AgentApprovalAnswer } from '../AgentProvider';
import { runAgentProvider } from '../runAgentProvider';
import { createAISDKAgentProvider } from './createAISDKAgentProvider';
import { toAISDKMessages } from './toAISDKMessages';
import type { UIMessageChunk } from './uiMessageChunkSchema';

/** A store holding the runs the given streams made, each mapped by the provider itself. */
function conversation(
  runs: ReadonlyArray<{ runId: string; prompt?: string; chunks: UIMessageChunk[]; continues?: string }>,
) {
  const provider = createAISDKAgentProvider({ api: 'http://127.0.0.1:1/api/chat' });
  const store = createAgentStore();
  for (const { runId, prompt, chunks, continues } of runs) {
    const context = provider.createContext({
      sessionId: 'chat-1',
      runId,
      initialSequence: 0,
      now: () => 1,
      signal: new AbortController().signal,
      continuation: continues === undefined ? undefined : { runId: continues, approvals: [] },
    });
    const apply = (events: ReturnType<typeof provider.flush>) => {
      for (const event of events) store.dispatch(event);
    };
    apply(provider.start(prompt === undefined ? {} : { prompt }, context));
    for (const chunk of chunks) apply(provider.transformChunk({ data: JSON.stringify(chunk) }, context));
    apply(provider.transformChunk({ data: '[DONE]' }, context));
  }
  return store;
}

/** Settles a tool call of a waiting run as the application does (a client tool's result). */
function settle(store: ReturnType<typeof createAgentStore>, runId: string, toolCallId: string, result: unknown) {
  const events = createAgentEventFactory({
    sessionId: 'chat-1',
    runId,
    initialSequence: store.getSnapshot().lastSequenceByRun[runId] ?? 0,
  });
  store.dispatch(
    events.create('tool.completed', { toolCallId, result }, { meta: { agentMachines: { executedBy: 'client' } } }),
  );
}

describe('toAISDKMessages', () => {
  it('rebuilds the user’s message and one assistant message per AI SDK message id, a continuation joining it', () => {
    const store = conversation([
      {
        runId: 'run-1',
        prompt: 'Where am I?',
        chunks: [
          { type: 'start', messageId: 'msg-1', messageMetadata: { model: 'a' } },
          { type: 'start-step' },
          { type: 'reasoning-start', id: 'r' },
          { type: 'reasoning-delta', id: 'r', delta: 'Ask the browser.' },
          { type: 'reasoning-end', id: 'r' },
          { type: 'tool-input-available', toolCallId: 'loc-1', toolName: 'location', input: { precise: true } },
          { type: 'finish-step' },
          { type: 'finish', finishReason: 'tool-calls' },
        ],
      },
    ]);
    settle(store, 'run-1', 'loc-1', { city: 'Oslo' });
    const messages = toAISDKMessages(store.getSnapshot(), 'chat-1');
    expect(messages).toEqual([
      { id: 'user-run-1', role: 'user', parts: [{ type: 'text', text: 'Where am I?' }] },
      {
        id: 'msg-1',
        role: 'assistant',
        metadata: { model: 'a' },
        parts: [
          { type: 'step-start' },
          { type: 'reasoning', text: 'Ask the browser.', state: 'done' },
          {
            type: 'tool-location',
            toolCallId: 'loc-1',
            state: 'output-available',
            input: { precise: true },
            output: { city: 'Oslo' },
          },
        ],
      },
    ]);
    expect(toAISDKMessages(store.getSnapshot(), 'another-chat')).toEqual([]);
  });

  it('puts a waiting approval in approval-requested, and in approval-responded with the continuation’s answer', () => {
    const store = conversation([
      {
        runId: 'run-1',
        prompt: 'Email the team',
        chunks: [
          { type: 'start', messageId: 'msg-1' },
          { type: 'tool-input-available', toolCallId: 'mail-1', toolName: 'email', input: { to: 'team' } },
          { type: 'tool-approval-request', approvalId: 'ap-1', toolCallId: 'mail-1', signature: 'sig' },
          { type: 'finish', finishReason: 'tool-calls' },
        ],
      },
    ]);
    const state = store.getSnapshot();
    const toolPart = (answers: AgentApprovalAnswer[]) =>
      toAISDKMessages(state, 'chat-1', answers)[1]?.parts.find((part) => part.type === 'tool-email');
    expect(toolPart([])).toEqual({
      type: 'tool-email',
      toolCallId: 'mail-1',
      state: 'approval-requested',
      input: { to: 'team' },
      approval: { id: 'ap-1', signature: 'sig' },
    });
    expect(
      toolPart([{ approvalId: 'ap-1', status: 'resolved', decision: 'rejected', data: { reason: 'not now' } }]),
    ).toMatchObject({
      state: 'approval-responded',
      approval: { id: 'ap-1', approved: false, reason: 'not now', signature: 'sig' },
    });
    expect(toolPart([{ approvalId: 'ap-1', status: 'cancelled' }])).toMatchObject({
      state: 'approval-responded',
      approval: { id: 'ap-1', approved: false },
    });
  });

  it('leaves out what a reset step dropped, tools still streaming their input, and ai 7-only parts', () => {
    const store = conversation([
      {
        runId: 'run-1',
        prompt: 'Go',
        chunks: [
          { type: 'start', messageId: 'msg-1' },
          { type: 'start-step' },
          { type: 'text-start', id: 't' },
          { type: 'text-delta', id: 't', delta: 'dropped' },
          { type: 'reset-step' },
          { type: 'text-start', id: 't' },
          { type: 'text-delta', id: 't', delta: 'kept' },
          { type: 'text-end', id: 't' },
          { type: 'reasoning-file', url: 'https://example.com/r.png', mediaType: 'image/png' },
          { type: 'tool-input-start', toolCallId: 'half', toolName: 'w' },
          { type: 'source-url', sourceId: 's', url: 'https://example.com', title: 'Ex' },
          { type: 'data-plan', id: 'p', data: { step: 1 } },
          { type: 'finish-step' },
          { type: 'finish' },
        ],
      },
    ]);
    const state: AgentState = store.getSnapshot();
    expect(toAISDKMessages(state, 'chat-1')[1]?.parts).toEqual([
      { type: 'step-start' },
      { type: 'text', text: 'kept', state: 'done' },
      { type: 'source-url', sourceId: 's', url: 'https://example.com', title: 'Ex' },
      { type: 'data-plan', id: 'p', data: { step: 1 } },
    ]);
  });

  it('sends a denied tool as output-denied and a failed one as output-error', () => {
    const store = conversation([
      {
        runId: 'run-1',
        prompt: 'Go',
        chunks: [
          { type: 'start', messageId: 'msg-1' },
          { type: 'tool-input-available', toolCallId: 'mail-1', toolName: 'email', input: {} },
          { type: 'tool-approval-request', approvalId: 'ap-1', toolCallId: 'mail-1' },
          { type: 'tool-input-available', toolCallId: 'w-1', toolName: 'weather', input: {} },
          { type: 'tool-output-error', toolCallId: 'w-1', errorText: 'offline' },
          { type: 'finish', finishReason: 'tool-calls' },
        ],
      },
      {
        runId: 'run-2',
        continues: 'run-1',
        chunks: [
          { type: 'start', messageId: 'msg-1' },
          { type: 'tool-output-denied', toolCallId: 'mail-1' },
          { type: 'finish' },
        ],
      },
    ]);
    const parts = toAISDKMessages(store.getSnapshot(), 'chat-1')[1]?.parts;
    expect(parts).toEqual([
      { type: 'tool-email', toolCallId: 'mail-1', state: 'output-denied', input: {}, approval: { id: 'ap-1' } },
      { type: 'tool-weather', toolCallId: 'w-1', state: 'output-error', input: {}, errorText: 'offline' },
    ]);
  });
});

describe('createAISDKAgentProvider refusals', () => {
  it('fails a continuation whose answer is modified with unsupported_capability, sending nothing', async () => {
    let requests = 0;
    const provider = createAISDKAgentProvider({
      api: 'http://127.0.0.1:1/api/chat',
      fetch: async () => {
        requests += 1;
        return new Response('', { status: 500 });
      },
    });
    const store = createAgentStore();
    const result = await runAgentProvider({
      provider,
      input: {},
      sessionId: 'chat-1',
      runId: 'run-2',
      continuation: {
        runId: 'run-1',
        approvals: [{ approvalId: 'ap-1', status: 'resolved', decision: 'modified', data: {} }],
      },
      onEvent: store.dispatch,
    });
    expect(result.status).toBe('failed');
    expect(requests).toBe(0);
    expect(store.getSnapshot().runs['run-2']?.error).toMatchObject({ code: 'unsupported_capability' });
    expect(store.getSnapshot().runs['run-2']?.error?.message).toContain('ap-1');
  });

  it('fails a run with nothing to send with invalid_input, sending nothing', async () => {
    let requests = 0;
    const provider = createAISDKAgentProvider({
      api: 'http://127.0.0.1:1/api/chat',
      fetch: async () => {
        requests += 1;
        return new Response('', { status: 500 });
      },
    });
    const store = createAgentStore();
    const result = await runAgentProvider({ provider, input: {}, sessionId: 'chat-1', onEvent: store.dispatch });
    expect(result.status).toBe('failed');
    expect(requests).toBe(0);
    expect(Object.values(store.getSnapshot().runs)[0]?.error?.code).toBe('invalid_input');
  });
});
