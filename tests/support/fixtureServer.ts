import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { startHttpServer, type TestServer } from './httpServer';

/**
 * Serves recorded SSE fixture files from `directory` on a real loopback server. The
 * request picks the file (`pick` reads it from the request body); the bytes go out in
 * 13-byte pieces, so frames and multi-byte characters are split across reads.
 */
export async function startFixtureServer(
  directory: string,
  pick: (body: unknown, url: string) => string,
): Promise<TestServer> {
  return startHttpServer(async (request, response) => {
    const body = request.body === '' ? undefined : JSON.parse(request.body);
    const name = pick(body, request.url);
    const bytes = readFileSync(join(directory, name));
    response.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    for (let offset = 0; offset < bytes.length; offset += 13) {
      if (response.destroyed) return;
      response.write(bytes.subarray(offset, offset + 13));
      await new Promise((resolve) => setImmediate(resolve));
    }
    response.end();
  });
}
