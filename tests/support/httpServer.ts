import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface RecordedRequest {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: string;
}

export interface TestServer {
  url: string;
  requests: RecordedRequest[];
  /** Resolves when the server sees the client close the connection of request `index`. */
  closed(index: number): Promise<void>;
  close(): Promise<void>;
}

/** A real HTTP server on 127.0.0.1 with a random port, recording every request it gets. */
export async function startHttpServer(
  handler: (request: RecordedRequest, response: ServerResponse, raw: IncomingMessage) => void | Promise<void>,
): Promise<TestServer> {
  const requests: RecordedRequest[] = [];
  const closings: Array<Promise<void>> = [];
  const server = createServer((raw, response) => {
    const chunks: Buffer[] = [];
    closings.push(new Promise((resolve) => response.on('close', () => resolve())));
    raw.on('data', (chunk: Buffer) => chunks.push(chunk));
    raw.on('end', () => {
      const request: RecordedRequest = {
        method: raw.method ?? '',
        url: raw.url ?? '',
        headers: raw.headers,
        body: Buffer.concat(chunks).toString('utf8'),
      };
      requests.push(request);
      void handler(request, response, raw);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    closed: (index) => closings[index] ?? Promise.reject(new Error(`no request ${index}`)),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Writes raw byte pieces with a pause between them, so the client reads them as separate chunks. */
export async function writePieces(
  response: ServerResponse,
  pieces: readonly (string | Buffer)[],
  pauseMs = 5,
): Promise<void> {
  for (const piece of pieces) {
    response.write(piece);
    await new Promise((resolve) => setTimeout(resolve, pauseMs));
  }
}
