import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createParser } from 'eventsource-parser';
import type { AgentEvent } from '../../protocol/eventSchemas';
import type { AgentFetchHandler } from '../../server/node';
import { toNodeHandler } from '../../server/node';

/** A host served over `node:http` on loopback. */
export interface ServedHost {
  url: string;
  server: Server;
  close(): Promise<void>;
}

/** Serves a fetch handler (a host's) on 127.0.0.1 on a free port. */
export async function serveHost(handler: AgentFetchHandler): Promise<ServedHost> {
  const server = createServer(toNodeHandler(handler));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    server,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** One server-sent event as read: `event` is set for named events (`dropped`), `id` is the cursor. */
export interface ReadFrame {
  id: string | undefined;
  event: string | undefined;
  data: string;
}

/** The frames of an SSE response body, in order, until it ends; comments are skipped. */
export async function* readFrames(response: Response): AsyncGenerator<ReadFrame> {
  if (response.body === null) return;
  const queue: ReadFrame[] = [];
  const parser = createParser({
    onEvent: (message) => queue.push({ id: message.id, event: message.event, data: message.data }),
  });
  const decoder = new TextDecoder();
  const reader = response.body.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      parser.feed(decoder.decode(value, { stream: true }));
      while (queue.length > 0) yield queue.shift() as ReadFrame;
    }
  } finally {
    await reader.cancel().catch(() => {});
  }
}

/** Reads frames until `stop` says so (or the stream ends); aborts the request after. */
export async function readEvents(
  url: string,
  options: { headers?: Record<string, string>; stop?: (frames: ReadFrame[]) => boolean; timeoutMs?: number } = {},
): Promise<{ status: number; frames: ReadFrame[]; events: AgentEvent[] }> {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(new Error('readEvents timed out')), options.timeoutMs ?? 5_000);
  const frames: ReadFrame[] = [];
  try {
    const response = await fetch(url, { headers: options.headers ?? {}, signal: controller.signal });
    if (!response.ok) return { status: response.status, frames, events: [] };
    for await (const frame of readFrames(response)) {
      frames.push(frame);
      if (options.stop?.(frames)) break;
    }
    return {
      status: response.status,
      frames,
      events: frames.filter((frame) => frame.event === undefined).map((frame) => JSON.parse(frame.data) as AgentEvent),
    };
  } finally {
    clearTimeout(timer);
    controller.abort();
  }
}

/** POSTs JSON and returns the status and the parsed answer. */
export async function postJson(
  url: string,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}
