import { afterEach, describe, expect, it, vi } from 'vitest';
import { AgentTransportError } from '../../transports/AgentTransportError';
import { createSSETransport, type SSEChunk } from '../../transports/createSSETransport';
import { SSE_HEADERS } from '../support/eventLogServer';
import { startHttpServer, type TestServer, writePieces } from '../support/httpServer';

let server: TestServer | undefined;
afterEach(async () => {
  vi.useRealTimers();
  vi.restoreAllMocks();
  await server?.close();
  server = undefined;
});

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function read(
  stream: AsyncIterable<SSEChunk> | Iterable<SSEChunk>,
  onChunk: (chunk: SSEChunk) => unknown = () => {},
): Promise<{ chunks: SSEChunk[]; error: AgentTransportError | undefined }> {
  const chunks: SSEChunk[] = [];
  try {
    for await (const chunk of stream) {
      chunks.push(chunk);
      await onChunk(chunk);
    }
  } catch (error) {
    if (!AgentTransportError.isInstance(error)) throw error;
    return { chunks, error };
  }
  return { chunks, error: undefined };
}

const signal = () => new AbortController().signal;
const IDLE_MS = 200;

/**
 * The transport's timers on a fake clock, for the cases where a loaded machine's pause would
 * look like a silent server: the idle time passes when the test says so. Sockets stay real.
 */
const useFakeClock = () => vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
/** Lets the idle time pass once the transport, its I/O run, waits on the server again. */
const passIdleTime = (ms: number) => setImmediate(() => vi.advanceTimersByTime(ms));

describe('createSSETransport idle timeout', () => {
  it('ends a stream whose server sends headers and then nothing with timeout', async () => {
    useFakeClock();
    server = await startHttpServer(async (_request, response) => {
      response.writeHead(200, SSE_HEADERS);
      response.write('id: 1\ndata: first\n\n');
    });
    const { chunks, error } = await read(
      createSSETransport({ url: server.url, idleTimeoutMs: IDLE_MS }).open({}, signal()),
      // The server is silent after its first frame.
      () => passIdleTime(IDLE_MS),
    );
    expect(chunks).toEqual([{ id: '1', data: 'first', event: undefined }]);
    expect(error).toMatchObject({ code: 'timeout', message: `${server.url} sent nothing for ${IDLE_MS} ms` });
    // The request is aborted, so the server sees its connection close.
    await server.closed(0);
  });

  it('times out a server that never answers the request', async () => {
    server = await startHttpServer(() => {});
    const { chunks, error } = await read(
      createSSETransport({ url: server.url, idleTimeoutMs: IDLE_MS }).open({}, signal()),
    );
    expect(chunks).toEqual([]);
    expect(error?.code).toBe('timeout');
  });

  it('counts only time spent waiting on the server, not time the consumer spends on frames', async () => {
    useFakeClock();
    server = await startHttpServer(async (_request, response) => {
      response.writeHead(200, SSE_HEADERS);
      for (const piece of ['data: 1\n\n', 'data: 2\n\n', 'data: 3\n\n'])
        await new Promise((resolve) => response.write(piece, resolve));
      response.end();
    });
    const { chunks, error } = await read(
      createSSETransport({ url: server.url, idleTimeoutMs: IDLE_MS }).open({}, signal()),
      // The consumer spends longer than the idle timeout on each frame, on the transport's clock.
      () => vi.advanceTimersByTime(IDLE_MS * 1.5),
    );
    expect(error).toBeUndefined();
    expect(chunks.map((chunk) => chunk.data)).toEqual(['1', '2', '3']);
  });

  it.each([0, Number.POSITIVE_INFINITY])('is off with idleTimeoutMs %s', async (idleTimeoutMs) => {
    server = await startHttpServer(async (_request, response) => {
      response.writeHead(200, SSE_HEADERS);
      await pause(IDLE_MS);
      response.end('data: late\n\n');
    });
    const { chunks, error } = await read(createSSETransport({ url: server.url, idleTimeoutMs }).open({}, signal()));
    expect(error).toBeUndefined();
    expect(chunks.map((chunk) => chunk.data)).toEqual(['late']);
  });

  it('clears its timer on every way out: end, error status, abort, oversized frame, early return', async () => {
    const IDLE = 4321;
    const active = new Set<unknown>();
    const realSetTimeout = globalThis.setTimeout;
    const realClearTimeout = globalThis.clearTimeout;
    vi.spyOn(globalThis, 'setTimeout').mockImplementation(((handler: () => void, delay?: number, ...rest: []) => {
      const timer = realSetTimeout(
        () => {
          active.delete(timer);
          handler();
        },
        delay,
        ...rest,
      );
      if (delay === IDLE) active.add(timer);
      return timer;
    }) as typeof setTimeout);
    vi.spyOn(globalThis, 'clearTimeout').mockImplementation(((timer: ReturnType<typeof setTimeout>) => {
      active.delete(timer);
      realClearTimeout(timer);
    }) as typeof clearTimeout);

    server = await startHttpServer(async (request, response) => {
      if (request.url === '/500') {
        response.writeHead(500);
        response.end('down');
        return;
      }
      response.writeHead(200, SSE_HEADERS);
      if (request.url === '/large') response.write(`data: ${'x'.repeat(100)}\n\n`);
      await writePieces(response, ['data: 1\n\n', 'data: 2\n\n']);
      if (request.url === '/end') response.end();
    });
    const transport = (path: string) =>
      createSSETransport({ url: `${server?.url}${path}`, idleTimeoutMs: IDLE, maxFrameSize: 50 });

    expect((await read(transport('/end').open({}, signal()))).error).toBeUndefined();
    expect(active.size).toBe(0);
    expect((await read(transport('/500').open({}, signal()))).error?.code).toBe('http_error');
    expect(active.size).toBe(0);
    expect((await read(transport('/large').open({}, signal()))).error?.code).toBe('frame_too_large');
    expect(active.size).toBe(0);
    const controller = new AbortController();
    const aborted = await read(transport('/open').open({}, controller.signal), () => controller.abort());
    expect(aborted.error?.code).toBe('aborted');
    expect(active.size).toBe(0);
    for await (const chunk of transport('/open').open({}, signal())) {
      expect(chunk.data).toBe('1');
      break;
    }
    expect(active.size).toBe(0);
  });
});

describe('createSSETransport resume', () => {
  it.each([404, 409, 410, 412, 416, 422])('turns %s to a resume into invalid_cursor', async (status) => {
    server = await startHttpServer((_request, response) => {
      response.writeHead(status, { 'content-type': 'text/plain' });
      response.end('no such cursor');
    });
    const { error } = await read(createSSETransport({ url: server.url }).resume?.({}, 'c7', signal()) ?? []);
    expect(error).toMatchObject({ code: 'invalid_cursor', status, bodyExcerpt: 'no such cursor' });
    expect(error?.message).toContain('resuming after "c7"');
    expect(server.requests[0]?.headers['last-event-id']).toBe('c7');
  });

  it('keeps http_error for those statuses on open, and for other statuses on resume', async () => {
    server = await startHttpServer((request, response) => {
      response.writeHead(request.headers['last-event-id'] === undefined ? 410 : 503);
      response.end();
    });
    const transport = createSSETransport({ url: server.url });
    expect((await read(transport.open({}, signal()))).error).toMatchObject({ code: 'http_error', status: 410 });
    expect((await read(transport.resume?.({}, 'c7', signal()) ?? [])).error).toMatchObject({
      code: 'http_error',
      status: 503,
    });
  });
});
