// The host's chat stream keeps what its own event stream guarantees, read by the `ai`
// package's DefaultChatTransport and readUIMessageStream: authorization asked again on an
// open stream (a refusal ends it as the protocol ends on a failure: an `error` chunk, then
// [DONE]), the bound on readers catching up (503 with Retry-After, before a run starts), and
// the bound on a reader that does not read (its queue, then an `error` chunk).
import { connect } from 'node:net';
import { DefaultChatTransport, readUIMessageStream, type UIMessage, type UIMessageChunk } from 'ai';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createLocalAgentProvider } from '../providers/local/createLocalAgentProvider';
import type { LocalAgentChunk } from '../providers/local/localAgentChunks';
import type { AgentEventLog } from '../server/AgentEventLog';
import { type AgentHostOptions, createAgentHost } from '../server/createAgentHost';
import { createMemoryEventLog } from '../server/createMemoryEventLog';
import { readEvents, serveHost } from './support/hostClient';
import { until } from './support/until';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  vi.useRealTimers();
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function gate() {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { promise, open };
}

/** A local runtime: `before` deltas of text, then it waits for `held`, then one more and the end. */
function heldRuntime(held: Promise<void>, reached: () => void, before: string[]) {
  return createLocalAgentProvider({
    runtime: async function* (): AsyncGenerator<LocalAgentChunk> {
      yield { type: 'text.start', id: 'answer' };
      for (const delta of before) yield { type: 'text.delta', id: 'answer', delta };
      reached();
      await held;
      yield { type: 'text.delta', id: 'answer', delta: 'world' };
      yield { type: 'text.end', id: 'answer' };
      yield { type: 'done' };
    },
  });
}

const userMessage = (text: string): UIMessage => ({
  id: `user-${text}`,
  role: 'user',
  parts: [{ type: 'text', text }],
});

const send = (transport: DefaultChatTransport<UIMessage>, chatId: string, text: string) =>
  transport.sendMessages({
    chatId,
    messages: [userMessage(text)],
    trigger: 'submit-message',
    messageId: undefined,
    abortSignal: undefined,
  });

/** Reads the chunks into `chunks` until `enough` holds. */
async function readUntil(
  reader: ReadableStreamDefaultReader<UIMessageChunk>,
  chunks: UIMessageChunk[],
  enough: (chunks: UIMessageChunk[]) => boolean,
): Promise<void> {
  while (!enough(chunks)) {
    const { done, value } = await reader.read();
    if (done) throw new Error(`The stream ended early: ${JSON.stringify(chunks)}`);
    chunks.push(value);
  }
}

/** The message readUIMessageStream builds from the chunks, and the errors it reported. */
async function messageOf(chunks: UIMessageChunk[]) {
  const errors: string[] = [];
  const stream = new ReadableStream<UIMessageChunk>({
    start(controller) {
      for (const chunk of chunks) controller.enqueue(chunk);
      controller.close();
    },
  });
  let message: UIMessage | undefined;
  for await (const snapshot of readUIMessageStream<UIMessage>({
    stream,
    onError: (error) => errors.push(error instanceof Error ? error.message : String(error)),
  })) {
    message = snapshot;
  }
  const texts = (message?.parts ?? []).filter((part) => part.type === 'text').map((part) => part.text);
  return { message, texts, errors };
}

async function readRest(reader: ReadableStreamDefaultReader<UIMessageChunk>, chunks: UIMessageChunk[]) {
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return chunks;
    chunks.push(value);
  }
}

/** A client that asks for `url` and, once the answer's head came, stops reading (its socket paused). */
function stalledReader(url: string): Promise<{ status: number; close: () => void }> {
  const { hostname, port, pathname, search } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect({ host: hostname, port: Number(port) });
    let head = '';
    socket.once('error', reject);
    socket.on('data', (chunk) => {
      head += chunk.toString('latin1');
      if (!head.includes('\r\n')) return;
      socket.removeAllListeners('data');
      socket.pause();
      resolve({ status: Number(head.split(' ')[1]), close: () => socket.destroy() });
    });
    socket.write(`GET ${pathname}${search} HTTP/1.1\r\nHost: ${hostname}:${port}\r\n\r\n`);
  });
}

describe('the chat stream on the host', () => {
  it('asks authorize again every reauthorizeMs, and a refusal ends the useChat stream with an error chunk', async () => {
    const held = gate();
    const reached = gate();
    const access = { allowed: true, reads: 0 };
    const clock = { now: Date.now() };
    const host = createAgentHost({
      providers: { assistant: heldRuntime(held.promise, reached.open, ['Hello ']) },
      basePath: '/api/agent',
      uiMessageStream: { provider: 'assistant' },
      authorize: (_request, { action }) => {
        if (action === 'read') access.reads += 1;
        return access.allowed;
      },
      // The stream's clock: moved on by the test, so the periodic check falls due at once.
      now: () => clock.now,
      reauthorizeMs: 60_000,
      // Each silent heartbeat lets the stream look at the clock.
      heartbeatMs: 5,
      onError: () => {},
    });
    const served = await serveHost(host.fetch);
    cleanups.push(async () => {
      held.open();
      await served.close();
      await host.close();
    });
    const transport = new DefaultChatTransport<UIMessage>({ api: `${served.url}/api/agent/chat` });
    const reader = (await send(transport, 'revoked', 'Hi')).getReader();
    const chunks: UIMessageChunk[] = [];
    await readUntil(reader, chunks, (seen) => seen.some((chunk) => chunk.type === 'text-delta'));
    await reached.promise;
    // The stream opened before its run started: it asked again before the run's first frames.
    expect(access.reads).toBe(1);

    // Still allowed when the periodic check falls due: the stream goes on.
    clock.now += 60_000;
    await until(() => access.reads === 2, 'the periodic check');
    access.allowed = false;
    clock.now += 60_000;
    await readRest(reader, chunks);
    expect(access.reads).toBe(3);
    expect(chunks.at(-1)).toEqual({ type: 'error', errorText: 'Not allowed to read in this session' });
    const { texts, errors } = await messageOf(chunks);
    expect(texts).toEqual(['Hello ']);
    expect(errors).toEqual(['Not allowed to read in this session']);

    // The run itself goes on to its end; only the revoked reader stopped.
    held.open();
    let status: string | undefined;
    for (let turn = 0; turn < 10_000 && status !== 'completed'; turn += 1) {
      status = Object.values((await host.getState('revoked')).state.runs)[0]?.status;
      if (status !== 'completed') await new Promise((resolve) => setImmediate(resolve));
    }
    expect(status).toBe('completed');
  });

  it('answers 503 with Retry-After when no reader may catch up, before a user message starts a run', async () => {
    const host = createAgentHost({
      providers: {
        // Four hundred messages of 16 KB: more than sockets buffer for a client that does not read.
        many: createLocalAgentProvider({
          script: {
            steps: Array.from({ length: 400 }, (_, i) => ({ type: 'text', deltas: [`${i} ${'w'.repeat(16_000)}`] })),
          },
        }),
      },
      basePath: '/api/agent',
      uiMessageStream: { provider: 'many' },
      maxCatchUpReaders: 1,
      pageSize: 5,
      feedCapacity: 8,
      maxQueuedBytes: 512,
      onError: () => {},
    } satisfies AgentHostOptions);
    const served = await serveHost(host.fetch);
    cleanups.push(async () => {
      await served.close();
      await host.close();
    });
    const base = `${served.url}/api/agent`;
    await host.startRun('busy', { provider: 'many', input: {}, runId: 'r1' });
    await readEvents(`${base}/sessions/busy/events?runId=r1`, {
      stop: (frames) => frames.some((frame) => frame.data.includes('"run.completed"')),
      timeoutMs: 60_000,
    });
    // A reader from the session's start that does not read holds the one place.
    const stalled = await stalledReader(`${base}/sessions/busy/events`);
    expect(stalled.status).toBe(200);

    const refused = await fetch(`${base}/chat`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ id: 'busy', trigger: 'submit-message', messages: [userMessage('Again')] }),
    });
    expect([refused.status, refused.headers.get('retry-after')]).toEqual([503, '1']);
    expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('unavailable');
    const transport = new DefaultChatTransport<UIMessage>({ api: `${base}/chat` });
    await expect(send(transport, 'busy', 'Again')).rejects.toThrow(/"code":"unavailable"/);
    // Refused before anything started: the session still has its one run.
    expect(Object.keys((await host.getState('busy')).state.runs)).toEqual(['r1']);

    // Its place given back, the same message is taken and streamed.
    stalled.close();
    let stream: ReadableStream<UIMessageChunk> | undefined;
    // The host hears of the closed socket a moment later: the client tries again, as Retry-After says.
    for (let attempt = 0; stream === undefined && attempt < 5_000; attempt += 1) {
      stream = await send(transport, 'busy', 'Again').catch(() => undefined);
      if (stream === undefined) await new Promise((resolve) => setTimeout(resolve, 2));
    }
    const chunks = await readRest((stream as ReadableStream<UIMessageChunk>).getReader(), []);
    expect(chunks.at(-1)).toEqual({ type: 'finish', finishReason: 'stop' });
    expect(chunks.filter((chunk) => chunk.type === 'text-start')).toHaveLength(400);
  });

  it('bounds a reader that does not read: the host stops reading for it past maxQueuedBytes, and ends it with an error chunk after slowReaderMs', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const held = gate();
    const reached = gate();
    const deltas = Array.from({ length: 40 }, (_, i) => `${i}${'x'.repeat(1_000)} `);
    const host = createAgentHost({
      providers: { assistant: heldRuntime(held.promise, reached.open, deltas) },
      basePath: '/api/agent',
      uiMessageStream: { provider: 'assistant' },
      maxQueuedBytes: 2_048,
      pageSize: 4,
      slowReaderMs: 30_000,
      onError: () => {},
    });
    cleanups.push(async () => {
      held.open();
      await host.close();
    });
    // The transport calls the host's handler itself: no socket buffers in between, the
    // host's queue is all that holds what the client has not read.
    const transport = new DefaultChatTransport<UIMessage>({
      api: 'http://host.test/api/agent/chat',
      fetch: (input, init) => host.fetch(new Request(input, init)),
    });
    const stream = await send(transport, 'slow', 'Hi');
    await reached.promise;
    // Everything the run wrote reaches the log and the reader's queue, which the client does not read.
    const yieldToHost = () => new Promise((resolve) => setImmediate(resolve));
    for (let turn = 0; turn < 200; turn += 1) {
      const { state } = await host.getState('slow');
      const text = Object.values(state.messages).find((message) => message.role === 'assistant')?.content;
      if (typeof text === 'string' && text.length >= 40 * 1_002) break;
      await yieldToHost();
    }
    for (let turn = 0; turn < 50; turn += 1) await yieldToHost();

    await vi.advanceTimersByTimeAsync(30_000);
    vi.useRealTimers();
    const chunks = await readRest(stream.getReader(), []);
    expect(chunks.at(-1)).toEqual({
      type: 'error',
      errorText: 'The stream was read too slowly and was ended: resume it',
    });
    // It got what was queued when it fell behind, far from all 40 deltas.
    const received = chunks.filter((chunk) => chunk.type === 'text-delta');
    expect(received.length).toBeGreaterThan(0);
    expect(received.length).toBeLessThan(20);
    const { errors } = await messageOf(chunks);
    expect(errors).toEqual(['The stream was read too slowly and was ended: resume it']);
  });
  it("resumes from where the message's first run started in the log, not from the session's start", async () => {
    const held = gate();
    const reached = gate();
    const inner = createMemoryEventLog();
    const entriesRead = { count: 0 };
    const log: AgentEventLog = {
      ...inner,
      read: async (sessionId, options) => {
        const page = await inner.read(sessionId, options);
        entriesRead.count += page.length;
        return page;
      },
    };
    const host = createAgentHost({
      providers: {
        assistant: heldRuntime(held.promise, reached.open, ['Hello ']),
        chatty: createLocalAgentProvider({
          script: { steps: [{ type: 'text', deltas: Array.from({ length: 100 }, (_, i) => `${i} `) }] },
        }),
      },
      eventLog: log,
      basePath: '/api/agent',
      uiMessageStream: { provider: 'assistant' },
      onError: () => {},
    });
    const served = await serveHost(host.fetch);
    cleanups.push(async () => {
      held.open();
      await served.close();
      await host.close();
      await inner.close();
    });
    const base = `${served.url}/api/agent`;
    // A session with a long history: three runs of a hundred deltas each.
    for (const runId of ['h1', 'h2', 'h3']) {
      await host.startRun('long', { provider: 'chatty', input: {}, runId });
      await readEvents(`${base}/sessions/long/events?runId=${runId}`, {
        stop: (frames) => frames.some((frame) => frame.data.includes('"run.completed"')),
      });
    }
    const transport = new DefaultChatTransport<UIMessage>({ api: `${base}/chat` });
    const first = (await send(transport, 'long', 'Hi')).getReader();
    const before: UIMessageChunk[] = [];
    await readUntil(first, before, (chunks) => chunks.some((chunk) => chunk.type === 'text-delta'));
    await reached.promise;
    await first.cancel();
    const { state, cursor } = await host.getState('long');
    const started = Object.values(state.runs).find((run) => run.id !== 'h1' && run.id !== 'h2' && run.id !== 'h3');
    // The host noted where the log was when it started the run; the history's first run had nothing before it.
    expect(started?.meta).toMatchObject({
      agentMachines: { hostProvider: 'assistant', startsAfter: expect.any(String) },
    });
    expect(state.runs.h1?.meta).toEqual({ agentMachines: { hostProvider: 'chatty' } });
    expect(Number(cursor)).toBeGreaterThan(300);

    const readBefore = entriesRead.count;
    const resumed = (await transport.reconnectToStream({ chatId: 'long' }))?.getReader();
    expect(resumed).toBeDefined();
    const replayed: UIMessageChunk[] = [];
    await readUntil(resumed as ReadableStreamDefaultReader<UIMessageChunk>, replayed, (chunks) =>
      chunks.some((chunk) => chunk.type === 'text-delta'),
    );
    expect(replayed[0]).toEqual({ type: 'start', messageId: started?.id });
    expect(replayed.filter((chunk) => chunk.type === 'text-delta').map((chunk) => chunk.delta)).toEqual(['Hello ']);
    // Only the run's own few events were read from the log, none of the three hundred before it.
    expect(entriesRead.count - readBefore).toBeLessThan(20);
    held.open();
    const rest = await readRest(resumed as ReadableStreamDefaultReader<UIMessageChunk>, replayed);
    expect((await messageOf(rest)).texts).toEqual(['Hello world']);
  });
});
