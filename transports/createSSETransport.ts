import { createParser, type EventSourceMessage, type EventSourceParser } from 'eventsource-parser';
import type { AgentTransport } from '../providers/AgentProvider';
import { AgentTransportError } from './AgentTransportError';

/** One server-sent event: its `data`, and the `event` and `id` fields when the server sent them. */
export interface SSEChunk {
  event?: string;
  data: string;
  id?: string;
}

export interface SSETransportOptions<Request> {
  url: string | URL;
  /** Default `POST`; `GET` sends no body. */
  method?: 'POST' | 'GET' | 'PUT';
  /** Extra headers, or a function that makes them per request (a fresh auth token, say). */
  headers?: HeadersInit | (() => HeadersInit | Promise<HeadersInit>);
  /** Makes the request body; by default `JSON.stringify(request)`. */
  body?: (request: Request) => BodyInit;
  /** Default `globalThis.fetch`. */
  fetch?: typeof fetch;
  /** Largest frame the parser buffers, in characters. Default 10 MiB. */
  maxFrameSize?: number;
}

const BODY_EXCERPT_LIMIT = 2048;

async function readExcerpt(response: Response): Promise<string> {
  if (!response.body) return '';
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let text = '';
  try {
    while (text.length < BODY_EXCERPT_LIMIT) {
      const { done, value } = await reader.read();
      if (done) break;
      text += decoder.decode(value, { stream: true });
    }
  } catch {
    // The excerpt is best effort: the status is the error.
  } finally {
    reader.cancel().catch(() => {});
  }
  return text.slice(0, BODY_EXCERPT_LIMIT);
}

const DONE: IteratorReturnResult<undefined> = { value: undefined, done: true };

/**
 * The frames of one response, as an async iterator written by hand: an async generator
 * costs several promise hops per frame, more than parsing the frame does, and a 16 KiB
 * read holds about a hundred frames that are ready at once.
 */
class SSEFrames implements AsyncIterableIterator<SSEChunk> {
  private readonly ready: SSEChunk[] = [];
  private head = 0;
  private reader: ReadableStreamDefaultReader<Uint8Array> | undefined;
  private readonly decoder = new TextDecoder();
  private readonly parser: EventSourceParser;
  private parseError: Error | undefined;
  private lastText = '';
  private finished = false;

  constructor(
    private readonly connect: () => Promise<Response>,
    private readonly signal: AbortSignal,
    private readonly url: string,
    private readonly maxFrameSize: number,
  ) {
    this.parser = createParser({
      maxBufferSize: maxFrameSize,
      // The parser's message is the chunk: `event` and `id` are undefined when the frame had none.
      onEvent: (message: EventSourceMessage) => this.ready.push(message as SSEChunk),
      onError: (error) => {
        if (error.type === 'max-buffer-size-exceeded') this.parseError ??= error;
      },
    });
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  next(): Promise<IteratorResult<SSEChunk>> {
    if (this.head < this.ready.length)
      return Promise.resolve({ value: this.ready[this.head++] as SSEChunk, done: false });
    return this.fill();
  }

  return(): Promise<IteratorResult<SSEChunk>> {
    this.close();
    return Promise.resolve(DONE);
  }

  private close(): void {
    this.finished = true;
    this.reader?.cancel().catch(() => {});
  }

  private async fill(): Promise<IteratorResult<SSEChunk>> {
    try {
      if (this.reader === undefined && !this.finished) {
        const response = await this.connect();
        if (!response.body) this.finished = true;
        else this.reader = response.body.getReader();
      }
      this.ready.length = 0;
      this.head = 0;
      while (this.ready.length === 0 && !this.finished && this.reader !== undefined) await this.read(this.reader);
      if (this.head < this.ready.length) return { value: this.ready[this.head++] as SSEChunk, done: false };
      this.close();
      return DONE;
    } catch (error) {
      this.close();
      throw error;
    }
  }

  private async read(reader: ReadableStreamDefaultReader<Uint8Array>): Promise<void> {
    let result: ReadableStreamReadResult<Uint8Array>;
    try {
      result = await reader.read();
    } catch (error) {
      throw this.signal.aborted
        ? new AgentTransportError('aborted', 'The stream was aborted', { cause: this.signal.reason })
        : new AgentTransportError('network_error', `The stream from ${this.url} broke: ${(error as Error).message}`, {
            cause: error,
          });
    }
    if (result.done) {
      const rest = this.decoder.decode();
      if (rest !== '') this.parser.feed(rest);
      // A CR at the very end may be the first half of a CRLF, so the parser waits for
      // more; at the end of the stream it can only be a line end.
      if ((rest || this.lastText).endsWith('\r')) this.parser.feed('\n');
      this.finished = true;
      return;
    }
    const text = this.decoder.decode(result.value, { stream: true });
    if (text !== '') this.lastText = text;
    // A frame cut by the read leaves a fragment in the parser, which then joins it to the
    // whole next text, a copy of every read. Fed up to its first line end and then the rest,
    // only the first line is joined.
    const lineEnd = text.indexOf('\n');
    if (lineEnd === -1 || lineEnd === text.length - 1) this.parser.feed(text);
    else {
      this.parser.feed(text.slice(0, lineEnd + 1));
      this.parser.feed(text.slice(lineEnd + 1));
    }
    if (this.parseError) {
      throw new AgentTransportError(
        'frame_too_large',
        `A server-sent event frame exceeded ${this.maxFrameSize} characters`,
        {
          cause: this.parseError,
        },
      );
    }
  }
}

/**
 * Server-sent events over fetch. It yields one chunk per event, framed by
 * `eventsource-parser` (LF, CRLF and CR line ends, multi-line data, comments, `event`,
 * `id` and `retry` fields). `getCursor` returns an event's `id`; `resume` reconnects
 * with `Last-Event-ID`.
 *
 * @example
 * const transport = createSSETransport({
 *   url: 'https://agent.example.com/run',
 *   headers: async () => ({ Authorization: `Bearer ${await getToken()}` }),
 * });
 */
export function createSSETransport<Request = unknown>(
  options: SSETransportOptions<Request>,
): AgentTransport<Request, SSEChunk> {
  const maxFrameSize = options.maxFrameSize ?? 10 * 1024 * 1024;

  async function connect(request: Request, signal: AbortSignal, lastEventId: string | undefined): Promise<Response> {
    // Bound to globalThis: a bare `fetch` reference called as a method throws "Illegal invocation" in browsers.
    const fetchImpl = options.fetch ?? globalThis.fetch.bind(globalThis);
    const method = options.method ?? 'POST';
    const headers = new Headers(typeof options.headers === 'function' ? await options.headers() : options.headers);
    headers.set('accept', 'text/event-stream');
    if (lastEventId !== undefined) headers.set('last-event-id', lastEventId);
    let body: BodyInit | null = null;
    if (method !== 'GET') {
      body = options.body ? options.body(request) : JSON.stringify(request);
      if (!options.body && !headers.has('content-type')) headers.set('content-type', 'application/json');
    }
    let response: Response;
    try {
      response = await fetchImpl(options.url, { method, headers, body, signal });
    } catch (error) {
      throw signal.aborted
        ? new AgentTransportError('aborted', 'The request was aborted', { cause: signal.reason })
        : new AgentTransportError(
            'network_error',
            `Request to ${String(options.url)} failed: ${(error as Error).message}`,
            {
              cause: error,
            },
          );
    }
    if (response.status >= 400) {
      const bodyExcerpt = await readExcerpt(response);
      throw new AgentTransportError('http_error', `${String(options.url)} answered ${response.status}`, {
        status: response.status,
        bodyExcerpt,
      });
    }
    const contentType = response.headers.get('content-type') ?? '';
    if (!contentType.toLowerCase().startsWith('text/event-stream')) {
      response.body?.cancel().catch(() => {});
      throw new AgentTransportError(
        'invalid_content_type',
        `${String(options.url)} answered with content type "${contentType}", not text/event-stream`,
        { status: response.status, contentType },
      );
    }
    return response;
  }

  const stream = (request: Request, signal: AbortSignal, lastEventId?: string): AsyncIterableIterator<SSEChunk> =>
    new SSEFrames(() => connect(request, signal, lastEventId), signal, String(options.url), maxFrameSize);

  return {
    kind: 'sse',
    open: (request, signal) => stream(request, signal),
    getCursor: (chunk) => chunk.id,
    resume: (request, cursor, signal) => stream(request, signal, cursor),
  };
}
