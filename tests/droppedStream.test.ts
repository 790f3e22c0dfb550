import type { ServerResponse } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { createAgentStore } from '../machines/createAgentStore';
import type { AgentEvent } from '../protocol/eventSchemas';
import type { AnyAgentProvider } from '../providers/AgentProvider';
import { createAgUIAgentProvider } from '../providers/agui/createAgUIAgentProvider';
import { createAnthropicAgentProvider } from '../providers/anthropic/createAnthropicAgentProvider';
import { createOpenAICompatibleAgentProvider } from '../providers/openai/createOpenAICompatibleAgentProvider';
import type { AgentConnectionChange } from '../providers/reconnect';
import { runAgentProvider } from '../providers/runAgentProvider';
import { createXChatRuntime } from '../runtime/createXChatRuntime';
import { AgentTransportError } from '../transports/AgentTransportError';
import { startHttpServer, type TestServer, writePieces } from './support/httpServer';

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const sse = (frames: readonly unknown[], event?: (frame: unknown) => string) =>
  frames.map((frame) => `${event === undefined ? '' : `event: ${event(frame)}\n`}data: ${JSON.stringify(frame)}\n\n`);

const openAIChunk = (delta: Record<string, unknown>, finish: string | null = null) => ({
  id: 'chatcmpl-1',
  object: 'chat.completion.chunk',
  created: 1733000000,
  model: 'gpt-4o-mini',
  choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
});

/** Each provider's wire frames for the start of an answer, "Half an ", and for a whole one. */
const providers = {
  openai: {
    create: (url: string) => createOpenAICompatibleAgentProvider({ baseURL: url, apiKey: 'sk-test', model: 'm' }),
    input: { messages: [{ role: 'user' as const, content: 'Hi' }] },
    half: sse([
      openAIChunk({ role: 'assistant', content: '' }),
      openAIChunk({ content: 'Half ' }),
      openAIChunk({ content: 'an ' }),
    ]),
    whole: [
      ...sse([openAIChunk({ role: 'assistant', content: 'A whole answer.' }), openAIChunk({}, 'stop')]),
      'data: [DONE]\n\n',
    ],
  },
  anthropic: {
    create: (url: string) =>
      createAnthropicAgentProvider({ baseURL: url, apiKey: 'sk-ant-test', model: 'claude', maxTokens: 64 }),
    input: { messages: [{ role: 'user' as const, content: 'Hi' }] },
    half: sse(
      [
        {
          type: 'message_start',
          message: { id: 'msg_01', type: 'message', role: 'assistant', content: [], model: 'claude', usage: {} },
        },
        { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
        { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Half ' } },
        { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'an ' } },
      ],
      (frame) => (frame as { type: string }).type,
    ),
    whole: sse(
      [
        {
          type: 'message_start',
          message: { id: 'msg_02', type: 'message', role: 'assistant', content: [], model: 'claude', usage: {} },
        },
        { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
        { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'A whole answer.' } },
        { type: 'content_block_stop', index: 0 },
        { type: 'message_delta', delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 4 } },
        { type: 'message_stop' },
      ],
      (frame) => (frame as { type: string }).type,
    ),
  },
  agui: {
    create: (url: string) => createAgUIAgentProvider({ url }),
    input: { messages: [{ id: 'u-1', role: 'user' as const, content: 'Hi' }] },
    half: sse([
      { type: 'RUN_STARTED', threadId: 'thread-1', runId: 'agui-run-1' },
      { type: 'TEXT_MESSAGE_START', messageId: 'msg-1', role: 'assistant' },
      { type: 'TEXT_MESSAGE_CONTENT', messageId: 'msg-1', delta: 'Half ' },
      { type: 'TEXT_MESSAGE_CONTENT', messageId: 'msg-1', delta: 'an ' },
    ]),
    whole: sse([
      { type: 'RUN_STARTED', threadId: 'thread-1', runId: 'agui-run-2' },
      { type: 'TEXT_MESSAGE_START', messageId: 'msg-2', role: 'assistant' },
      { type: 'TEXT_MESSAGE_CONTENT', messageId: 'msg-2', delta: 'A whole answer.' },
      { type: 'TEXT_MESSAGE_END', messageId: 'msg-2' },
      { type: 'RUN_FINISHED', threadId: 'thread-1', runId: 'agui-run-2' },
    ]),
  },
};

/** Sends the frames, then cuts the connection without ending the response: the client sees the socket drop. */
async function cutAfter(response: ServerResponse, frames: readonly string[]): Promise<void> {
  response.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  await writePieces(response, frames);
  response.socket?.destroy();
}

/** A server whose first answer drops mid-answer and whose later ones are whole. */
async function droppingServer(half: readonly string[], whole: readonly string[]): Promise<TestServer> {
  let answered = 0;
  return startHttpServer(async (_request, response) => {
    answered += 1;
    if (answered === 1) {
      await cutAfter(response, half);
      return;
    }
    response.writeHead(200, { 'content-type': 'text/event-stream' });
    await writePieces(response, whole);
    response.end();
  });
}

const assistantText = (state: ReturnType<ReturnType<typeof createAgentStore>['getSnapshot']>) =>
  Object.values(state.messages)
    .filter((message) => message.role === 'assistant')
    .map((message) => [message.content, message.status]);

describe.each(Object.entries(providers))('a %s stream dropped mid-answer (not resumable)', (_name, wire) => {
  it('leaves the connection unrecoverable: the text so far kept, no run.failed made up, nothing retried', async () => {
    server = await droppingServer(wire.half, wire.whole);
    const store = createAgentStore();
    const events: AgentEvent[] = [];
    const changes: AgentConnectionChange['type'][] = [];
    const outcome = await runAgentProvider({
      provider: wire.create(server.url) as AnyAgentProvider,
      input: wire.input,
      sessionId: 's1',
      runId: 'r1',
      onEvent: (event, admission) => {
        events.push(event);
        store.dispatch(event, admission);
      },
      onConnection: (change) => changes.push(change.type),
    }).then(
      () => undefined,
      (error: unknown) => error,
    );

    expect(AgentTransportError.isInstance(outcome) && outcome.code).toBe('network_error');
    expect(changes).toEqual(['connecting', 'connected', 'unrecoverable']);
    expect(events.some((event) => event.type === 'run.failed' || event.type.endsWith('.failed'))).toBe(false);
    const state = store.getSnapshot();
    expect(state.runs.r1?.status).toBe('running');
    expect(assistantText(state)).toEqual([['Half an ', 'streaming']]);
    expect(state.issues).toEqual([]);
    // The request was not sent again: its answer had begun.
    expect(server.requests).toHaveLength(1);
  });
});

describe('a dropped stream through the interaction runtime', () => {
  it('is unrecoverable, stops requesting, and onReload starts again', async () => {
    const wire = providers.openai;
    server = await droppingServer(wire.half, wire.whole);
    const chat = createXChatRuntime({ provider: wire.create(server.url) as AnyAgentProvider });
    const dropped = await chat.request(wire.input).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(AgentTransportError.isInstance(dropped) && dropped.code).toBe('network_error');
    const after = chat.getSnapshot();
    expect(after.connectionState).toBe('unrecoverable');
    expect(after.isRequesting).toBe(false);
    expect(after.error).toBe(dropped);
    const firstRun = Object.keys(after.agentState.runs)[0] as string;
    expect(after.strandedRunIds).toEqual([firstRun]);
    expect(after.messages.at(-1)).toMatchObject({ message: { role: 'assistant', content: 'Half an ' } });

    const reloaded = await chat.request(wire.input);
    expect(reloaded.status).toBe('completed');
    const { connectionState, isRequesting, error, messages, agentState } = chat.getSnapshot();
    expect([connectionState, isRequesting, error]).toEqual(['idle', false, undefined]);
    expect(agentState.runs[firstRun]?.status).toBe('running');
    expect(messages.at(-1)).toMatchObject({ status: 'success', message: { content: 'A whole answer.' } });
  });
});
