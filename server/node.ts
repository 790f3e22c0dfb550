import type { IncomingMessage, ServerResponse } from 'node:http';
import { pipeline, Readable } from 'node:stream';
import type { ReadableStream as NodeReadableStream } from 'node:stream/web';

/** A web request handler: the host's `fetch`, or any other. */
export type AgentFetchHandler = (request: Request) => Promise<Response>;

/** Methods a web `Request` cannot carry: no handler can be given them. */
const UNSERVED_METHODS = new Set(['CONNECT', 'TRACE', 'TRACK']);
/** A `Host` header: a name or an IPv4 address (or an IPv6 one in brackets), and an optional port. */
const HOST_HEADER = /^(?:[A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]+)*\.?|\[[0-9A-Fa-f:.]+\])(?::([0-9]{1,5}))?$/;

/**
 * The body of a node request as a web stream, read as the handler pulls. Not
 * `Readable.toWeb`: its cancel destroys the request (and with it the socket the answer goes
 * out on), and data already on its way then hits a closed controller, which throws outside
 * any handler. Here a cancelled body is read on and dropped, and `cancelled` says so, so the
 * connection is closed after the answer instead of carrying the rest.
 */
function bodyOf(request: IncomingMessage): { body: ReadableStream<Uint8Array>; cancelled: () => boolean } {
  let finished = false;
  let cancelled = false;
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      request.on('data', (chunk: Buffer) => {
        if (finished) return;
        controller.enqueue(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength));
        if ((controller.desiredSize ?? 0) <= 0) request.pause();
      });
      request.once('end', () => {
        if (finished) return;
        finished = true;
        controller.close();
      });
      request.once('error', (error) => {
        if (finished) return;
        finished = true;
        controller.error(error);
      });
      // A client that goes away mid-body: the handler's read fails instead of waiting for ever.
      request.once('close', () => {
        if (finished) return;
        finished = true;
        controller.error(new Error('The client closed the connection before the whole body arrived'));
      });
    },
    pull() {
      request.resume();
    },
    cancel() {
      finished = true;
      cancelled = true;
      request.resume();
    },
  });
  return { body, cancelled: () => cancelled };
}

/** What a request that cannot become a web `Request` is answered with. */
interface Refusal {
  status: 400 | 501;
  code: 'invalid_request' | 'not_implemented';
  message: string;
}

/**
 * The web `Request` of a node request, or why there is none. Whatever arrives here has
 * passed node's own parser; what `URL`, `Headers` or `Request` would still refuse (a malformed
 * `Host`, a port out of range, credentials in the URL, a method such as TRACE) is a refusal,
 * never a throw: this runs outside any handler, where a throw ends the process.
 */
function toRequest(
  request: IncomingMessage,
  signal: AbortSignal,
): { request: Request; cancelled: () => boolean } | Refusal {
  const method = request.method ?? 'GET';
  if (UNSERVED_METHODS.has(method.toUpperCase())) {
    return { status: 501, code: 'not_implemented', message: `The host does not serve ${method} requests` };
  }
  const host = request.headers.host ?? '127.0.0.1';
  const port = HOST_HEADER.exec(host)?.[1];
  if (!HOST_HEADER.test(host) || (port !== undefined && Number(port) > 65_535)) {
    return { status: 400, code: 'invalid_request', message: 'The Host header is not a host name and port' };
  }
  try {
    // Only the path and query of the target: an absolute target (`GET http://user:pass@x/`)
    // does not choose the origin, nor carry credentials into the URL.
    const target = request.url ?? '/';
    const { pathname, search } = new URL(target.startsWith('/') ? `http://host${target}` : target);
    const url = new URL(`http://${host}${pathname}${search}`);
    const headers = new Headers();
    for (const [name, value] of Object.entries(request.headers)) {
      if (value === undefined) continue;
      for (const item of Array.isArray(value) ? value : [value]) headers.append(name, item);
    }
    const hasBody = method !== 'GET' && method !== 'HEAD';
    const body = hasBody ? bodyOf(request) : undefined;
    const init = { method, headers, signal, ...(body ? { body: body.body, duplex: 'half' } : {}) };
    return { request: new Request(url, init as RequestInit), cancelled: body?.cancelled ?? (() => false) };
  } catch {
    return { status: 400, code: 'invalid_request', message: 'The request line or a header is not valid' };
  }
}

function answerJson(response: ServerResponse, status: number, error: { code: string; message: string }): void {
  const body = JSON.stringify({ error });
  if (!response.headersSent) {
    response.writeHead(status, {
      'content-type': 'application/json; charset=utf-8',
      'content-length': Buffer.byteLength(body),
      'cache-control': 'no-store',
    });
  }
  response.end(body);
}

/**
 * Serves a web `Request`/`Response` handler (the host's `fetch`) from `node:http`. Whatever
 * arrives is answered and nothing throws outside the handler: what cannot become a web
 * `Request` is `400 invalid_request` (a malformed `Host`) or `501 not_implemented` (`TRACE`),
 * a handler that throws is `500`. The response body is piped with backpressure: a client that reads slowly makes the handler's
 * stream wait, never the process buffer; a client that goes away cancels the stream.
 *
 * @example
 * import { createServer } from 'node:http';
 * createServer(toNodeHandler(host.fetch)).listen(8787, '127.0.0.1');
 */
export function toNodeHandler(
  handler: AgentFetchHandler,
): (request: IncomingMessage, response: ServerResponse) => void {
  return (request, response) => {
    const controller = new AbortController();
    response.on('close', () => controller.abort());
    const converted = toRequest(request, controller.signal);
    if (!('request' in converted)) {
      // The body is not read: the connection closes after the answer rather than carry it.
      response.setHeader('connection', 'close');
      answerJson(response, converted.status, { code: converted.code, message: converted.message });
      return;
    }
    let answering: Promise<Response>;
    try {
      answering = handler(converted.request);
    } catch (error) {
      answering = Promise.reject(error);
    }
    answering
      .then((answer) => {
        const headers: Record<string, string> = {};
        answer.headers.forEach((value, name) => {
          headers[name] = value;
        });
        // A body the handler did not read to its end (refused, too large) is not carried on the connection.
        if (converted.cancelled()) headers.connection = 'close';
        response.writeHead(answer.status, headers);
        // node:http holds the head back until the first body write: an event stream with
        // nothing to send yet would keep the client waiting for its headers.
        response.flushHeaders();
        if (answer.body === null) {
          response.end();
          return;
        }
        // Event streams go out as written, not held for a larger packet.
        response.socket?.setNoDelay(true);
        const body = Readable.fromWeb(answer.body as unknown as NodeReadableStream<Uint8Array>);
        // pipeline, not pipe: a client that goes away destroys the body too, which cancels
        // the handler's stream, so nothing goes on reading for a reader that is gone.
        pipeline(body, response, () => {});
      })
      .catch(() => {
        if (response.headersSent) {
          response.destroy();
          return;
        }
        if (converted.cancelled()) response.setHeader('connection', 'close');
        answerJson(response, 500, { code: 'internal_error', message: 'The host failed to handle the request' });
      });
  };
}
