import { createParser, type EventSourceMessage, type EventSourceParser } from 'eventsource-parser';
import type { AgentTransport } from './AgentTransport';
import { AgentTransportError } from './AgentTransportError';
import { idleTimeoutOf } from './idleTimeout';

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
  /**
   * Largest frame, in characters of its lines (line ends not counted). A larger frame fails
   * the stream with `frame_too_large` after the frames before it, however the reads cut it,
   * and is never buffered whole. Default 10 MiB.
   */
  maxFrameSize?: number;
  /**
   * How long the stream may stay silent: no response, or no bytes of it, for this long
   * ends the read with an `AgentTransportError` of code `timeout` (one a provider may
   * classify as retryable, so the runner reconnects). Only time spent waiting for the
   * server counts, not time the consumer spends on frames. Default 60 000 ms; `0` or
   * `Infinity` turns it off.
   */
  idleTimeoutMs?: number;
}

/**
 * Statuses a `resume` answer means "no such cursor" with, becoming `invalid_cursor`:
 * 404 Not Found, 409 Conflict, 410 Gone (the usual one: the log was trimmed), 412
 * Precondition Failed, 416 Range Not Satisfiable, 422 Unprocessable Content.
 */
const INVALID_CURSOR_STATUSES: ReadonlySet<number> = new Set([404, 409, 410, 412, 416, 422]);

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
const CR = 13;
const LF = 10;

/**
 * Measures frames as the text arrives, to refuse one over the limit whatever the reads: the
 * parser's own bound looks only at what it holds between reads, so a large frame that came
 * whole in one read passed it. A frame's size is the characters of its lines, line ends not
 * counted, so it is the same however CRLF, CR or LF end them and wherever the reads cut.
 */
class FrameSizes {
  /** Characters of the frame not yet ended, from earlier reads. */
  private frameSize = 0;
  /** Nothing since the last line end: a line end now ends a blank line, so the frame. */
  private lineEmpty = true;
  /** The last text ended with CR: an LF first in the next one belongs to it. */
  private afterCR = false;

  constructor(private readonly maxFrameSize: number) {}

  /**
   * Takes the next text of the stream; returns where in it a frame over the limit starts
   * (0 when it began in an earlier text), or -1. A text too short to hold one is measured
   * only from its last blank line, so the cost per read is that of its last frame.
   */
  take(text: string): number {
    if (this.frameSize + text.length > this.maxFrameSize) return this.scan(text, 0);
    const start = this.lastFrameStart(text);
    if (start !== -1) {
      this.frameSize = 0;
      this.lineEmpty = true;
    }
    this.scan(text, start === -1 ? 0 : start);
    return -1;
  }

  private scan(text: string, from: number): number {
    let position = from;
    if (from === 0 && this.afterCR && text.charCodeAt(0) === LF) position = 1;
    let frameStart = position;
    let frameSize = this.frameSize;
    let lineEmpty = this.lineEmpty;
    let cr = -2;
    let lf = -2;
    while (position < text.length) {
      if (cr !== -1 && cr < position) cr = text.indexOf('\r', position);
      if (lf !== -1 && lf < position) lf = text.indexOf('\n', position);
      const lineEnd = cr === -1 ? lf : lf === -1 ? cr : Math.min(cr, lf);
      const end = lineEnd === -1 ? text.length : lineEnd;
      if (end > position) {
        lineEmpty = false;
        frameSize += end - position;
        if (frameSize > this.maxFrameSize) return frameStart;
      }
      if (lineEnd === -1) break;
      position = lineEnd + (text.charCodeAt(lineEnd) === CR && text.charCodeAt(lineEnd + 1) === LF ? 2 : 1);
      if (lineEmpty) {
        frameSize = 0;
        frameStart = position;
      }
      lineEmpty = true;
    }
    this.frameSize = frameSize;
    this.lineEmpty = lineEmpty;
    this.afterCR = text.charCodeAt(text.length - 1) === CR;
    return -1;
  }

  /** Where the last frame that starts in `text` starts (after its last blank line), or -1. */
  private lastFrameStart(text: string): number {
    const first = this.afterCR && text.charCodeAt(0) === LF ? 1 : 0;
    let index = text.length - 1;
    while (index >= first) {
      const lf = text.lastIndexOf('\n', index);
      // The last CR after that LF, looked for only between the two: a stream without CRs
      // would otherwise have the whole read scanned for one.
      let cr = index;
      while (cr > lf && text.charCodeAt(cr) !== CR) cr -= 1;
      const lineEnd = Math.max(cr, lf);
      if (lineEnd < first) return -1;
      // The first character of this line end: a CRLF is one line end.
      const endStart =
        text.charCodeAt(lineEnd) === LF && lineEnd > first && text.charCodeAt(lineEnd - 1) === CR
          ? lineEnd - 1
          : lineEnd;
      const previous = text.charCodeAt(endStart - 1);
      const blank = endStart === first ? first === 1 || this.lineEmpty : previous === CR || previous === LF;
      if (blank) return lineEnd + 1;
      index = endStart - 1;
    }
    return -1;
  }
}

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
  private readonly sizes: FrameSizes;
  /** A frame over the limit: thrown once the frames before it are consumed. */
  private failure: AgentTransportError | undefined;
  /** The text fed last ended with CR, which the parser holds until it sees whether an LF follows. */
  private pendingCR = false;
  private finished = false;
  /** Aborts the request on the caller's abort or on the idle timeout. */
  private readonly controller = new AbortController();
  private readonly forwardAbort = () => this.controller.abort(this.signal.reason);
  private idleTimer: ReturnType<typeof setTimeout> | undefined;
  private timedOut = false;

  constructor(
    private readonly connect: (signal: AbortSignal) => Promise<Response>,
    private readonly signal: AbortSignal,
    private readonly url: string,
    private readonly maxFrameSize: number,
    private readonly idleTimeoutMs: number | undefined,
  ) {
    this.sizes = new FrameSizes(maxFrameSize);
    this.parser = createParser({
      // The parser's message is the chunk: `event` and `id` are undefined when the frame had none.
      onEvent: (message: EventSourceMessage) => this.ready.push(message as SSEChunk),
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
    this.disarm();
    this.signal.removeEventListener('abort', this.forwardAbort);
    this.reader?.cancel().catch(() => {});
  }

  /** Starts the idle timer for one wait on the server. */
  private arm(): void {
    if (this.idleTimeoutMs === undefined) return;
    this.idleTimer = setTimeout(() => {
      this.timedOut = true;
      this.controller.abort(this.timeoutError());
      // A fetch that ignores its signal still has its read ended; `read` sees `timedOut`.
      this.reader?.cancel().catch(() => {});
    }, this.idleTimeoutMs);
  }

  private disarm(): void {
    if (this.idleTimer === undefined) return;
    clearTimeout(this.idleTimer);
    this.idleTimer = undefined;
  }

  private timeoutError(): AgentTransportError {
    return new AgentTransportError('timeout', `${this.url} sent nothing for ${this.idleTimeoutMs} ms`);
  }

  private async fill(): Promise<IteratorResult<SSEChunk>> {
    try {
      if (this.failure !== undefined) throw this.failure;
      if (this.reader === undefined && !this.finished) {
        if (this.signal.aborted) this.controller.abort(this.signal.reason);
        else this.signal.addEventListener('abort', this.forwardAbort, { once: true });
        this.arm();
        let response: Response;
        try {
          response = await this.connect(this.controller.signal);
        } finally {
          this.disarm();
        }
        if (!response.body) this.finished = true;
        else this.reader = response.body.getReader();
      }
      this.ready.length = 0;
      this.head = 0;
      while (this.ready.length === 0 && !this.finished && this.reader !== undefined) await this.read(this.reader);
      if (this.head < this.ready.length) return { value: this.ready[this.head++] as SSEChunk, done: false };
      if (this.failure !== undefined) throw this.failure;
      this.close();
      return DONE;
    } catch (error) {
      this.close();
      throw this.timedOut ? this.timeoutError() : error;
    }
  }

  private async read(reader: ReadableStreamDefaultReader<Uint8Array>): Promise<void> {
    let result: ReadableStreamReadResult<Uint8Array>;
    this.arm();
    try {
      result = await reader.read();
    } catch (error) {
      if (this.timedOut) throw this.timeoutError();
      throw this.signal.aborted
        ? new AgentTransportError('aborted', 'The stream was aborted', { cause: this.signal.reason })
        : new AgentTransportError('network_error', `The stream from ${this.url} broke: ${(error as Error).message}`, {
            cause: error,
          });
    } finally {
      this.disarm();
    }
    if (this.timedOut) throw this.timeoutError();
    if (result.done) {
      const rest = this.decoder.decode();
      if (rest !== '' && !this.take(rest)) return;
      // At the end of the stream a CR the parser holds can only be a line end.
      if (this.pendingCR) this.parser.feed('\n');
      this.finished = true;
      return;
    }
    this.take(this.decoder.decode(result.value, { stream: true }));
  }

  /** Feeds a text to the parser up to any frame over the limit; false when there was one. */
  private take(text: string): boolean {
    if (text === '') return true;
    const oversized = this.sizes.take(text);
    if (oversized === -1) {
      this.feed(text);
      return true;
    }
    this.feed(text.slice(0, oversized));
    // The frames before it are whole; one that ended with a lone CR still waits for a possible LF.
    if (this.pendingCR) this.parser.feed('\n');
    this.failure = new AgentTransportError(
      'frame_too_large',
      `A server-sent event frame exceeded ${this.maxFrameSize} characters`,
    );
    this.finished = true;
    this.reader?.cancel().catch(() => {});
    return false;
  }

  private feed(text: string): void {
    if (text === '') return;
    // The parser holds a CR that ended the last text until it sees the next character; when
    // that is not an LF the CR was a whole line end, and the parser learns it only if a line
    // end follows in this text, so it is told now (CR LF is the same single line end).
    if (this.pendingCR && text.charCodeAt(0) !== LF) this.parser.feed('\n');
    this.pendingCR = text.charCodeAt(text.length - 1) === CR;
    // A frame cut by the read leaves a fragment in the parser, which then joins it to the
    // whole next text, a copy of every read. Fed up to its first line end and then the rest,
    // only the first line is joined.
    const lineEnd = text.indexOf('\n');
    if (lineEnd === -1 || lineEnd === text.length - 1) this.parser.feed(text);
    else {
      this.parser.feed(text.slice(0, lineEnd + 1));
      this.parser.feed(text.slice(lineEnd + 1));
    }
  }
}

/**
 * Server-sent events over fetch. It yields one chunk per event, framed by
 * `eventsource-parser` (LF, CRLF and CR line ends, multi-line data, comments, `event`,
 * `id` and `retry` fields). `getCursor` returns an event's `id`; `resume` sends the request
 * again with `Last-Event-ID`, and an answer of 404, 409, 410, 412, 416 or 422 to it is an
 * `invalid_cursor` error (the server does not know the cursor) rather than an `http_error`.
 * A server silent for `idleTimeoutMs` (default 60 s) fails the read with `timeout`.
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
      // A `fetch` that refuses with a transport error of its own (a redirect elsewhere) says what it was.
      if (!signal.aborted && AgentTransportError.isInstance(error)) throw error;
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
      const { status } = response;
      if (lastEventId !== undefined && INVALID_CURSOR_STATUSES.has(status)) {
        throw new AgentTransportError(
          'invalid_cursor',
          `${String(options.url)} answered ${status} to resuming after "${lastEventId}"`,
          { status, bodyExcerpt },
        );
      }
      throw new AgentTransportError('http_error', `${String(options.url)} answered ${status}`, {
        status,
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

  const idleTimeoutMs = idleTimeoutOf(options.idleTimeoutMs);
  const stream = (request: Request, signal: AbortSignal, lastEventId?: string): AsyncIterableIterator<SSEChunk> =>
    new SSEFrames(
      (requestSignal) => connect(request, requestSignal, lastEventId),
      signal,
      String(options.url),
      maxFrameSize,
      idleTimeoutMs,
    );

  return {
    kind: 'sse',
    open: (request, signal) => stream(request, signal),
    getCursor: (chunk) => chunk.id,
    resume: (request, cursor, signal) => stream(request, signal, cursor),
  };
}
