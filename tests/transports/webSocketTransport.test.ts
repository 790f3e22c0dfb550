import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { WebSocket, WebSocketServer } from 'ws';
import { AgentTransportError } from '../../transports/AgentTransportError';
import { createWebSocketTransport, type WebSocketConstructor } from '../../transports/createWebSocketTransport';

let server: WebSocketServer | undefined;
afterEach(async () => {
  for (const client of server?.clients ?? []) client.terminate();
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  server = undefined;
});

interface Session {
  requests: unknown[];
  closes: Array<{ code: number }>;
}

async function startServer(
  onRequest: (socket: WebSocket, request: unknown) => void,
): Promise<{ url: string; session: Session }> {
  const session: Session = { requests: [], closes: [] };
  server = new WebSocketServer({ host: '127.0.0.1', port: 0 });
  server.on('connection', (socket) => {
    socket.once('message', (data) => {
      const request = JSON.parse(String(data));
      session.requests.push(request);
      onRequest(socket, request);
    });
    socket.on('close', (code) => session.closes.push({ code }));
  });
  await new Promise<void>((resolve) => server?.once('listening', () => resolve()));
  const { port } = server.address() as AddressInfo;
  return { url: `ws://127.0.0.1:${port}`, session };
}

const transportFor = (url: string) =>
  createWebSocketTransport({ url, WebSocket: WebSocket as unknown as WebSocketConstructor });

async function run(url: string, signal = new AbortController().signal) {
  const frames: unknown[] = [];
  let error: unknown;
  try {
    for await (const frame of transportFor(url).open({ prompt: 'hi' }, signal)) frames.push(frame);
  } catch (caught) {
    error = caught;
  }
  return { frames, error: error as AgentTransportError | undefined };
}

const waitFor = async (check: () => boolean) => {
  for (let attempt = 0; attempt < 100 && !check(); attempt += 1)
    await new Promise((resolve) => setTimeout(resolve, 10));
};

describe('createWebSocketTransport against a real ws server', () => {
  it('sends the request first and yields each JSON frame until a normal close', async () => {
    const { url, session } = await startServer((socket) => {
      socket.send(JSON.stringify({ type: 'delta', text: 'Hel' }));
      socket.send(Buffer.from(JSON.stringify({ type: 'delta', text: 'lo €' })));
      socket.send(JSON.stringify({ type: 'done' }));
      socket.close(1000);
    });
    const { frames, error } = await run(url);
    expect(error).toBeUndefined();
    expect(frames).toEqual([{ type: 'delta', text: 'Hel' }, { type: 'delta', text: 'lo €' }, { type: 'done' }]);
    expect(session.requests).toEqual([{ prompt: 'hi' }]);
  });

  it('fails on a malformed frame after the frames before it', async () => {
    const { url } = await startServer((socket) => {
      socket.send(JSON.stringify({ n: 1 }));
      socket.send('{not json');
    });
    const { frames, error } = await run(url);
    expect(frames).toEqual([{ n: 1 }]);
    expect(AgentTransportError.isInstance(error) && error.code).toBe('invalid_frame');
    expect(error?.message).toContain('{not json');
  });

  it('reports an abnormal close with its code and reason', async () => {
    const { url } = await startServer((socket) => {
      socket.send(JSON.stringify({ n: 1 }));
      socket.close(1011, 'model crashed');
    });
    const { frames, error } = await run(url);
    expect(frames).toEqual([{ n: 1 }]);
    expect(error).toMatchObject({ code: 'abnormal_close', closeCode: 1011, closeReason: 'model crashed' });
  });

  it('closes the socket on abort, and the server sees it', async () => {
    const { url, session } = await startServer((socket) => socket.send(JSON.stringify({ n: 1 })));
    const controller = new AbortController();
    const frames: unknown[] = [];
    let error: unknown;
    try {
      for await (const frame of transportFor(url).open({}, controller.signal)) {
        frames.push(frame);
        controller.abort();
      }
    } catch (caught) {
      error = caught;
    }
    expect(frames).toEqual([{ n: 1 }]);
    expect(AgentTransportError.isInstance(error) && error.code).toBe('aborted');
    await waitFor(() => session.closes.length > 0);
    expect(session.closes).toEqual([{ code: 1000 }]);
  });

  it('makes the url and the subprotocols per connection, so each carries the current token', async () => {
    const handshakes: Array<{ url: string | undefined; protocol: string | undefined }> = [];
    server = new WebSocketServer({ host: '127.0.0.1', port: 0 });
    server.on('connection', (socket, request) => {
      handshakes.push({ url: request.url, protocol: request.headers['sec-websocket-protocol'] });
      socket.once('message', () => {
        socket.send(JSON.stringify({ protocol: socket.protocol }));
        socket.close(1000);
      });
    });
    await new Promise<void>((resolve) => server?.once('listening', () => resolve()));
    const { port } = server.address() as AddressInfo;
    let token = 0;
    const transport = createWebSocketTransport({
      url: async () => `ws://127.0.0.1:${port}/run?token=t${++token}`,
      protocols: () => ['agent-event', `bearer.t${token}`],
      WebSocket: WebSocket as unknown as WebSocketConstructor,
    });
    const frames: unknown[] = [];
    for (let run = 0; run < 2; run += 1) {
      for await (const frame of transport.open({}, new AbortController().signal)) frames.push(frame);
    }
    expect(handshakes).toEqual([
      { url: '/run?token=t1', protocol: 'agent-event,bearer.t1' },
      { url: '/run?token=t2', protocol: 'agent-event,bearer.t2' },
    ]);
    expect(frames).toEqual([{ protocol: 'agent-event' }, { protocol: 'agent-event' }]);
  });

  it('sends handshake headers made per connection through ws, and refuses them for a WebSocket that cannot', async () => {
    const authorizations: Array<string | undefined> = [];
    server = new WebSocketServer({ host: '127.0.0.1', port: 0 });
    server.on('connection', (socket, request) => {
      authorizations.push(request.headers.authorization);
      socket.once('message', () => {
        socket.send(JSON.stringify({ ok: true }));
        socket.close(1000);
      });
    });
    await new Promise<void>((resolve) => server?.once('listening', () => resolve()));
    const { port } = server.address() as AddressInfo;
    let token = 0;
    const transport = createWebSocketTransport({
      url: `ws://127.0.0.1:${port}/run`,
      headers: async () => ({ Authorization: `Bearer t${++token}` }),
      WebSocket: WebSocket as unknown as WebSocketConstructor,
    });
    const frames: unknown[] = [];
    for (let run = 0; run < 2; run += 1) {
      for await (const frame of transport.open({}, new AbortController().signal)) frames.push(frame);
    }
    expect(authorizations).toEqual(['Bearer t1', 'Bearer t2']);
    expect(frames).toEqual([{ ok: true }, { ok: true }]);
    // A browser's global WebSocket takes no headers.
    const original = (globalThis as { WebSocket?: unknown }).WebSocket;
    (globalThis as { WebSocket?: unknown }).WebSocket = WebSocket;
    try {
      const browserLike = createWebSocketTransport({
        url: `ws://127.0.0.1:${port}/run`,
        headers: { Authorization: 'x' },
      });
      await expect(
        browserLike.open({}, new AbortController().signal)[Symbol.asyncIterator]().next(),
      ).rejects.toMatchObject({ code: 'unsupported_headers' });
    } finally {
      (globalThis as { WebSocket?: unknown }).WebSocket = original;
    }
    expect(authorizations).toHaveLength(2);
  });

  it('says which constructor is missing when there is no WebSocket', async () => {
    const transport = createWebSocketTransport({ url: 'ws://127.0.0.1:1' });
    const original = (globalThis as { WebSocket?: unknown }).WebSocket;
    (globalThis as { WebSocket?: unknown }).WebSocket = undefined;
    try {
      await expect(
        transport.open({}, new AbortController().signal)[Symbol.asyncIterator]().next(),
      ).rejects.toMatchObject({
        code: 'missing_websocket',
      });
    } finally {
      (globalThis as { WebSocket?: unknown }).WebSocket = original;
    }
  });
});

describe('createWebSocketTransport without a server', () => {
  it('reports a refused connection as a network_error', async () => {
    const probe = new WebSocketServer({ host: '127.0.0.1', port: 0 });
    await new Promise<void>((resolve) => probe.once('listening', () => resolve()));
    const { port } = probe.address() as AddressInfo;
    await new Promise<void>((resolve) => probe.close(() => resolve()));
    const { frames, error } = await run(`ws://127.0.0.1:${port}`);
    expect(frames).toEqual([]);
    expect(AgentTransportError.isInstance(error) && error.code).toBe('network_error');
  });
});
