import type { AgentErrorInfo } from '../protocol/eventSchemas';
import { redactSecrets, redactSecretsIn } from '../protocol/redactSecrets';
import { AgentTransportError } from '../transports/AgentTransportError';

const SERVER_MESSAGE_LIMIT = 500;

/**
 * The message a server put in an error response: `error.message` (OpenAI, Anthropic),
 * `message`, `detail` or an `error` string from a JSON body, else the body's text.
 */
function serverMessageOf(body: unknown): string | undefined {
  if (typeof body === 'string') {
    const text = body.replace(/\s+/g, ' ').trim();
    return text === '' ? undefined : text.slice(0, SERVER_MESSAGE_LIMIT);
  }
  if (typeof body !== 'object' || body === null) return undefined;
  const record = body as Record<string, unknown>;
  const nested = record.error;
  if (typeof nested === 'object' && nested !== null) {
    const message = (nested as Record<string, unknown>).message;
    if (typeof message === 'string' && message !== '') return message;
  }
  for (const candidate of [record.message, record.detail, nested]) {
    if (typeof candidate === 'string' && candidate !== '') return candidate;
  }
  return undefined;
}

function parseBody(excerpt: string | undefined): unknown {
  if (excerpt === undefined || excerpt.trim() === '') return undefined;
  try {
    return JSON.parse(excerpt);
  } catch {
    return excerpt;
  }
}

/**
 * The `{ message, code }` an error becomes in a `*.failed` event: its own `code` when it
 * has one, else its name. An HTTP error carries what the server said: its message (the
 * parsed `error.message` of a JSON body, or the body's text) in `message`, and the status
 * and the body in `data`. Credentials in either (`Bearer ...`, `sk-...`, `key=...`) are
 * redacted (`redactSecrets`); the error itself keeps them, for the operator.
 *
 * @example
 * events.emit('run.failed', { error: toAgentErrorInfo(error) });
 * // { message: 'https://api.openai.com/v1/chat/completions answered 401: Incorrect API key',
 * //   code: 'http_error', data: { status: 401, body: { error: { message: 'Incorrect API key', ... } } } }
 */
export function toAgentErrorInfo(error: unknown, retryable?: boolean): AgentErrorInfo {
  const info: AgentErrorInfo = { message: error instanceof Error ? error.message : String(error) };
  const code = typeof error === 'object' && error !== null ? (error as { code?: unknown }).code : undefined;
  if (typeof code === 'string' && code !== '') info.code = code;
  else if (error instanceof Error && error.name !== 'Error') info.code = error.name;
  if (AgentTransportError.isInstance(error) && error.code === 'http_error') {
    const body = parseBody(error.bodyExcerpt);
    const serverMessage = serverMessageOf(body);
    if (serverMessage !== undefined) info.message = `${error.message}: ${serverMessage}`;
    const data: { status?: number; body?: unknown } = {};
    if (error.status !== undefined) data.status = error.status;
    if (body !== undefined) data.body = redactSecretsIn(body);
    info.data = data;
  }
  // An event is read by whoever reads the run: what it says of the error carries no credential.
  info.message = redactSecrets(info.message);
  if (retryable !== undefined) info.retryable = retryable;
  return info;
}
