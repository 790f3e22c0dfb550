import { afterEach, describe, expect, it, vi } from 'vitest';
import { createAgentStore } from '../machines/createAgentStore';
import { AGENT_EVENT_ADMITTED } from '../protocol/admittedEvents';
import type { AgentEvent, AgentEventType } from '../protocol/eventSchemas';
import type { AgentProvider } from '../providers/AgentProvider';
import { AgentProviderError } from '../providers/AgentProviderError';
import { type AgentRunEmitter, createAgentRunEmitter } from '../providers/createAgentRunEmitter';
import { runAgentProvider } from '../providers/runAgentProvider';
import { validateAgentProviderEvents } from '../providers/testing/validateAgentProviderEvents';
import { toAgentErrorInfo } from '../providers/toAgentErrorInfo';
import type { AgentTransport } from '../transports/AgentTransport';
import { isAbortError } from '../transports/AgentTransportError';
import { createAsyncIterableTransport } from '../transports/createAsyncIterableTransport';
import { createSSETransport, type SSEChunk } from '../transports/createSSETransport';
import { startHttpServer, type TestServer, writePieces } from './support/httpServer';

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const EVENT_TYPES: AgentEventType[] = [
  'run.started',
  'run.completed',
  'run.failed',
  'run.cancelled',
  'message.started',
  'message.delta',
  'message.completed',
  'message.failed',
  'message.cancelled',
];

interface Context {
  events: AgentRunEmitter;
}

/** A provider whose chunks are `{ delta }` texts of one assistant message, ending at `{ done: true }`. */
function textProvider<Chunk>(
  transport: AgentTransport<{ prompt: string }, Chunk>,
  read: (chunk: Chunk) => { delta?: string; done?: boolean },
  overrides: Partial<AgentProvider<{ prompt: string }, { prompt: string }, Chunk, Context>> = {},
): AgentProvider<{ prompt: string }, { prompt: string }, Chunk, Context> {
  return {
    id: 'text',
    protocol: { name: 'agent-event', version: '0.1' },
    capabilities: { eventTypes: EVENT_TYPES, transports: [transport.kind] },
    transport,
    createContext: (options) => ({ events: createAgentRunEmitter(options) }),
    start: (input, { events }) => [
      events.emit('run.started', { input }),
      events.emit('message.started', { messageId: 'answer', role: 'assistant' }),
    ],
    prepareRequest: (input) => input,
    transformChunk(chunk, { events }) {
      const { delta, done } = read(chunk);
      if (done) return [events.emit('message.completed', { messageId: 'answer' }), events.emit('run.completed', {})];
      return delta === undefined ? [] : [events.emit('message.delta', { messageId: 'answer', delta })];
    },
    flush: ({ events }) =>
      events.close({ type: 'failed', error: { message: 'stream ended early', code: 'incomplete_stream' } }),
    transformError: (error, { events }) =>
      events.close(
        isAbortError(error)
          ? { type: 'cancelled', reason: 'aborted' }
          : { type: 'failed', error: toAgentErrorInfo(error) },
      ),
    ...overrides,
  };
}

const sseProvider = (url: string) =>
  textProvider(createSSETransport<{ prompt: string }>({ url }), (chunk: SSEChunk) =>
    chunk.data === '[DONE]' ? { done: true } : { delta: (JSON.parse(chunk.data) as { delta: string }).delta },
  );

const localProvider = (chunks: Array<{ delta?: string; done?: boolean } | Error>) =>
  textProvider(
    createAsyncIterableTransport(async function* () {
      for (const chunk of chunks) {
        if (chunk instanceof Error) throw chunk;
        yield chunk;
      }
    }),
    (chunk) => chunk,
  );

async function runInto(
  provider: Parameters<typeof runAgentProvider>[0]['provider'],
  extra: { signal?: AbortSignal } = {},
) {
  const store = createAgentStore({ protocolMode: 'strict' });
  const events: AgentEvent[] = [];
  const result = await runAgentProvider({
    provider,
    input: { prompt: 'hi' },
    sessionId: 's1',
    runId: 'r1',
    ...extra,
    onEvent: (event) => {
      events.push(event);
      store.dispatch(event);
    },
  });
  return {
    result,
    events,
    state: store.getSnapshot(),
    issues: validateAgentProviderEvents(provider.capabilities, events),
  };
}

describe('runAgentProvider over a real SSE server', () => {
  it('streams a run into the store and reports each cursor after its events', async () => {
    server = await startHttpServer(async (_request, response) => {
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      await writePieces(response, [
        'id: c1\ndata: {"delta":"Hel"}\n\n',
        'id: c2\ndata: {"delta":"lo"}\n\ndata: [DONE]\n\n',
      ]);
      response.end();
    });
    const order: string[] = [];
    const store = createAgentStore();
    const result = await runAgentProvider({
      provider: sseProvider(server.url),
      input: { prompt: 'hi' },
      sessionId: 's1',
      runId: 'r1',
      onEvent: (event) => {
        order.push(event.type);
        store.dispatch(event);
      },
      onCursor: (cursor) => order.push(`cursor ${cursor}`),
    });
    expect(result).toEqual({ runId: 'r1', status: 'completed' });
    expect(order).toEqual([
      'run.started',
      'message.started',
      'message.delta',
      'cursor c1',
      'message.delta',
      'cursor c2',
      'message.completed',
      'run.completed',
    ]);
    expect(store.getSnapshot().messages['r1:answer']).toMatchObject({ content: 'Hello', status: 'completed' });
    expect(JSON.parse(server.requests[0]?.body ?? '')).toEqual({ prompt: 'hi' });
  });

  it('refuses an unsupported protocol version before making any request', async () => {
    server = await startHttpServer((_request, response) => {
      response.end();
    });
    const provider = { ...sseProvider(server.url), protocol: { name: 'agent-event', version: '0.2' } } as never;
    await expect(runInto(provider)).rejects.toMatchObject({ name: 'AgentProviderError', code: 'unsupported_protocol' });
    expect(server.requests).toEqual([]);
  });

  it('refuses an undeclared transport before making any request', async () => {
    server = await startHttpServer((_request, response) => {
      response.end();
    });
    const provider = sseProvider(server.url);
    const undeclared = { ...provider, capabilities: { ...provider.capabilities, transports: ['websocket'] as const } };
    await expect(runInto(undeclared)).rejects.toMatchObject({ code: 'undeclared_transport' });
    expect(server.requests).toEqual([]);
  });

  it('ends the run failed when the server answers 500, through transformError', async () => {
    server = await startHttpServer((_request, response) => {
      response.writeHead(500, { 'content-type': 'application/json' });
      response.end('{"error":"overloaded"}');
    });
    const provider = sseProvider(server.url);
    const transformError = vi.spyOn(provider, 'transformError');
    const { result, events, issues, state } = await runInto(provider);
    expect(result.status).toBe('failed');
    expect(transformError).toHaveBeenCalledTimes(1);
    expect(events.map((event) => event.type)).toEqual([
      'run.started',
      'message.started',
      'message.failed',
      'run.failed',
    ]);
    expect(state.runs.r1?.error).toMatchObject({ code: 'http_error', message: expect.stringContaining('500') });
    expect(issues).toEqual([]);
  });

  it('turns an abort into entity cancellations then run.cancelled, and the signal reaches the server', async () => {
    server = await startHttpServer((_request, response) => {
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      response.write('data: {"delta":"partial"}\n\n');
    });
    const controller = new AbortController();
    const provider = sseProvider(server.url);
    const store = createAgentStore();
    const events: AgentEvent[] = [];
    const result = await runAgentProvider({
      provider,
      input: { prompt: 'hi' },
      sessionId: 's1',
      runId: 'r1',
      signal: controller.signal,
      onEvent: (event) => {
        events.push(event);
        store.dispatch(event);
        if (event.type === 'message.delta') setTimeout(() => controller.abort(), 10);
      },
    });
    expect(result.status).toBe('cancelled');
    expect(events.slice(-2).map((event) => event.type)).toEqual(['message.cancelled', 'run.cancelled']);
    expect(store.getSnapshot().messages['r1:answer']).toMatchObject({ status: 'cancelled', content: 'partial' });
    await server.closed(0);
  });
});

describe('runAgentProvider error isolation', () => {
  it('rethrows what onEvent throws, unchanged, and never calls transformError with it', async () => {
    const provider = localProvider([{ delta: 'a' }, { done: true }]);
    const transformError = vi.spyOn(provider, 'transformError');
    const failure = new Error('render failed');
    await expect(
      runAgentProvider({
        provider,
        input: { prompt: 'hi' },
        sessionId: 's1',
        onEvent: (event) => {
          if (event.type === 'message.delta') throw failure;
        },
      }),
    ).rejects.toBe(failure);
    expect(transformError).not.toHaveBeenCalled();
  });

  it('rethrows what onCursor throws, unchanged', async () => {
    const provider = localProvider([{ delta: 'a' }, { done: true }]);
    const transport = { ...provider.transport, getCursor: () => 'c' };
    const failure = new Error('storage full');
    await expect(
      runAgentProvider({
        provider: { ...provider, transport },
        input: { prompt: 'hi' },
        sessionId: 's1',
        onEvent: () => {},
        onCursor: () => {
          throw failure;
        },
      }),
    ).rejects.toBe(failure);
  });

  it('fails the run through transformError when the runtime throws', async () => {
    const { result, events, issues } = await runInto(localProvider([{ delta: 'a' }, new Error('model crashed')]));
    expect(result.status).toBe('failed');
    expect((result.error as Error).message).toBe('model crashed');
    expect(events.slice(-2).map((event) => event.type)).toEqual(['message.failed', 'run.failed']);
    expect(issues).toEqual([]);
  });

  it('rejects an event of another run with AgentProviderError, and still ends the run', async () => {
    const provider = localProvider([{ delta: 'a' }, { done: true }]);
    const foreign = {
      ...provider,
      transformChunk: () => [
        {
          ...createAgentRunEmitter({ sessionId: 's1', runId: 'other', initialSequence: 10, now: Date.now }).emit(
            'message.delta',
            { messageId: 'answer', delta: 'x' },
          ),
        },
      ],
    };
    const transformError = vi.spyOn(foreign, 'transformError');
    const events: AgentEvent[] = [];
    const error = await runAgentProvider({
      provider: foreign,
      input: { prompt: 'hi' },
      sessionId: 's1',
      runId: 'r1',
      onEvent: (event) => events.push(event),
    }).catch((caught: unknown) => caught);
    expect(AgentProviderError.isInstance(error)).toBe(true);
    expect(error).toMatchObject({ code: 'invalid_event', event: { runId: 'other' } });
    expect((error as AgentProviderError).reason).toContain('run "other" in run "r1"');
    expect(transformError).not.toHaveBeenCalled();
    expect(events.map((event) => event.type)).toEqual([
      'run.started',
      'message.started',
      'message.failed',
      'run.failed',
    ]);
    expect(events.at(-1)?.payload).toMatchObject({ error: { code: 'provider_error' } });
  });

  it.each([
    [
      'another session',
      (events: AgentRunEmitter) => ({
        ...events.emit('message.delta', { messageId: 'answer', delta: 'x' }),
        sessionId: 'other',
      }),
      'session "other"',
    ],
    [
      'an undeclared type',
      (events: AgentRunEmitter) => events.emit('tool.requested', { toolCallId: 't', name: 'x' }),
      'do not declare',
    ],
    [
      'an invalid payload',
      (events: AgentRunEmitter) => ({
        ...events.emit('message.delta', { messageId: 'answer', delta: 'x' }),
        payload: { delta: 1 },
      }),
      'payload',
    ],
    [
      'a repeated sequence',
      (events: AgentRunEmitter) => ({
        ...events.emit('message.delta', { messageId: 'answer', delta: 'x' }),
        sequence: 1,
      }),
      'sequence 1',
    ],
  ])('rejects %s', async (_name, make, reason) => {
    const provider = localProvider([{ delta: 'a' }]);
    const bad = {
      ...provider,
      transformChunk: (_chunk: unknown, context: Context) => [make(context.events) as AgentEvent],
    };
    const error = await runAgentProvider({
      provider: bad,
      input: { prompt: 'hi' },
      sessionId: 's1',
      onEvent: () => {},
    }).catch((caught: unknown) => caught);
    expect(AgentProviderError.isInstance(error) && error.reason).toContain(reason);
  });

  it('ends the run itself when a provider leaves it open', async () => {
    const provider = { ...localProvider([{ delta: 'a' }]), flush: () => [] };
    const { result, events, issues } = await runInto(provider);
    expect(result.status).toBe('failed');
    expect(events.slice(-2).map((event) => event.type)).toEqual(['message.failed', 'run.failed']);
    expect(events.at(-1)?.payload).toMatchObject({ error: { code: 'missing_run_terminal' } });
    expect(issues).toEqual([]);
  });

  it('resumes from a cursor: no start events, sequences continue, the transport resumes', async () => {
    const resumed: string[] = [];
    const transport: AgentTransport<{ prompt: string }, { delta?: string; done?: boolean }> = {
      kind: 'async-iterable',
      open: () => {
        throw new Error('open must not be called on resume');
      },
      async *resume(_request, cursor) {
        resumed.push(cursor);
        yield { delta: 'more' };
        yield { done: true };
      },
    };
    const provider = textProvider(transport, (chunk) => chunk);
    const resumable = { ...provider, capabilities: { ...provider.capabilities, resumable: true } };
    const events: AgentEvent[] = [];
    const result = await runAgentProvider({
      provider: resumable,
      input: { prompt: 'hi' },
      sessionId: 's1',
      runId: 'r1',
      resume: { cursor: 'c9', lastSequence: 41 },
      onEvent: (event) => events.push(event),
    });
    expect(result.status).toBe('completed');
    expect(resumed).toEqual(['c9']);
    expect(events.map((event) => [event.type, event.sequence])).toEqual([
      ['message.delta', 42],
      ['message.completed', 43],
      ['run.completed', 44],
    ]);
    await expect(
      runAgentProvider({
        provider,
        input: { prompt: 'hi' },
        sessionId: 's1',
        resume: { cursor: 'c', lastSequence: 1 },
        onEvent: () => {},
      }),
    ).rejects.toMatchObject({ code: 'resume_unsupported' });
  });
});

describe('runAgentProvider marks the events it admits', () => {
  it('hands onEvent the very object the provider emitted, with its admission token', async () => {
    const provider = localProvider([{ delta: 'a' }, { done: true }]);
    const emitted: AgentEvent[] = [];
    const recording = {
      ...provider,
      transformChunk: (chunk: { delta?: string; done?: boolean }, context: Context) => {
        const events = provider.transformChunk(chunk, context);
        emitted.push(...events);
        return events;
      },
    };
    const received: AgentEvent[] = [];
    const admittedOnArrival: boolean[] = [];
    const result = await runAgentProvider({
      provider: recording,
      input: { prompt: 'hi' },
      sessionId: 's1',
      runId: 'r1',
      onEvent: (event, admission) => {
        admittedOnArrival.push(admission === AGENT_EVENT_ADMITTED);
        received.push(event);
      },
    });
    expect(result.status).toBe('completed');
    expect(emitted.map((event) => event.type)).toEqual(['message.delta', 'message.completed', 'run.completed']);
    for (const event of emitted) expect(received).toContain(event);
    expect(received).toHaveLength(5);
    expect(admittedOnArrival).toEqual([true, true, true, true, true]);
  });

  it('never hands on an event it refuses', async () => {
    const provider = localProvider([{ delta: 'a' }]);
    const foreign = createAgentRunEmitter({ sessionId: 's1', runId: 'other', initialSequence: 10, now: Date.now }).emit(
      'message.delta',
      { messageId: 'answer', delta: 'x' },
    );
    const refusing = { ...provider, transformChunk: () => [foreign] };
    const received: AgentEvent[] = [];
    const error = await runAgentProvider({
      provider: refusing,
      input: { prompt: 'hi' },
      sessionId: 's1',
      runId: 'r1',
      onEvent: (event) => received.push(event),
    }).catch((caught: unknown) => caught);
    expect(AgentProviderError.isInstance(error) && error.event).toBe(foreign);
    expect(received).not.toContain(foreign);
    expect(received).toHaveLength(4);
  });

  it('with the token, the store does not validate an event again; without it, it does', () => {
    const event = createAgentRunEmitter({ sessionId: 's1', runId: 'r1', initialSequence: 0, now: () => 1 }).emit(
      'run.started',
      { title: 7 as unknown as string },
    );
    const trusting = createAgentStore();
    trusting.dispatch(event, AGENT_EVENT_ADMITTED);
    expect(trusting.getSnapshot().runs.r1?.status).toBe('running');
    const checking = createAgentStore();
    checking.dispatch(event);
    expect(checking.getSnapshot().issues.map((issue) => issue.code)).toEqual(['invalid_event']);
  });
});
