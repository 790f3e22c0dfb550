import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { WebSocket, WebSocketServer } from 'ws';
import type { AgentEvent } from '../../protocol/eventSchemas';
import type { AgentProvider } from '../../providers/AgentProvider';
import { AGENT_EVENT_TYPE_GROUPS, eventTypesOf } from '../../providers/eventTypeGroups';
import { AgentTransportError } from '../../transports/AgentTransportError';
import {
  createWebSocketTransport,
  type WebSocketConstructor,
  type WebSocketTransportOptions,
} from '../../transports/createWebSocketTransport';
import { answerRun, isRetryableTransportError } from '../support/eventLogServer';
import { describeChanges, runLog } from '../support/runLog';

let server: WebSocketServer | undefined;
afterEach(async () => {
  vi.useRealTimers();
  for (const client of server?.clients ?? []) client.terminate();
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  server = undefined;
});

interface Connection {
  first: unknown;
  closeCode?: number;
}

/** A ws server on 127.0.0.1 that hands each connection's first message to `onFirst`. */
async function startServer(
  onFirst: (socket: WebSocket, message: unknown, index: number) => void,
): Promise<{ url: string; connections: Connection[] }> {
  const connections: Connection[] = [];
  server = new WebSocketServer({ host: '127.0.0.1', port: 0 });
  server.on('connection', (socket) => {
    const connection: Connection = { first: undefined };
    const index = connections.push(connection) - 1;
    socket.once('message', (data) => {
      const text = String(data);
      connection.first = text.startsWith('{') ? JSON.parse(text) : text;
      onFirst(socket, connection.first, index);
    });
    socket.on('close', (code) => {
      connection.closeCode = code;
    });
  });
  await new Promise<void>((resolve) => server?.once('listening', () => resolve()));
  const { port } = server.address() as AddressInfo;
  return { url: `ws://127.0.0.1:${port}`, connections };
}

const transportFor = <Frame = unknown>(url: string, options: Partial<WebSocketTransportOptions<unknown, Frame>> = {}) =>
  createWebSocketTransport<unknown, Frame>({
    url,
    WebSocket: WebSocket as unknown as WebSocketConstructor,
    ...options,
  });

async function read(stream: AsyncIterable<unknown> | Iterable<unknown>) {
  const frames: unknown[] = [];
  let error: AgentTransportError | undefined;
  try {
    for await (const frame of stream) frames.push(frame);
  } catch (caught) {
    if (!AgentTransportError.isInstance(caught)) throw caught;
    error = caught;
  }
  return { frames, error };
}

const waitFor = async (check: () => boolean) => {
  for (let attempt = 0; attempt < 100 && !check(); attempt += 1)
    await new Promise((resolve) => setTimeout(resolve, 10));
};
const signal = () => new AbortController().signal;
const IDLE_MS = 200;

/**
 * The transport's idle timer on a fake clock (its timers and `Date.now`), so a loaded machine's
 * pause never looks like a silent socket: the idle time passes when the test says so.
 */
const useFakeClock = () => vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });

/** `stream`, calling `afterFrame(n)` once the consumer has taken frame `n` and asks for more. */
async function* tapped<Frame>(stream: AsyncIterable<Frame>, afterFrame: (n: number) => void): AsyncGenerator<Frame> {
  let n = 0;
  for await (const frame of stream) {
    yield frame;
    n += 1;
    afterFrame(n);
  }
}

describe('createWebSocketTransport idle timeout', () => {
  it('ends a silent socket with timeout and closes it', async () => {
    useFakeClock();
    const { url, connections } = await startServer((socket) => socket.send(JSON.stringify({ id: 'c1', n: 1 })));
    const { frames, error } = await read(
      // The socket is silent after its first frame: the idle time passes.
      tapped(transportFor(url, { idleTimeoutMs: IDLE_MS }).open({ prompt: 'hi' }, signal()), () =>
        setImmediate(() => vi.advanceTimersByTime(IDLE_MS)),
      ),
    );
    expect(frames).toEqual([{ id: 'c1', n: 1 }]);
    expect(error).toMatchObject({ code: 'timeout', message: `WebSocket ${url} sent nothing for ${IDLE_MS} ms` });
    vi.useRealTimers();
    await waitFor(() => connections[0]?.closeCode !== undefined);
    expect(connections[0]?.closeCode).toBe(1000);
  });

  it('keeps a socket that sends more often than the timeout, and is off with 0', async () => {
    useFakeClock();
    // Five frames, with half the idle timeout passing on the client's clock before each next
    // one: 500 ms in all, never 200 ms without a frame.
    let sendNext: () => void = () => {};
    const { url } = await startServer((socket) => {
      let n = 0;
      sendNext = () => {
        n += 1;
        if (n <= 5) socket.send(JSON.stringify({ n }));
        else socket.close(1000);
      };
      sendNext();
    });
    const steady = await read(
      tapped(transportFor(url, { idleTimeoutMs: IDLE_MS }).open({}, signal()), () => {
        vi.advanceTimersByTime(IDLE_MS / 2);
        sendNext();
      }),
    );
    expect(steady.error).toBeUndefined();
    expect(steady.frames).toHaveLength(5);
    const off = await read(
      tapped(transportFor(url, { idleTimeoutMs: 0 }).open({}, signal()), () => {
        vi.advanceTimersByTime(IDLE_MS * 10);
        sendNext();
      }),
    );
    expect(off.error).toBeUndefined();
    expect(off.frames).toHaveLength(5);
  });
});

describe('createWebSocketTransport resume', () => {
  it('reads cursors from `id` or `cursor`, and resumes with a cursor message on a new socket', async () => {
    const frames = [{ id: 'c1' }, { cursor: 'c2' }, { id: 'c3' }, { cursor: 'c4' }];
    const { url, connections } = await startServer((socket, message) => {
      const { cursor } = message as { cursor?: string };
      const from = cursor === undefined ? 0 : frames.findIndex((frame) => (frame.id ?? frame.cursor) === cursor) + 1;
      for (const frame of frames.slice(from)) socket.send(JSON.stringify(frame));
      socket.close(1000);
    });
    const transport = transportFor(url);
    expect(frames.map((frame) => transport.getCursor?.(frame))).toEqual(['c1', 'c2', 'c3', 'c4']);
    expect([transport.getCursor?.({ id: 7 }), transport.getCursor?.('c1')]).toEqual([undefined, undefined]);

    const resumed = await read(transport.resume?.({ prompt: 'hi' }, 'c2', signal()) ?? []);
    expect(resumed).toEqual({ frames: [{ id: 'c3' }, { cursor: 'c4' }], error: undefined });
    expect(connections[0]?.first).toEqual({ type: 'resume', cursor: 'c2', request: { prompt: 'hi' } });
  });

  it('sends the message resumeMessage makes, and reads cursors with cursorOf', async () => {
    const { url, connections } = await startServer((socket) => {
      socket.send(JSON.stringify({ offset: 12 }));
      socket.close(1000);
    });
    const transport = transportFor<{ offset: number }>(url, {
      resumeMessage: (_request, cursor) => `RESUME ${cursor}`,
      cursorOf: (frame) => String(frame.offset),
    });
    const { frames } = await read(transport.resume?.({}, '11', signal()) ?? []);
    expect(frames).toEqual([{ offset: 12 }]);
    expect(connections[0]?.first).toBe('RESUME 11');
    expect(transport.getCursor?.({ offset: 12 })).toBe('12');
  });

  it('carries a run across a dropped socket: the runner resumes after the last event cursor', async () => {
    const run = answerRun();
    const { url, connections } = await startServer((socket, message, index) => {
      if (index === 0) {
        for (const event of run.slice(0, 5)) socket.send(JSON.stringify(event));
        setTimeout(() => socket.terminate(), 20);
        return;
      }
      const { cursor } = message as { cursor: string };
      const from = run.findIndex((event) => event.eventId === cursor) + 1;
      // Two repeats before the rest.
      for (const event of run.slice(from - 2)) socket.send(JSON.stringify(event));
      socket.close(1000);
    });
    const provider: AgentProvider<{ prompt: string }, { prompt: string }, AgentEvent, undefined> = {
      id: 'event-socket',
      protocol: { name: 'agent-event', version: '0.1' },
      capabilities: {
        eventTypes: eventTypesOf(Object.keys(AGENT_EVENT_TYPE_GROUPS) as Array<keyof typeof AGENT_EVENT_TYPE_GROUPS>),
        transports: ['websocket'],
        resumable: true,
      },
      // Our events name themselves: the event id is the cursor.
      transport: transportFor<AgentEvent>(url, { cursorOf: (event) => event.eventId }) as AgentProvider<
        { prompt: string },
        { prompt: string },
        AgentEvent,
        undefined
      >['transport'],
      createContext: () => undefined,
      start: () => [],
      prepareRequest: (input) => input,
      transformChunk: (event) => [event],
      flush: () => [],
      transformError: () => [],
      classifyError: (error) => ({ retryable: isRetryableTransportError(error) }),
    };
    const outcome = await runLog(provider);

    expect(outcome.result?.status).toBe('completed');
    expect(outcome.events).toEqual(run);
    expect(outcome.state.issues).toEqual([]);
    expect(outcome.cursors).toEqual(run.map((event) => event.eventId));
    expect(connections.map((connection) => connection.first)).toEqual([
      { prompt: 'Summarize the log' },
      { type: 'resume', cursor: run[4]?.eventId, request: { prompt: 'Summarize the log' } },
    ]);
    expect(describeChanges(outcome.changes)).toEqual([
      'connecting 0',
      'connected',
      'reconnecting 1 2',
      'connecting 1',
      'connected',
      'closed',
    ]);
    expect(outcome.changes[2]).toMatchObject({ error: { code: 'abnormal_close', closeCode: 1006 } });
  });
});
