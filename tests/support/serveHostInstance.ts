import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { toNodeHandler } from '../../server/node';

/**
 * Serves a host instance run as a process of its own: it listens on a free loopback port and
 * prints `{ url }` as its first line; SIGTERM closes the server, then the host, then its log.
 */
export function serveHostInstance(
  host: { fetch(request: Request): Promise<Response>; close(): Promise<unknown> },
  log: { close(): Promise<unknown> },
): void {
  const server = createServer(toNodeHandler(host.fetch));
  server.listen(0, '127.0.0.1', () => {
    const { port } = server.address() as AddressInfo;
    process.stdout.write(`${JSON.stringify({ url: `http://127.0.0.1:${port}` })}\n`);
  });
  process.on('SIGTERM', () => {
    server.closeAllConnections();
    server.close();
    host
      .close()
      .then(() => log.close())
      .finally(() => process.exit(0));
  });
}
