import type { IncomingMessage, ServerResponse } from 'node:http';
import { pipeline, Readable } from 'node:stream';
import type { ReadableStream as NodeReadableStream } from 'node:stream/web';

/** A web request handler: the host's `fetch`, or any other. */
export type AgentFetchHandler = (request: Request) => Promise<Response>;

function toRequest(request: IncomingMessage, signal: AbortSignal): Request {
  const host = request.headers.host ?? '127.0.0.1';
  const url = new URL(request.url ?? '/', `http://${host}`);
  const headers = new Headers();
  for (const [name, value] of Object.entries(request.headers)) {
    if (value === undefined) continue;
    for (const item of Array.isArray(value) ? value : [value]) headers.append(name, item);
  }
  const method = request.method ?? 'GET';
  const hasBody = method !== 'GET' && method !== 'HEAD';
  return new Request(url, {
    method,
    headers,
    signal,
    ...(hasBody ? { body: Readable.toWeb(request) as unknown as ReadableStream<Uint8Array>, duplex: 'half' } : {}),
  } as RequestInit);
}

/**
 * Serves a web `Request`/`Response` handler (the host's `fetch`) from `node:http`. The
 * response body is piped with backpressure: a client that reads slowly makes the handler's
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
    handler(toRequest(request, controller.signal)).then(
      (answer) => {
        const headers: Record<string, string> = {};
        answer.headers.forEach((value, name) => {
          headers[name] = value;
        });
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
      },
      () => {
        if (!response.headersSent) response.writeHead(500, { 'content-type': 'application/json' });
        response.end(
          JSON.stringify({ error: { code: 'internal_error', message: 'The host failed to handle the request' } }),
        );
      },
    );
  };
}
