import { AgentTransportError } from '../../transports/AgentTransportError';
import { idleTimeoutOf } from '../../transports/idleTimeout';

/** Headers sent on every request to the host, or a function that makes them per request (a fresh token). */
export type AgentHostHeaders = HeadersInit | (() => HeadersInit | Promise<HeadersInit>);

export interface AgentHostClientOptions {
  baseURL: string | URL;
  sessionId: string;
  headers?: AgentHostHeaders | undefined;
  fetch?: typeof fetch | undefined;
  idleTimeoutMs?: number | undefined;
  /** Largest JSON answer read (`/runs`, `/commands`, `/state`), in bytes once decoded. Default 16 MiB. */
  maxResponseBytes?: number | undefined;
}

/** The default bound of a JSON answer: a long session's `/state` fits, an inflating bomb does not. */
export const DEFAULT_MAX_RESPONSE_BYTES = 16 * 1024 * 1024;

/** The host's refusal, `{ error: { code, message } }`; `code` is `http_<status>` when the body was not one. */
export interface AgentHostRefusal {
  code: string;
  message: string;
}

/** What the host answered a JSON request: its body when 2xx, its refusal otherwise. */
export type AgentHostAnswer =
  | { ok: true; status: number; body: unknown }
  | { ok: false; status: number; refusal: AgentHostRefusal; bodyExcerpt: string };

/** The parts of the HTTP API every request needs: the session's URLs, the headers, fetch. */
export interface AgentHostClient {
  readonly sessionId: string;
  /** `<baseURL>/sessions/<sessionId>/<path>`, with the query parameters that are defined. */
  url(path: 'runs' | 'events' | 'commands' | 'state', query?: Record<string, string | undefined>): string;
  readonly headers: AgentHostHeaders | undefined;
  readonly fetch: typeof fetch;
  readonly idleTimeoutMs: number | undefined;
  /**
   * POSTs `body` as JSON and reads the JSON answer. A network failure, an abort,
   * `idleTimeoutMs` without the whole answer and an answer longer than `maxResponseBytes`
   * reject with an `AgentTransportError` (`network_error`, `aborted`, `timeout`,
   * `response_too_large`); an answer of any status resolves.
   */
  postJSON(path: 'runs' | 'commands', body: unknown, signal: AbortSignal): Promise<AgentHostAnswer>;
  /** GETs a JSON answer, as `postJSON` does. */
  getJSON(path: 'state', signal: AbortSignal): Promise<AgentHostAnswer>;
}

const BODY_EXCERPT_LIMIT = 2048;

function refusalOf(status: number, text: string): AgentHostRefusal {
  try {
    const { error } = JSON.parse(text) as { error?: { code?: unknown; message?: unknown } };
    if (typeof error?.code === 'string') {
      return { code: error.code, message: typeof error.message === 'string' ? error.message : '' };
    }
  } catch {
    // Not the host's JSON (a proxy's page, say): the status is the refusal.
  }
  return { code: `http_${status}`, message: text.slice(0, 200) };
}

/** The body as text, read as it arrives and stopped past `maxBytes` (counted after the content encoding is undone). */
async function readBoundedText(response: Response, maxBytes: number, describe: () => string): Promise<string> {
  if (response.body === null) return '';
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let text = '';
  let bytes = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      bytes += value.byteLength;
      if (bytes > maxBytes) {
        throw new AgentTransportError('response_too_large', `${describe()} answered more than ${maxBytes} bytes`);
      }
      text += decoder.decode(value, { stream: true });
    }
  } catch (error) {
    reader.cancel().catch(() => {});
    throw error;
  }
  return text + decoder.decode();
}

function parseOrText(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

const MAX_REDIRECTS = 5;

function requestURL(input: RequestInfo | URL): URL {
  return new URL(typeof input === 'string' || input instanceof URL ? input : input.url);
}

/**
 * `fetch` that follows a redirect only to the origin it was asked: the body and the headers
 * (the credentials of `headers`) go nowhere else. A redirect to another origin, one a browser
 * hides (`opaqueredirect`) and more than five in a row are an `http_error` with the status.
 * 303, and 301/302 of a POST, continue as a GET without the body, as `fetch` does.
 */
function sameOriginFetch(fetchImpl: typeof fetch): typeof fetch {
  return async (input, init = {}) => {
    let url = requestURL(input);
    let request: RequestInit = { ...init, redirect: 'manual' };
    for (let hops = 0; ; hops += 1) {
      const response = await fetchImpl(url, request);
      const method = (request.method ?? 'GET').toUpperCase();
      if (response.type === 'opaqueredirect') {
        throw new AgentTransportError('http_error', `${method} ${url} was redirected: refused`, { status: 0 });
      }
      const location = response.headers.get('location');
      if (response.status < 300 || response.status > 399 || location === null) return response;
      response.body?.cancel().catch(() => {});
      const target = new URL(location, url);
      const { status } = response;
      if (target.origin !== url.origin) {
        throw new AgentTransportError(
          'http_error',
          `${method} ${url} was redirected to another origin (${target.origin}): refused`,
          { status },
        );
      }
      if (hops >= MAX_REDIRECTS) {
        throw new AgentTransportError(
          'http_error',
          `${method} ${url} was redirected more than ${MAX_REDIRECTS} times`,
          {
            status,
          },
        );
      }
      if (status === 303 || ((status === 301 || status === 302) && method === 'POST')) {
        const { body: _body, ...rest } = request;
        request = { ...rest, method: 'GET' };
      }
      url = target;
    }
  };
}

/** Makes the client of one session of a host mounted at `baseURL`. */
export function createAgentHostClient(options: AgentHostClientOptions): AgentHostClient {
  const base = String(options.baseURL).replace(/\/+$/, '');
  const sessionURL = `${base}/sessions/${encodeURIComponent(options.sessionId)}`;
  // Bound to globalThis: a bare `fetch` reference called as a method throws "Illegal invocation" in browsers.
  const fetchImpl = sameOriginFetch(options.fetch ?? globalThis.fetch.bind(globalThis));
  const idleTimeoutMs = idleTimeoutOf(options.idleTimeoutMs);
  const maxResponseBytes = options.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES;

  const url: AgentHostClient['url'] = (path, query = {}) => {
    const search = new URLSearchParams();
    for (const [name, value] of Object.entries(query)) if (value !== undefined) search.set(name, value);
    const text = search.toString();
    return text === '' ? `${sessionURL}/${path}` : `${sessionURL}/${path}?${text}`;
  };

  const requestJSON = async (
    method: 'GET' | 'POST',
    path: 'runs' | 'commands' | 'state',
    body: unknown,
    signal: AbortSignal,
  ): Promise<AgentHostAnswer> => {
    const target = url(path);
    const headers = new Headers(typeof options.headers === 'function' ? await options.headers() : options.headers);
    if (method === 'POST') headers.set('content-type', 'application/json');
    headers.set('accept', 'application/json');
    const controller = new AbortController();
    const forwardAbort = () => controller.abort(signal.reason);
    if (signal.aborted) controller.abort(signal.reason);
    else signal.addEventListener('abort', forwardAbort, { once: true });
    let timedOut = false;
    const timer =
      idleTimeoutMs === undefined
        ? undefined
        : setTimeout(() => {
            timedOut = true;
            controller.abort();
          }, idleTimeoutMs);
    try {
      const response = await fetchImpl(target, {
        method,
        headers,
        ...(method === 'POST' ? { body: JSON.stringify(body) } : {}),
        signal: controller.signal,
      });
      const text = await readBoundedText(response, maxResponseBytes, () => `${method} ${target}`);
      // A 2xx body that is not JSON stays text: the caller's schema refuses it, naming it.
      if (response.ok) return { ok: true, status: response.status, body: parseOrText(text) };
      return {
        ok: false,
        status: response.status,
        refusal: refusalOf(response.status, text),
        bodyExcerpt: text.slice(0, BODY_EXCERPT_LIMIT),
      };
    } catch (error) {
      // Its own refusals (a redirect elsewhere, an answer too large) are already typed.
      if (AgentTransportError.isInstance(error) && error.code !== 'aborted') throw error;
      if (timedOut) {
        throw new AgentTransportError('timeout', `${method} ${target} answered nothing for ${idleTimeoutMs} ms`);
      }
      if (signal.aborted) throw new AgentTransportError('aborted', 'The request was aborted', { cause: signal.reason });
      throw new AgentTransportError('network_error', `${method} ${target} failed: ${(error as Error).message}`, {
        cause: error,
      });
    } finally {
      clearTimeout(timer);
      signal.removeEventListener('abort', forwardAbort);
    }
  };

  return {
    sessionId: options.sessionId,
    url,
    headers: options.headers,
    fetch: fetchImpl,
    idleTimeoutMs: options.idleTimeoutMs,
    postJSON: (path, body, signal) => requestJSON('POST', path, body, signal),
    getJSON: (path, signal) => requestJSON('GET', path, undefined, signal),
  };
}

/** `<method> <url> answered <status> <code>: <message>`, the host's refusal in words. */
export function describeRefusal(
  target: string,
  answer: Extract<AgentHostAnswer, { ok: false }>,
  method: 'GET' | 'POST' = 'POST',
): string {
  const { code, message } = answer.refusal;
  return `${method} ${target} answered ${answer.status} ${code}${message === '' ? '' : `: ${message}`}`;
}

/** An answer's body read as the host's refusal and put in words, for an error of a stream or a request. */
export function describeHostAnswer(method: 'GET' | 'POST', target: string, status: number, text: string): string {
  return describeRefusal(target, { ok: false, status, refusal: refusalOf(status, text), bodyExcerpt: text }, method);
}

/**
 * The error of a last `event: forbidden` frame: the host asked `authorize` again on the open
 * stream and it refused. It is the `403` the next request would get, so nothing retries it.
 */
export function forbiddenFrameError(target: string, data: string): AgentTransportError {
  const bodyExcerpt = `{"error":${data.slice(0, BODY_EXCERPT_LIMIT)}}`;
  return new AgentTransportError('http_error', describeHostAnswer('GET', target, 403, bodyExcerpt), {
    status: 403,
    bodyExcerpt,
  });
}
