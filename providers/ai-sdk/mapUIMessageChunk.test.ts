import { describe, expect, it } from 'vitest';
import { createAgentStore } from '../../machines/createAgentStore';
import type { AgentEvent } from '../../protocol/eventSchemas';
import type { AgentRunContinuation } from '../AgentProvider';
import { AISDKChunkError } from './AISDKChunkError';
import { createAISDKAgentProvider } from './createAISDKAgentProvider';
import type { UIMessageChunk } from './uiMessageChunkSchema';

const provider = createAISDKAgentProvider({ api: 'http://127.0.0.1:1/api/chat' });

/**
 * Feeds chunks (or raw frames) through the provider's own start, transformChunk and flush,
 * into a store: the mapping as a run sees it, without a server.
 */
function feed(frames: ReadonlyArray<UIMessageChunk | string>, continuation?: AgentRunContinuation) {
  const store = createAgentStore();
  const events: AgentEvent[] = [];
  const apply = (batch: readonly AgentEvent[]) => {
    for (const event of batch) {
      events.push(event);
      store.dispatch(event);
    }
  };
  const context = provider.createContext({
    sessionId: 's1',
    runId: 'run-1',
    initialSequence: 0,
    now: () => 1,
    signal: new AbortController().signal,
    continuation,
  });
  apply(provider.start({ prompt: 'Hi' }, context));
  for (const frame of frames) {
    apply(provider.transformChunk({ data: typeof frame === 'string' ? frame : JSON.stringify(frame) }, context));
  }
  apply(provider.flush(context));
  return { events, state: store.getSnapshot() };
}

const DONE = '[DONE]';

describe('mapUIMessageChunk', () => {
  it('gives a text id the stream reuses in a later step an entity id of its own', () => {
    const { state, events } = feed([
      { type: 'start', messageId: 'm1' },
      { type: 'start-step' },
      { type: 'text-start', id: '0' },
      { type: 'text-delta', id: '0', delta: 'one' },
      { type: 'finish-step' },
      { type: 'start-step' },
      { type: 'text-start', id: '0' },
      { type: 'text-delta', id: '0', delta: 'two' },
      { type: 'text-end', id: '0' },
      { type: 'finish-step' },
      { type: 'finish', finishReason: 'stop' },
      DONE,
    ]);
    expect(state.issues).toEqual([]);
    const texts = Object.values(state.messages).filter((message) => message.role === 'assistant');
    expect(texts.map(({ id, content, status }) => [id, content, status])).toEqual([
      ['0', 'one', 'completed'],
      ['0~2', 'two', 'completed'],
    ]);
    expect(texts[0]?.meta).toEqual({ aiSdk: { messageId: 'm1', textId: '0' } });
    expect(state.runs['run-1']?.status).toBe('completed');
    expect(events.at(-1)).toMatchObject({
      type: 'run.completed',
      meta: { aiSdk: { messageId: 'm1', finishReason: 'stop' } },
    });
  });

  it('refuses a delta for a part the stream never started, naming the chunk and the id', () => {
    const { state } = feedCatching([{ type: 'text-delta', id: 'nope', delta: 'x' }]);
    expect(state.error).toBeInstanceOf(AISDKChunkError);
    expect(state.error).toMatchObject({ code: 'invalid_ai_sdk_chunk', chunkType: 'text-delta', field: 'id' });
    expect((state.error as Error).message).toContain('names no open part ("nope")');
  });

  it('refuses a frame that is not a chunk, naming the field and what was wrong', () => {
    for (const [frame, field, reason] of [
      ['{"type":"tool-input-start","toolCallId":"c"}', 'toolName', 'is missing'],
      ['{"type":"finish","finishReason":"done"}', 'finishReason', 'expected one of'],
      ['{"type":"text-delta","id":"t","delta":3}', 'delta', 'expected string'],
      ['{"type":"telepathy"}', 'type', 'not a chunk type'],
      ['not json', '', 'not JSON'],
    ] as const) {
      const { state } = feedCatching([frame]);
      expect(AISDKChunkError.isInstance(state.error)).toBe(true);
      expect(state.error).toMatchObject({ field, frame });
      expect((state.error as Error).message).toContain(reason);
    }
  });

  it('refuses an empty tool name or approval id: later chunks and answers could not name them', () => {
    const { state } = feedCatching([{ type: 'tool-input-start', toolCallId: 'c1', toolName: '' }]);
    expect(state.error).toMatchObject({ chunkType: 'tool-input-start', field: 'toolName' });
  });

  it('fails the run with the first error chunk once the stream is over, keeping what streamed after it', () => {
    const { state } = feed([
      { type: 'text-start', id: 't' },
      { type: 'text-delta', id: 't', delta: 'partial' },
      { type: 'error', errorText: 'rate limited: Bearer sk-live-abcdefghijklmnop' },
      { type: 'error', errorText: 'second' },
      { type: 'text-delta', id: 't', delta: ' more' },
      { type: 'finish' },
      DONE,
    ]);
    expect(state.runs['run-1']?.status).toBe('failed');
    expect(state.runs['run-1']?.error?.code).toBe('ai_sdk_error');
    expect(state.runs['run-1']?.error?.message).not.toContain('sk-live-abcdefghijklmnop');
    expect(Object.values(state.messages).find((message) => message.role === 'assistant')?.content).toBe('partial more');
    expect(state.extensions['run-1']?.map((record) => record.name)).toEqual(['ai-sdk.error', 'ai-sdk.error']);
  });

  it('cancels the run on abort, with its reason', () => {
    const { state } = feed([{ type: 'text-start', id: 't' }, { type: 'abort', reason: 'user stop' }, DONE]);
    expect(state.runs['run-1']).toMatchObject({ status: 'cancelled', reason: 'user stop' });
    expect(Object.values(state.messages).find((message) => message.role === 'assistant')?.status).toBe('cancelled');
  });

  it('ends the run its finish announced when the stream closes without [DONE], and fails one with no finish', () => {
    expect(feed([{ type: 'finish', finishReason: 'stop' }]).state.runs['run-1']?.status).toBe('completed');
    const { state } = feed([{ type: 'text-start', id: 't' }]);
    expect(state.runs['run-1']?.error?.code).toBe('missing_finish');
  });

  it('waits on client tools and on tools that asked approval; a settled or provider tool is not pending', () => {
    const { state } = feed([
      { type: 'tool-input-available', toolCallId: 'client-1', toolName: 'location', input: {} },
      { type: 'tool-input-available', toolCallId: 'mail-1', toolName: 'email', input: { to: 'a' } },
      { type: 'tool-approval-request', approvalId: 'ap-1', toolCallId: 'mail-1' },
      { type: 'tool-input-available', toolCallId: 'server-1', toolName: 'weather', input: {} },
      { type: 'tool-output-available', toolCallId: 'server-1', output: 4, preliminary: true },
      { type: 'tool-output-available', toolCallId: 'server-1', output: 5 },
      { type: 'tool-input-error', toolCallId: 'bad-1', toolName: 'weather', input: '{bad', errorText: 'invalid' },
      { type: 'finish', finishReason: 'tool-calls' },
      DONE,
    ]);
    expect(state.issues).toEqual([]);
    expect(state.runs['run-1']).toMatchObject({
      status: 'completed',
      pendingToolCallIds: ['client-1', 'mail-1'],
      pendingApprovalIds: ['ap-1'],
    });
    // Answered yes or no on the wire, never with edited input: the machine refuses `modified`.
    expect(Object.values(state.approvals).map(({ id, editable }) => [id, editable])).toEqual([['ap-1', false]]);
    const byId = Object.fromEntries(Object.values(state.toolCalls).map((toolCall) => [toolCall.id, toolCall]));
    expect(byId['server-1']).toMatchObject({ status: 'completed', result: 5, parsedArguments: {} });
    expect(byId['bad-1']).toMatchObject({ status: 'failed', arguments: '{bad', error: { code: 'invalid_tool_input' } });
    expect(state.extensions['run-1']).toMatchObject([
      { name: 'ai-sdk.preliminary-tool-output', data: { toolCallId: 'server-1', output: 4 } },
    ]);
  });

  it('keeps a data part per type and id, replaced by later ones; a transient one is a record only', () => {
    const { state } = feed([
      { type: 'data-plan', id: 'p', data: { step: 1 } },
      { type: 'data-plan', id: 'p', data: { step: 2 } },
      { type: 'data-plan', data: 'no id' },
      { type: 'data-toast', data: 'saved', transient: true },
      { type: 'finish' },
      DONE,
    ]);
    expect(Object.values(state.activities).map(({ id, content }) => [id, content])).toEqual([
      ['data-plan:p', { step: 2 }],
      ['data-plan#1', 'no id'],
    ]);
    expect(state.extensions['run-1']).toMatchObject([
      { name: 'ai-sdk.transient-data', data: { type: 'data-toast', data: 'saved' } },
    ]);
  });

  it('drops what a reset step streamed: open parts cancelled, its tools no longer pending, a record of them all', () => {
    const { state } = feed([
      { type: 'start-step' },
      { type: 'text-start', id: 'a' },
      { type: 'text-delta', id: 'a', delta: 'done' },
      { type: 'text-end', id: 'a' },
      { type: 'text-start', id: 'b' },
      { type: 'text-delta', id: 'b', delta: 'half' },
      { type: 'tool-input-available', toolCallId: 'c1', toolName: 'w', input: {} },
      { type: 'reset-step' },
      { type: 'text-start', id: 'a' },
      { type: 'text-delta', id: 'a', delta: 'again' },
      { type: 'text-end', id: 'a' },
      { type: 'finish-step' },
      { type: 'finish', finishReason: 'stop' },
      DONE,
    ]);
    expect(state.issues).toEqual([]);
    const texts = Object.values(state.messages).filter((message) => message.role === 'assistant');
    expect(texts.map(({ id, content, status }) => [id, content, status])).toEqual([
      ['a', 'done', 'completed'],
      ['b', 'half', 'cancelled'],
      ['a~2', 'again', 'completed'],
    ]);
    expect(Object.values(state.toolCalls)[0]).toMatchObject({ status: 'cancelled', reason: 'reset_step' });
    expect(state.runs['run-1']?.pendingToolCallIds).toBeUndefined();
    expect(state.extensions['run-1']).toMatchObject([
      { name: 'ai-sdk.reset-step', data: { taskId: 'step-1', messageIds: ['a', 'b'], toolCallIds: ['c1'] } },
    ]);
  });

  it('keeps sources, files, custom parts and metadata', () => {
    const { state } = feed([
      { type: 'start', messageId: 'm1', messageMetadata: { model: 'x' } },
      { type: 'source-url', sourceId: 's1', url: 'https://example.com', title: 'Example' },
      { type: 'source-document', sourceId: 's2', mediaType: 'application/pdf', title: 'Doc', filename: 'd.pdf' },
      { type: 'file', url: 'https://example.com/a.png', mediaType: 'image/png' },
      { type: 'reasoning-file', url: 'https://example.com/r.png', mediaType: 'image/png' },
      { type: 'custom', kind: 'openai.compaction' },
      { type: 'message-metadata', messageMetadata: { tokens: 3 } },
      { type: 'finish', messageMetadata: { done: true } },
      DONE,
    ]);
    expect(state.issues).toEqual([]);
    expect(
      Object.values(state.artifacts).map(({ id, uri, title, mediaType, name, meta }) => ({
        id,
        uri,
        title,
        mediaType,
        name,
        type: (meta?.aiSdk as { type?: string } | undefined)?.type,
      })),
    ).toEqual([
      {
        id: 's1',
        uri: 'https://example.com',
        title: 'Example',
        mediaType: undefined,
        name: undefined,
        type: 'source-url',
      },
      { id: 's2', uri: undefined, title: 'Doc', mediaType: 'application/pdf', name: 'd.pdf', type: 'source-document' },
      {
        id: 'file-1',
        uri: 'https://example.com/a.png',
        title: undefined,
        mediaType: 'image/png',
        name: undefined,
        type: 'file',
      },
      {
        id: 'file-2',
        uri: 'https://example.com/r.png',
        title: undefined,
        mediaType: 'image/png',
        name: undefined,
        type: 'reasoning-file',
      },
    ]);
    expect(state.extensions['run-1']?.map(({ name, data }) => [name, data])).toEqual([
      ['ai-sdk.message-metadata', { messageId: 'm1', metadata: { model: 'x' } }],
      ['ai-sdk.custom', { kind: 'openai.compaction' }],
      ['ai-sdk.message-metadata', { messageId: 'm1', metadata: { tokens: 3 } }],
      ['ai-sdk.message-metadata', { messageId: 'm1', metadata: { done: true } }],
    ]);
  });

  it('confirms a continuation’s answers when its stream starts, and not when it opens with an error', () => {
    const continuation = {
      runId: 'run-0',
      approvals: [{ approvalId: 'ap-1', status: 'resolved' as const, decision: 'rejected' as const }],
    };
    const confirmed = feed(
      [{ type: 'start' }, { type: 'tool-output-denied', toolCallId: 'c1' }, { type: 'finish' }, DONE],
      continuation,
    );
    expect(
      confirmed.events.filter((event) => event.type === 'approval.resolved').map((event) => event.payload),
    ).toEqual([{ approvalId: 'ap-1', decision: 'rejected' }]);
    const refused = feed([{ type: 'error', errorText: 'no' }, DONE], continuation);
    expect(refused.events.some((event) => event.type === 'approval.resolved')).toBe(false);
  });
});

/** `feed`, for streams the provider refuses: the error the chunk threw. */
function feedCatching(frames: ReadonlyArray<UIMessageChunk | string>): { state: { error: unknown } } {
  try {
    feed(frames);
  } catch (error) {
    return { state: { error } };
  }
  return { state: { error: undefined } };
}
