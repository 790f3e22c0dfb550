// `npm start`: builds the React page with Vite, then serves it and the agents it talks to
// from one server on 127.0.0.1. The OpenAI-compatible, Anthropic and AG-UI endpoints replay
// recordings, or proxy the real services when their keys are in this process's environment;
// an agent-machines host at /api/agent runs an agent (createAgent) whose tools run server-side,
// on the real OpenAI-compatible service when its key is here, else on a scripted model.
// `PORT` picks the port (default 4173, 0 for any free one); a port in use is reported and the
// next one tried, and a `PORT` that is not a port stops the start with a one-line error.
// `DEMO_OUT_DIR` names the folder the page is built in and served from (default
// examples/demo/dist/); one that holds a build of the same sources is served as it is.
import { readFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { extname, join, normalize, resolve as resolvePath } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { brotliCompress, gzip, constants as zlibConstants } from 'node:zlib';
import * as z from 'zod/mini';
import { createAgentHost } from '../../server/createAgentHost';
import { toNodeHandler } from '../../server/node';
import { handleAgUI } from './agUIEndpoint';
import { handleAISDK } from './aiSdkEndpoint';
import { anthropicUpstreamFromEnv, handleAnthropic } from './anthropicEndpoint';
import { AI_SDK_DEMO_PATH, DEMO_HOST_PATH, DEMO_HOST_PROVIDER } from './app/demoProviders';
import { buildDemoApp, DEMO_DIST_DIRECTORY, isDemoAppBuilt } from './buildDemoApp';
import { createDemoHostAgent } from './hostAgent';
import { handleOpenAI, openAIUpstreamFromEnv } from './openAIEndpoint';

export interface DemoServerOptions {
  /**
   * Default 4173; 0 takes any free port. A port in use is reported, and the next one tried.
   * One outside 0-65535 is a `RangeError`, thrown before the build.
   */
  port?: number;
  host?: string;
  /** Where the page is built; default `examples/demo/dist/`. */
  outDir?: string;
  /**
   * `false`: serve the page `outDir` already holds, built once for several servers (as the
   * browser tests do). Default: build it, unless `outDir` holds a build of the same sources.
   */
  build?: boolean;
  /** Read for the real services' keys; default `process.env`. */
  env?: NodeJS.ProcessEnv;
  log?: (line: string) => void;
}

export interface DemoServer {
  url: string;
  /** How long the Vite build took, in milliseconds (0 when the page was not rebuilt). */
  buildMs: number;
  close(): Promise<void>;
}

const CONTENT_TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.json': 'application/json',
};
/** The types sent compressed to a client that accepts it. */
const COMPRESSIBLE = new Set(['.html', '.js', '.css', '.svg', '.json']);
type Encoding = 'br' | 'gzip';
const compressors: Record<Encoding, (content: Buffer) => Promise<Buffer>> = {
  // Quality 5: nearly gzip's speed at a smaller size; 11 (the default) takes seconds for the script.
  br: (content) =>
    promisify(brotliCompress)(content, { params: { [zlibConstants.BROTLI_PARAM_QUALITY]: 5 } }) as Promise<Buffer>,
  gzip: (content) => promisify(gzip)(content) as Promise<Buffer>,
};
const PORT_ATTEMPTS = 10;
const MAX_PORT = 65_535;

/** What a client may ask the host's agent. */
const hostInputSchema = z.object({ prompt: z.string() });

/** Whether a request is for the agent-machines host, which reads its own bodies. */
function isHostPath(pathname: string): boolean {
  return pathname === DEMO_HOST_PATH || pathname.startsWith(`${DEMO_HOST_PATH}/`);
}

function readBody(request: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    request.on('error', reject);
  });
}

/**
 * The encoding to answer `accept-encoding` with: brotli, else gzip, else none. A coding the
 * client lists with `q=0` is one it refuses.
 */
export function acceptedEncoding(header: string | undefined): Encoding | undefined {
  const accepted = new Set<string>();
  for (const item of (header ?? '').split(',')) {
    const [name = '', ...parameters] = item.split(';').map((part) => part.trim().toLowerCase());
    const q = parameters.find((parameter) => parameter.startsWith('q='));
    if (q !== undefined && !(Number(q.slice(2)) > 0)) continue;
    accepted.add(name);
  }
  if (accepted.has('br')) return 'br';
  if (accepted.has('gzip')) return 'gzip';
  return undefined;
}

/** Serves the built page's files; text ones compressed (once per file and encoding) when the client accepts it. */
function fileServer(outDir: string) {
  const compressed = new Map<string, Promise<Buffer>>();
  return async (pathname: string, request: IncomingMessage, response: ServerResponse): Promise<void> => {
    // normalize() folds `..` away before the join, so no path leaves the build folder.
    const relative = normalize(decodeURIComponent(pathname)).replace(/^([/\\]|\.\.)+/, '');
    const file = relative === '' || extname(relative) === '' ? 'index.html' : relative;
    let content: Buffer;
    try {
      content = await readFile(join(outDir, file));
    } catch {
      response.writeHead(404, { 'content-type': 'text/plain' });
      return void response.end(`not found: ${pathname}`);
    }
    const headers: Record<string, string> = {
      'content-type': CONTENT_TYPES[extname(file)] ?? 'application/octet-stream',
    };
    if (COMPRESSIBLE.has(extname(file))) {
      headers.vary = 'Accept-Encoding';
      const encoding = acceptedEncoding(request.headers['accept-encoding']);
      if (encoding !== undefined) {
        const key = `${encoding}:${file}`;
        let body = compressed.get(key);
        if (body === undefined) {
          body = compressors[encoding](content);
          compressed.set(key, body);
        }
        content = await body;
        headers['content-encoding'] = encoding;
      }
    }
    headers['content-length'] = String(content.length);
    response.writeHead(200, headers);
    response.end(content);
  };
}

/** Whether `listen` takes `port`: 0 (any free port) to 65535. */
function isPort(port: number): boolean {
  return Number.isInteger(port) && port >= 0 && port <= MAX_PORT;
}

function listen(server: Server, port: number, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const onError = (error: Error) => {
      server.off('listening', onListening);
      reject(error);
    };
    const onListening = () => {
      server.off('error', onError);
      resolve((server.address() as AddressInfo).port);
    };
    server.once('error', onError);
    server.once('listening', onListening);
    server.listen(port, host);
  });
}

/** Builds the page and starts the demo server; resolves once it listens. */
export async function startDemoServer(options: DemoServerOptions = {}): Promise<DemoServer> {
  const host = options.host ?? '127.0.0.1';
  const outDir = options.outDir ?? DEMO_DIST_DIRECTORY;
  const env = options.env ?? process.env;
  const log = options.log ?? (() => {});
  const firstPort = options.port ?? 4173;
  // Checked before the build, which takes seconds, rather than when `listen` throws after it.
  if (!isPort(firstPort)) throw new RangeError(`port must be a whole number from 0 to ${MAX_PORT}, not ${firstPort}`);
  const openAI = openAIUpstreamFromEnv(env);
  const anthropic = anthropicUpstreamFromEnv(env);
  let buildMs = 0;
  if (options.build === false) {
    // The caller built it.
  } else if (await isDemoAppBuilt(outDir)) {
    log(`The page is unchanged since its last build; not rebuilt (${outDir})`);
  } else {
    buildMs = await buildDemoApp(outDir);
    log(`Built the page in ${(buildMs / 1000).toFixed(1)} s (${outDir})`);
  }
  const serveFile = fileServer(outDir);

  // An agent run here, its tools too: the page's "agent-machines host" provider streams its runs
  // from this host's event log, and its commands and answers (an approval) come back here.
  const agentHost = createAgentHost({
    providers: {
      [DEMO_HOST_PROVIDER]: {
        provider: createDemoHostAgent(openAI),
        parseInput: (input) => hostInputSchema.parse(input),
      },
    },
    basePath: DEMO_HOST_PATH,
    onError: (error, { sessionId, runId }) =>
      log(
        `agent-machines host (session "${sessionId}"${runId === undefined ? '' : `, run "${runId}"`}): ${String(error)}`,
      ),
  });
  const serveHost = toNodeHandler(agentHost.fetch);
  // The emails the AI SDK backend's `send_email` sent once approved.
  const aiSdkOutbox = { sent: [] as Array<{ to: string; body: string }> };

  const server = createServer((request, response) => {
    const { pathname } = new URL(request.url ?? '/', 'http://demo.invalid');
    // Before any body is read: the host streams request bodies itself.
    if (isHostPath(pathname)) return serveHost(request, response);
    const handle = async () => {
      if (request.method === 'POST') {
        const body = await readBody(request);
        if (pathname === '/v1/chat/completions') return handleOpenAI(body, response, openAI);
        if (pathname === '/v1/messages') return handleAnthropic(body, response, anthropic);
        if (pathname === '/agui') return handleAgUI(body, response);
        if (pathname === AI_SDK_DEMO_PATH) return handleAISDK(body, response, aiSdkOutbox);
      }
      if (pathname === '/api/config') {
        response.writeHead(200, { 'content-type': 'application/json' });
        // Only whether a real service is behind each endpoint: never a key.
        return void response.end(
          JSON.stringify({ openai: openAI ? 'live' : 'recorded', anthropic: anthropic ? 'live' : 'recorded' }),
        );
      }
      return serveFile(pathname, request, response);
    };
    handle().catch((error: unknown) => {
      log(`${request.method} ${pathname} failed: ${String(error)}`);
      if (!response.headersSent) response.writeHead(500, { 'content-type': 'application/json' });
      response.end(JSON.stringify({ error: { message: String(error) } }));
    });
  });

  let port = firstPort;
  for (let attempt = 1; ; attempt += 1) {
    try {
      port = await listen(server, port, host);
      break;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw error;
      const next = attempt < PORT_ATTEMPTS && port < MAX_PORT ? port + 1 : 0;
      log(`Port ${port} on ${host} is in use; trying ${next === 0 ? 'a free port' : next}.`);
      port = next;
    }
  }
  return {
    url: `http://${host}:${port}/`,
    buildMs,
    close: async () => {
      await new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      });
      // Cancels the runs still going and waits for their last events to reach the log.
      await agentHost.close();
    },
  };
}

/**
 * The port `PORT` names: `undefined` when it is unset or blank (the default port), `NaN` when
 * it is not a whole number. `Number()` alone would take "1e3", "0x10" or " " as ports.
 */
function portFromEnv(value: string | undefined): number | undefined {
  const text = value?.trim() ?? '';
  if (text === '') return undefined;
  return /^\d+$/.test(text) ? Number(text) : Number.NaN;
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const port = portFromEnv(process.env.PORT);
  if (port !== undefined && !isPort(port)) {
    // A mistyped setting, not a bug: one line that names it, and no stack trace.
    console.error(
      `agent-machines demo: PORT must be a whole number from 0 to ${MAX_PORT} (0 for any free port), not ${JSON.stringify(process.env.PORT)}.`,
    );
    process.exit(1);
  }
  const outDir = process.env.DEMO_OUT_DIR?.trim() || undefined;
  const demo = await startDemoServer({
    ...(port === undefined ? {} : { port }),
    // Resolved here: Vite would take a relative folder from the page's sources, not from where `npm start` ran.
    ...(outDir === undefined ? {} : { outDir: resolvePath(outDir) }),
    log: console.log,
  });
  const openAI = openAIUpstreamFromEnv(process.env) ? 'proxied to the real service' : 'recorded';
  const anthropic = anthropicUpstreamFromEnv(process.env) ? 'proxied to the real service' : 'recorded';
  console.log(
    `agent-machines demo: ${demo.url}  (OpenAI-compatible: ${openAI}; Anthropic: ${anthropic}; ` +
      `agent-machines host: ${DEMO_HOST_PATH}; Ctrl+C stops)`,
  );
}
