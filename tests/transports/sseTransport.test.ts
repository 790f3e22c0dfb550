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

async function drain(
  transport: ReturnType<typeof createSSETransport<never>>,
): Promise<{ received: SSEChunk[]; error: AgentTransportError | undefined }> {
  const received: SSEChunk[] = [];
  try {
    for await (const chunk of transport.open(undefined as never, new AbortController().signal)) received.push(chunk);
  } catch (error) {
    if (!AgentTransportError.isInstance(error)) throw error;
    return { received, error };
  }
  return { received, error: undefined };
}

function transportOverPieces(pieces: Uint8Array[], maxFrameSize?: number) {
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      for (const piece of pieces) controller.enqueue(piece);
      controller.close();
    },
  });
  const fetch = async () => new Response(body, { headers: SSE_HEADERS });
  return createSSETransport<never>({
    url: 'http://stream.invalid',
    fetch: fetch as typeof globalThis.fetch,
    ...(maxFrameSize === undefined ? {} : { maxFrameSize }),
  });
}

function cut(bytes: Uint8Array, cuts: number[]): Uint8Array[] {
  const points = [0, ...[...new Set(cuts)].sort((a, b) => a - b), bytes.length];
  return points.slice(1).map((end, index) => bytes.subarray(points[index], end));
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

  it('delivers a small frame that shares a read with the start of an oversized one, then fails', async () => {
    server = await startHttpServer(async (_request, response) => {
      response.writeHead(200, SSE_HEADERS);
      await writePieces(response, [`data: small\n\ndata: ${'x'.repeat(60_000)}`, '\n\ndata: after\n\n']);
      response.end();
    });
    const { received, error } = await drain(createSSETransport({ url: server.url, maxFrameSize: 50_000 }));
    expect(received).toEqual([{ data: 'small' }]);
    expect(error?.code).toBe('frame_too_large');
    expect(error?.message).toBe('A server-sent event frame exceeded 50000 characters');
  });

  it('gives frame_too_large, not a parser error, for an oversized frame that ends a fragment', async () => {
    server = await startHttpServer(async (_request, response) => {
      response.writeHead(200, SSE_HEADERS);
      await writePieces(response, ['data: one\n\ndata: x', `${'x'.repeat(60_000)}\n\ndata: two\n\n`]);
      response.end();
    });
    const { received, error } = await drain(createSSETransport({ url: server.url, maxFrameSize: 50_000 }));
    expect(received).toEqual([{ data: 'one' }]);
    expect(error?.code).toBe('frame_too_large');
  });

  it('refuses an oversized frame that arrives whole, and delivers what came before it', async () => {
    const frame = `data: ${'x'.repeat(60_000)}\n\n`;
    server = await startHttpServer((_request, response) => {
      response.writeHead(200, SSE_HEADERS);
      response.end(`data: before\n\n${frame}data: after\n\n`);
    });
    const { received, error } = await drain(createSSETransport({ url: server.url, maxFrameSize: 50_000 }));
    expect(received).toEqual([{ data: 'before' }]);
    expect(error?.code).toBe('frame_too_large');
    // The same bytes in a single read of an in-memory body.
    const whole = await drain(transportOverPieces([new TextEncoder().encode(frame)], 50_000));
    expect(whole.received).toEqual([]);
    expect(whole.error?.code).toBe('frame_too_large');
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

describe('createSSETransport frame size limit, wherever the reads cut the stream', () => {
  const LIMIT = 24;
  const lineEnd = fc.constantFrom('\n', '\r\n', '\r');
  const payload = fc.string({ unit: fc.constantFrom('a', 'b', '€', '🙂', ':'), maxLength: 30 });
  /** A field line and what it adds to the frame's data, if anything. */
  const line = fc.oneof(
    payload.map((text) => ({ text: `data: ${text}`, data: text })),
    payload.map((text) => ({ text: `data:${text}`, data: text })),
    payload.map((text) => ({ text: `: ${text}`, data: undefined })),
    fc.constant({ text: 'event: delta', data: undefined }),
  );
  const frame = fc
    .record({ lines: fc.array(fc.tuple(line, lineEnd), { minLength: 1, maxLength: 3 }), end: lineEnd })
    // After a CR, an LF would complete that line end instead of making a blank line.
    .map(({ lines, end }) => ({ lines, end: lines[lines.length - 1]?.[1] === '\r' && end === '\n' ? '\r' : end }));

  it('delivers every frame before the first one over the limit, then fails with frame_too_large', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(frame, { maxLength: 6 }),
        fc.option(fc.tuple(line, fc.boolean()), { nil: undefined }),
        fc.array(fc.nat(), { maxLength: 10 }),
        async (frames, unfinished, cutPoints) => {
          let text = '';
          const expected: string[] = [];
          let oversized = false;
          for (const { lines, end } of frames) {
            const size = lines.reduce((sum, [{ text: content }]) => sum + content.length, 0);
            text += `${lines.map(([{ text: content }, ending]) => content + ending).join('')}${end}`;
            if (oversized) continue;
            if (size > LIMIT) oversized = true;
            const data = lines.flatMap(([{ data: part }]) => (part === undefined ? [] : [part]));
            if (!oversized && data.length > 0) expected.push(data.join('\n'));
          }
          // A frame the stream ends in the middle of is dropped, unless it is already too large.
          if (unfinished !== undefined) {
            const [{ text: content }, withLineEnd] = unfinished;
            text += withLineEnd ? `${content}\n` : content;
            if (content.length > LIMIT) oversized = true;
          }
          const bytes = new TextEncoder().encode(text);
          const pieces = cut(
            bytes,
            cutPoints.map((point) => point % (bytes.length + 1)),
          );
          const { received, error } = await drain(transportOverPieces(pieces, LIMIT));
          expect(received.map((chunk) => chunk.data)).toEqual(expected);
          expect(error?.code).toBe(oversized ? 'frame_too_large' : undefined);
        },
      ),
      { numRuns: 1_000 },
    );
  });

  it("counts the characters of a frame's lines, not its line ends", async () => {
    // 24 characters of lines: accepted with LF, CRLF or CR line ends alike; one more is refused.
    for (const end of ['\n', '\r\n', '\r']) {
      const exact = `data: ${'a'.repeat(8)}${end}data: ${'b'.repeat(4)}${end}${end}`;
      const accepted = await drain(transportOverPieces([new TextEncoder().encode(exact)], LIMIT));
      expect(accepted).toEqual({ received: [{ data: `${'a'.repeat(8)}\n${'b'.repeat(4)}` }], error: undefined });
      const refused = await drain(transportOverPieces([new TextEncoder().encode(exact.replace('b', 'bb'))], LIMIT));
      expect(refused.received).toEqual([]);
      expect(refused.error?.code).toBe('frame_too_large');
    }
  });
});
