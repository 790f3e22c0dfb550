import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { AgentTransportError } from '../../transports/AgentTransportError';
import { createSSETransport, type SSEChunk } from '../../transports/createSSETransport';
import { startHttpServer, type TestServer, writePieces } from '../support/httpServer';

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const SSE_HEADERS = { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' };

async function collect(stream: AsyncIterable<SSEChunk>): Promise<SSEChunk[]> {
  const chunks: SSEChunk[] = [];
  for await (const chunk of stream) chunks.push(chunk);
  return chunks;
}

async function failure(promise: Promise<unknown>): Promise<AgentTransportError> {
  try {
    await promise;
  } catch (error) {
    if (AgentTransportError.isInstance(error)) return error;
    throw error;
  }
  throw new Error('expected the stream to fail');
}

describe('createSSETransport against a real HTTP server', () => {
  it('POSTs the request as JSON and frames events split at awkward byte boundaries', async () => {
    const euro = Buffer.from('data: {"text":"€ and 🙂"}\n\n');
    const splitInsideEuro = euro.indexOf(Buffer.from('€')) + 1;
    const splitInsideEmoji = euro.indexOf(Buffer.from('🙂')) + 2;
    server = await startHttpServer(async (_request, response) => {
      response.writeHead(200, SSE_HEADERS);
      await writePieces(response, [
        ': keep-alive comment\n\n',
        'event: delta\r',
        '\nid: 1\r\ndata: {"n":1}\r',
        '\n\r\n',
        euro.subarray(0, splitInsideEuro),
        euro.subarray(splitInsideEuro, splitInsideEmoji),
        euro.subarray(splitInsideEmoji),
        'retry: 1000\ndata: line one\ndata: line two\n\n',
        'id: 3\revent: done\rdata: [DONE]\r\r',
      ]);
      response.end();
    });
    const transport = createSSETransport<{ prompt: string }>({
      url: `${server.url}/run`,
      headers: { authorization: 'Bearer t' },
    });
    const chunks = await collect(transport.open({ prompt: 'hi' }, new AbortController().signal));
    expect(chunks).toEqual([
      { event: 'delta', id: '1', data: '{"n":1}' },
      { data: '{"text":"€ and 🙂"}' },
      { data: 'line one\nline two' },
      { event: 'done', id: '3', data: '[DONE]' },
    ]);
    expect(server.requests[0]).toMatchObject({ method: 'POST', url: '/run', body: '{"prompt":"hi"}' });
    expect(server.requests[0]?.headers).toMatchObject({
      'content-type': 'application/json',
      accept: 'text/event-stream',
      authorization: 'Bearer t',
    });
    // Only frames that carry an id move the cursor.
    expect(chunks.map((chunk) => transport.getCursor?.(chunk))).toEqual(['1', undefined, undefined, '3']);
  });

  it('resumes with Last-Event-ID and per-request headers', async () => {
    server = await startHttpServer((request, response) => {
      response.writeHead(200, SSE_HEADERS);
      response.end(`id: 8\ndata: after ${request.headers['last-event-id']}\n\n`);
    });
    let token = 0;
    const transport = createSSETransport({
      url: server.url,
      headers: async () => ({ authorization: `Bearer ${++token}` }),
    });
    const resume = transport.resume;
    if (!resume) throw new Error('the SSE transport resumes');
    const chunks = await collect(resume({ q: 1 }, '7', new AbortController().signal));
    expect(chunks).toEqual([{ id: '8', data: 'after 7' }]);
    expect(server.requests[0]?.headers).toMatchObject({ 'last-event-id': '7', authorization: 'Bearer 1' });
  });

  it.each([401, 500])('answers %i as an http_error with the status and a body excerpt', async (status) => {
    server = await startHttpServer((_request, response) => {
      response.writeHead(status, { 'content-type': 'application/json' });
      response.end(JSON.stringify({ error: { message: 'nope', pad: 'x'.repeat(5_000) } }));
    });
    const error = await failure(
      collect(createSSETransport({ url: server.url }).open({}, new AbortController().signal)),
    );
    expect(error.code).toBe('http_error');
    expect(error.status).toBe(status);
    expect(error.bodyExcerpt?.startsWith('{"error":{"message":"nope"')).toBe(true);
    expect(error.bodyExcerpt?.length).toBe(2048);
  });

  it('refuses a body that is not text/event-stream, naming the content type', async () => {
    server = await startHttpServer((_request, response) => {
      response.writeHead(200, { 'content-type': 'text/html' });
      response.end('<html>login</html>');
    });
    const error = await failure(
      collect(createSSETransport({ url: server.url }).open({}, new AbortController().signal)),
    );
    expect(error.code).toBe('invalid_content_type');
    expect(error.contentType).toBe('text/html');
    expect(error.message).toContain('"text/html"');
  });

  it('reports a connection closed mid-stream as a network_error after the frames that arrived', async () => {
    server = await startHttpServer(async (_request, response, raw) => {
      response.writeHead(200, SSE_HEADERS);
      await writePieces(response, ['data: one\n\n', 'data: partial']);
      raw.socket.destroy();
    });
    const received: SSEChunk[] = [];
    const error = await failure(
      (async () => {
        for await (const chunk of createSSETransport({ url: server.url }).open({}, new AbortController().signal))
          received.push(chunk);
      })(),
    );
    expect(received).toEqual([{ data: 'one' }]);
    expect(error.code).toBe('network_error');
  });

  it('tells a refused connection from an abort', async () => {
    server = await startHttpServer((_request, response) => {
      response.end();
    });
    const url = server.url;
    await server.close();
    server = undefined;
    const refused = await failure(collect(createSSETransport({ url }).open({}, new AbortController().signal)));
    expect(refused.code).toBe('network_error');
  });

  it('aborts a stalled stream and the server sees the connection close', async () => {
    server = await startHttpServer((_request, response) => {
      response.writeHead(200, SSE_HEADERS);
      response.write('data: first\n\n');
    });
    const controller = new AbortController();
    const received: SSEChunk[] = [];
    const error = await failure(
      (async () => {
        for await (const chunk of createSSETransport({ url: server.url }).open({}, controller.signal)) {
          received.push(chunk);
          setTimeout(() => controller.abort(), 20);
        }
      })(),
    );
    expect(received).toEqual([{ data: 'first' }]);
    expect(error.code).toBe('aborted');
    await server.closed(0);
  });

  it('fails a frame over the size limit instead of buffering it', async () => {
    server = await startHttpServer(async (_request, response) => {
      response.writeHead(200, SSE_HEADERS);
      await writePieces(response, ['data: small\n\n', `data: ${'x'.repeat(40_000)}`, 'x'.repeat(40_000)]);
      response.end('\n\n');
    });
    const received: SSEChunk[] = [];
    const error = await failure(
      (async () => {
        for await (const chunk of createSSETransport({ url: server.url, maxFrameSize: 50_000 }).open(
          {},
          new AbortController().signal,
        )) {
          received.push(chunk);
        }
      })(),
    );
    expect(received).toEqual([{ data: 'small' }]);
    expect(error.code).toBe('frame_too_large');
  });

  it('sends no body with GET', async () => {
    server = await startHttpServer((_request, response) => {
      response.writeHead(200, SSE_HEADERS);
      response.end('data: ok\n\n');
    });
    const chunks = await collect(
      createSSETransport({ url: server.url, method: 'GET' }).open({ ignored: true }, new AbortController().signal),
    );
    expect(chunks).toEqual([{ data: 'ok' }]);
    expect(server.requests[0]).toMatchObject({ method: 'GET', body: '' });
  });
});

describe('createSSETransport at the end of a stream', () => {
  it('drops an event the stream ended in the middle of, as EventSource does', async () => {
    server = await startHttpServer((_request, response) => {
      response.writeHead(200, SSE_HEADERS);
      response.end('data: complete\n\ndata: never finished\n');
    });
    const chunks = await collect(createSSETransport({ url: server.url }).open({}, new AbortController().signal));
    expect(chunks).toEqual([{ data: 'complete' }]);
  });

  it('stops reading when the consumer stops, and the server sees the connection close', async () => {
    server = await startHttpServer((_request, response) => {
      response.writeHead(200, SSE_HEADERS);
      response.write('data: one\n\ndata: two\n\n');
    });
    const seen: SSEChunk[] = [];
    for await (const chunk of createSSETransport({ url: server.url }).open({}, new AbortController().signal)) {
      seen.push(chunk);
      break;
    }
    expect(seen).toEqual([{ data: 'one' }]);
    await server.closed(0);
  });
});

describe('createSSETransport framing, wherever the reads cut the stream', () => {
  // LF, CRLF and CR line ends, comments, multi-line data, event and id fields, and
  // characters of two, three and four bytes.
  const text = [
    ': hello\n\n',
    'event: delta\r\nid: 7\r\ndata: {"t":"€"}\r\n\r\n',
    'data: line one\ndata: line two\n\n',
    'data: {"t":"数据 🙂"}\r\r',
    'id: 8\ndata: x\n\n',
    'data: {"t":"naïve"}\n\n',
  ].join('');
  const bytes = new TextEncoder().encode(text);

  function transportOver(pieces: Uint8Array[]) {
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        for (const piece of pieces) controller.enqueue(piece);
        controller.close();
      },
    });
    const fetch = async () => new Response(body, { headers: SSE_HEADERS });
    return createSSETransport<never>({ url: 'http://stream.invalid', fetch: fetch as typeof globalThis.fetch });
  }

  it('yields the same frames as one read of the whole stream', async () => {
    const whole = await collect(transportOver([bytes]).open(undefined as never, new AbortController().signal));
    expect(whole.map((chunk) => chunk.data)).toEqual([
      '{"t":"€"}',
      'line one\nline two',
      '{"t":"数据 🙂"}',
      'x',
      '{"t":"naïve"}',
    ]);
    expect(whole[0]).toMatchObject({ event: 'delta', id: '7' });
    await fc.assert(
      fc.asyncProperty(
        fc.uniqueArray(fc.integer({ min: 1, max: bytes.length - 1 }), { maxLength: 12 }),
        async (cuts) => {
          const points = [0, ...cuts.sort((a, b) => a - b), bytes.length];
          const pieces = points.slice(1).map((end, index) => bytes.subarray(points[index], end));
          const chunks = await collect(transportOver(pieces).open(undefined as never, new AbortController().signal));
          expect(chunks).toEqual(whole);
        },
      ),
      { numRuns: 300 },
    );
  });
});
