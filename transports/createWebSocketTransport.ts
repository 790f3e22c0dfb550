import type { AgentTransport } from './AgentTransport';
import { AgentTransportError } from './AgentTransportError';
import { idleTimeoutOf } from './idleTimeout';

/** The part of the WebSocket API the transport uses: the browser's, Node 22's, or `ws`. */
export interface WebSocketLike {
  readonly readyState: number;
  send(data: string): void;
  close(code?: number, reason?: string): void;
  addEventListener(type: 'open' | 'message' | 'close' | 'error', listener: (event: never) => void): void;
}

/** The third argument is `ws`'s options (`{ headers }`); browsers' WebSocket takes two. */
export type WebSocketConstructor = new (
  url: string,
  protocols?: string | string[],
  options?: { headers: Record<string, string> },
) => WebSocketLike;

/** A value, or a function called per connection that makes it (sync or async). */
export type PerConnection<Value> = Value | (() => Value | Promise<Value>);

/**
 * A WebSocket handshake carries no headers a browser lets you set, so credentials go in the
 * URL (a query token) or in a subprotocol; both may be functions, called for every
 * connection, so each one carries the current token.
 */
export interface WebSocketTransportOptions<Request, Frame = unknown> {
  /** The endpoint, or a function that makes it per connection (`wss://host/run?token=...`). */
  url: PerConnection<string | URL>;
  /** Subprotocols (`Sec-WebSocket-Protocol`), or a function that makes them per connection. */
  protocols?: PerConnection<string | string[]>;
  /**
   * Handshake headers, or a function that makes them per connection. Only where the
   * WebSocket implementation takes them (`ws` on Node); a browser's cannot send headers,
   * so passing them without `WebSocket` there is an `unsupported_headers` error.
   */
  headers?: PerConnection<Record<string, string>>;
  /** Default `globalThis.WebSocket`; pass `ws`'s `WebSocket` on Node 20. */
  WebSocket?: WebSocketConstructor;
  /** The first message sent once the socket is open; by default `JSON.stringify(request)`. */
  serialize?: (request: Request) => string;
  /**
   * The first message of a socket opened by `resume`, in place of the request: it asks the
   * server for the frames after `cursor`. A string is sent as it is, anything else as
   * JSON. Default `{ type: 'resume', cursor, request }`.
   */
  resumeMessage?: (request: Request, cursor: string) => unknown;
  /** The cursor a frame leaves the stream at (`getCursor`). Default its `id` or `cursor` string field. */
  cursorOf?: (frame: Frame) => string | undefined;
  /**
   * No message for this long (the handshake included) fails the stream with an
   * `AgentTransportError` of code `timeout` and closes the socket. Default 60 000 ms; `0`
   * or `Infinity` turns it off.
   */
  idleTimeoutMs?: number;
}

/** A frame's `id` or `cursor`, when it is a string. */
function defaultCursorOf(frame: unknown): string | undefined {
  if (typeof frame !== 'object' || frame === null) return undefined;
  const { id, cursor } = frame as { id?: unknown; cursor?: unknown };
  if (typeof id === 'string') return id;
  return typeof cursor === 'string' ? cursor : undefined;
}

const NORMAL_CLOSURE = 1000;

type Item = { frame: unknown } | { error: AgentTransportError } | { end: true };

function textOf(data: unknown): string {
  if (typeof data === 'string') return data;
  if (data instanceof ArrayBuffer) return new TextDecoder().decode(data);
  if (ArrayBuffer.isView(data)) return new TextDecoder().decode(data);
  if (Array.isArray(data)) return data.map(textOf).join('');
  return String(data);
}

/**
 * A WebSocket stream: the request goes out as the first message, and every message that
 * comes back is parsed as JSON and yielded. A close other than 1000, a frame that is not
 * JSON and a socket silent for `idleTimeoutMs` are typed errors; an abort closes the socket.
 * `getCursor` reads a frame's cursor (`cursorOf`); `resume` opens a new socket whose first
 * message asks for the frames after a cursor (`resumeMessage`).
 *
 * @example
 * import { WebSocket } from 'ws'; // Node 20; browsers and Node 22 have a global WebSocket
 * const transport = createWebSocketTransport({
 *   url: async () => `wss://agent.example.com/run?token=${await getToken()}`,
 *   WebSocket,
 * });
 */
export function createWebSocketTransport<Request = unknown, Frame = unknown>(
  options: WebSocketTransportOptions<Request, Frame>,
): AgentTransport<Request, Frame> {
  const idleTimeoutMs = idleTimeoutOf(options.idleTimeoutMs);

  async function* connect(firstMessage: () => string, signal: AbortSignal): AsyncGenerator<Frame> {
    const Socket = options.WebSocket ?? (globalThis as { WebSocket?: WebSocketConstructor }).WebSocket;
    if (!Socket) {
      throw new AgentTransportError(
        'missing_websocket',
        'No WebSocket implementation: pass one as `WebSocket` (the `ws` package on Node 20)',
      );
    }
    const aborted = () => new AgentTransportError('aborted', 'The connection was aborted', { cause: signal.reason });
    if (signal.aborted) throw aborted();
    const url = String(typeof options.url === 'function' ? await options.url() : options.url);
    const protocols = typeof options.protocols === 'function' ? await options.protocols() : options.protocols;
    const headers = typeof options.headers === 'function' ? await options.headers() : options.headers;
    if (headers !== undefined && options.WebSocket === undefined) {
      throw new AgentTransportError(
        'unsupported_headers',
        "The global WebSocket cannot send handshake headers: pass `ws`'s WebSocket, or carry the token in `url` or `protocols`",
      );
    }
    if (signal.aborted) throw aborted();
    const socket =
      headers !== undefined
        ? new Socket(url, protocols ?? [], { headers })
        : protocols === undefined
          ? new Socket(url)
          : new Socket(url, protocols);
    const queue: Item[] = [];
    let head = 0;
    let wake: (() => void) | undefined;
    let finished = false;
    // One timer for the whole socket, pushed back only when it fires: resetting a timer per
    // message would cost more than the message.
    let lastMessageAt = Date.now();
    let idleTimer: ReturnType<typeof setTimeout> | undefined;
    const push = (item: Item) => {
      if (finished) return;
      if ('error' in item || 'end' in item) {
        finished = true;
        clearTimeout(idleTimer);
      }
      queue.push(item);
      wake?.();
    };
    const checkIdle = (timeout: number) => {
      const silentFor = Date.now() - lastMessageAt;
      if (silentFor < timeout) {
        idleTimer = setTimeout(checkIdle, timeout - silentFor, timeout);
        return;
      }
      push({ error: new AgentTransportError('timeout', `WebSocket ${url} sent nothing for ${timeout} ms`) });
      socket.close(NORMAL_CLOSURE, 'idle timeout');
    };
    if (idleTimeoutMs !== undefined) idleTimer = setTimeout(checkIdle, idleTimeoutMs, idleTimeoutMs);
    const onAbort = () => {
      push({ error: aborted() });
      socket.close(NORMAL_CLOSURE, 'aborted');
    };
    signal.addEventListener('abort', onAbort, { once: true });
    socket.addEventListener('open', () => {
      socket.send(firstMessage());
    });
    socket.addEventListener('message', (event: { data: unknown }) => {
      lastMessageAt = Date.now();
      const text = textOf(event.data);
      try {
        push({ frame: JSON.parse(text) });
      } catch (error) {
        push({
          error: new AgentTransportError(
            'invalid_frame',
            `A WebSocket frame from ${url} is not JSON: ${text.slice(0, 200)}`,
            { cause: error },
          ),
        });
        socket.close(NORMAL_CLOSURE, 'invalid frame');
      }
    });
    socket.addEventListener('error', (event: { message?: string; error?: unknown }) => {
      push({
        error: new AgentTransportError(
          'network_error',
          `WebSocket ${url} failed${event.message ? `: ${event.message}` : ''}`,
          {
            cause: event.error ?? event,
          },
        ),
      });
    });
    socket.addEventListener('close', (event: { code: number; reason: string }) => {
      if (event.code === NORMAL_CLOSURE) push({ end: true });
      else {
        push({
          error: new AgentTransportError(
            'abnormal_close',
            `WebSocket ${url} closed with code ${event.code}${event.reason ? ` (${event.reason})` : ''}`,
            {
              closeCode: event.code,
              closeReason: event.reason,
            },
          ),
        });
      }
    });

    try {
      while (true) {
        if (head === queue.length) {
          await new Promise<void>((resolve) => {
            wake = resolve;
          });
          wake = undefined;
          continue;
        }
        const item = queue[head] as Item;
        head += 1;
        if (head > 1024 && head * 2 > queue.length) {
          queue.splice(0, head);
          head = 0;
        }
        if ('frame' in item) yield item.frame as Frame;
        else if ('error' in item) throw item.error;
        else return;
      }
    } finally {
      clearTimeout(idleTimer);
      signal.removeEventListener('abort', onAbort);
      if (socket.readyState <= 1) socket.close(NORMAL_CLOSURE, 'done');
    }
  }

  const cursorOf = options.cursorOf ?? defaultCursorOf;
  return {
    kind: 'websocket',
    open: (request, signal) =>
      connect(() => (options.serialize ? options.serialize(request) : JSON.stringify(request)), signal),
    getCursor: (frame) => cursorOf(frame),
    resume: (request, cursor, signal) =>
      connect(() => {
        const message = options.resumeMessage
          ? options.resumeMessage(request, cursor)
          : { type: 'resume', cursor, request };
        return typeof message === 'string' ? message : JSON.stringify(message);
      }, signal),
  };
}
