import { createServer, type Server } from 'node:http';
import { type AddressInfo, createConnection } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { createAgentHost } from './createAgentHost';
import { toNodeHandler } from './node';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function serve(handler: Parameters<typeof toNodeHandler>[0]): Promise<number> {
  const server: Server = createServer(toNodeHandler(handler));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanups.push(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  return (server.address() as AddressInfo).port;
}

/** Writes a raw request head on a fresh socket and resolves what came back until the server closed it (or 2 s). */
function rawExchange(port: number, head: string): Promise<string> {
  return new Promise((resolve) => {
    const socket = createConnection({ host: '127.0.0.1', port });
    let reply = '';
    const finish = () => {
      socket.destroy();
      resolve(reply);
    };
    socket.setTimeout(5_000, finish);
    socket.on('data', (chunk) => {
      reply += chunk.toString('latin1');
    });
    socket.once('end', finish);
    socket.once('error', finish);
    socket.once('connect', () => socket.write(head));
  });
}

const statusLine = (reply: string) => reply.split('\r\n', 1)[0];
const bodyOf = (reply: string) => reply.slice(reply.indexOf('\r\n\r\n') + 4);

describe('toNodeHandler: whatever arrives, it answers and the process lives', () => {
  const heads: Array<[string, string, RegExp]> = [
    ['TRACE', 'TRACE / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n', /^HTTP\/1\.1 501 /],
    ['Host "a b"', 'GET /sessions/s/state HTTP/1.1\r\nHost: a b\r\nConnection: close\r\n\r\n', /^HTTP\/1\.1 400 /],
    ['Host "["', 'GET /sessions/s/state HTTP/1.1\r\nHost: [\r\nConnection: close\r\n\r\n', /^HTTP\/1\.1 400 /],
    ['Host "%zz"', 'GET /sessions/s/state HTTP/1.1\r\nHost: %zz\r\nConnection: close\r\n\r\n', /^HTTP\/1\.1 400 /],
    [
      'Host "127.0.0.1:99999"',
      'GET /sessions/s/state HTTP/1.1\r\nHost: 127.0.0.1:99999\r\nConnection: close\r\n\r\n',
      /^HTTP\/1\.1 400 /,
    ],
    ['Host "u:p@x"', 'GET /sessions/s/state HTTP/1.1\r\nHost: u:p@x\r\nConnection: close\r\n\r\n', /^HTTP\/1\.1 400 /],
    [
      'an absolute target with credentials',
      'GET http://u:p@127.0.0.1/sessions/s/state HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n',
      /^HTTP\/1\.1 200 /,
    ],
    [
      'a body on a GET',
      'GET /sessions/s/state HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello',
      /^HTTP\/1\.1 200 /,
    ],
    // node:http refuses these itself (400), before any handler: the process lives all the same.
    ['TRACK', 'TRACK / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n', /^HTTP\/1\.1 400 /],
    [
      'a header value with a control character',
      'GET /sessions/s/state HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Bad: a\u0001b\r\nConnection: close\r\n\r\n',
      /^HTTP\/1\.1 400 /,
    ],
  ];

  it.each(heads)('answers %s with a status line, and answers the next request', async (_name, head, expected) => {
    const host = createAgentHost({ providers: {}, onError: () => {} });
    cleanups.push(() => host.close());
    const port = await serve(host.fetch);
    const reply = await rawExchange(port, head);
    expect(statusLine(reply)).toMatch(expected);
    if (/ (400|501) /.test(statusLine(reply) ?? '') && reply.includes('application/json')) {
      expect(JSON.parse(bodyOf(reply)).error.code).toMatch(/^(invalid_request|not_implemented)$/);
    }
    const after = await fetch(`http://127.0.0.1:${port}/sessions/s/state`);
    expect(after.status).toBe(200);
  });

  it('answers 501 not_implemented for a TRACE, with a JSON body naming the method', async () => {
    const host = createAgentHost({ providers: {}, onError: () => {} });
    cleanups.push(() => host.close());
    const port = await serve(host.fetch);
    const reply = await rawExchange(
      port,
      'TRACE /sessions/s/state HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n',
    );
    expect(statusLine(reply)).toBe('HTTP/1.1 501 Not Implemented');
    expect(JSON.parse(bodyOf(reply))).toEqual({
      error: { code: 'not_implemented', message: 'The host does not serve TRACE requests' },
    });
  });

  it('closes a CONNECT without a handler, and the server goes on answering', async () => {
    const host = createAgentHost({ providers: {}, onError: () => {} });
    cleanups.push(() => host.close());
    const port = await serve(host.fetch);
    await rawExchange(port, 'CONNECT 127.0.0.1:1 HTTP/1.1\r\nHost: 127.0.0.1:1\r\n\r\n');
    expect((await fetch(`http://127.0.0.1:${port}/sessions/s/state`)).status).toBe(200);
  });

  it('answers 500 when the handler throws synchronously or rejects, and lives', async () => {
    let calls = 0;
    const port = await serve(() => {
      calls += 1;
      if (calls === 1) throw new Error('thrown, not rejected');
      return Promise.reject(new Error('rejected'));
    });
    for (let attempt = 0; attempt < 2; attempt += 1) {
      const answer = await fetch(`http://127.0.0.1:${port}/`);
      expect([answer.status, (await answer.json()).error.code]).toEqual([500, 'internal_error']);
    }
    expect(calls).toBe(2);
  });

  it('answers a body it refuses or stops reading (415, 413), then closes that connection; the process lives', async () => {
    const host = createAgentHost({ providers: {}, onError: () => {}, maxBodyBytes: 1_000 });
    cleanups.push(() => host.close());
    const port = await serve(host.fetch);
    const big = JSON.stringify({ provider: 'p', input: 'x'.repeat(2_000_000) });
    const cases: Array<[string, number, string]> = [
      ['text/plain', 415, 'unsupported_media_type'],
      ['application/json', 413, 'payload_too_large'],
    ];
    for (const [type, status, code] of cases) {
      const answer = await fetch(`http://127.0.0.1:${port}/sessions/s/runs`, {
        method: 'POST',
        headers: { 'content-type': type },
        body: big,
      }).catch((error: unknown) => error);
      // The answer may come before the whole body is sent: the client may see it, or a reset.
      if (answer instanceof Response) {
        expect([answer.status, (await answer.json()).error.code, answer.headers.get('connection')]).toEqual([
          status,
          code,
          'close',
        ]);
      }
      expect((await fetch(`http://127.0.0.1:${port}/sessions/s/state`)).status).toBe(200);
    }
  });

  it("fails the handler's read of a body whose client went away mid-body, rather than leave it waiting", async () => {
    let outcome: (value: string) => void = () => {};
    const read = new Promise<string>((resolve) => {
      outcome = resolve;
    });
    let arrive: () => void = () => {};
    const arrived = new Promise<void>((resolve) => {
      arrive = resolve;
    });
    const port = await serve(async (request) => {
      arrive();
      try {
        await request.text();
        outcome('read to the end');
      } catch {
        outcome('failed');
      }
      return new Response(null, { status: 204 });
    });
    const socket = createConnection({ host: '127.0.0.1', port });
    await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
    socket.write('POST /x HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1000\r\n\r\n0123456789');
    // Once the handler has the request and is reading its body, go away.
    await arrived;
    socket.destroy();
    const bounded = new Promise<string>((resolve) => setTimeout(() => resolve('still waiting after 10 s'), 10_000));
    expect(await Promise.race([read, bounded])).toBe('failed');
  });
});
