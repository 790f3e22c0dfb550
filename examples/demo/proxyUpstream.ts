import type { ServerResponse } from 'node:http';

/**
 * Sends a request to the real service and streams its answer back unchanged. The key stays
 * here: the page talks only to the demo server, which adds it.
 */
export async function proxyUpstream(
  response: ServerResponse,
  url: string,
  headers: Record<string, string>,
  body: string,
): Promise<void> {
  const controller = new AbortController();
  // The page's Stop closes its request; the upstream request goes with it.
  response.on('close', () => controller.abort());
  try {
    const upstream = await fetch(url, { method: 'POST', headers, body, signal: controller.signal });
    response.writeHead(upstream.status, {
      'content-type': upstream.headers.get('content-type') ?? 'application/json',
      'cache-control': 'no-cache',
    });
    const reader = upstream.body?.getReader();
    for (let read = await reader?.read(); read !== undefined && !read.done; read = await reader?.read()) {
      response.write(read.value);
    }
    response.end();
  } catch (error) {
    if (controller.signal.aborted) return;
    if (!response.headersSent) response.writeHead(502, { 'content-type': 'application/json' });
    response.end(JSON.stringify({ error: { message: `the demo server could not reach ${url}: ${String(error)}` } }));
  }
}
