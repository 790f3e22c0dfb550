import type { AgentErrorInfo, AgentEvent } from '../protocol/eventSchemas';
import { redactSecrets, redactSecretsIn } from '../protocol/redactSecrets';

/**
 * Codes of errors whose message names an upstream address or quotes what it answered: the
 * transports' (`transports/AgentTransportError.ts`) and the runner's wrapper of them.
 */
const UPSTREAM_MESSAGES: Readonly<Record<string, string>> = {
  http_error: 'The upstream refused the request',
  invalid_content_type: 'The upstream answered with an unexpected content type',
  network_error: 'The upstream could not be reached',
  frame_too_large: 'The upstream sent a frame that is too large',
  invalid_frame: 'The upstream sent an invalid frame',
  abnormal_close: 'The upstream closed the stream early',
  timeout: 'The upstream stopped answering',
  invalid_cursor: 'The upstream refused to resume the stream',
  response_too_large: 'The upstream answered more than the reader takes',
  provider_error: 'The provider failed',
};

function statusOf(data: unknown): number | undefined {
  if (typeof data !== 'object' || data === null) return undefined;
  const { status } = data as { status?: unknown };
  return typeof status === 'number' && Number.isInteger(status) ? status : undefined;
}

/**
 * The error a client may read. An upstream failure (a transport's code) keeps its code, its
 * `retryable` and its HTTP status, with a message of ours: the upstream's address and the
 * body it answered (which a gateway may fill with the request's headers) are for the
 * operator's `onError`. Any other error (a tool's, the provider's own mapping of an upstream
 * error event) keeps its message and data with credentials redacted.
 */
export function toSafeErrorInfo(error: AgentErrorInfo): AgentErrorInfo {
  const fixed = error.code === undefined ? undefined : UPSTREAM_MESSAGES[error.code];
  if (fixed !== undefined && error.code !== undefined) {
    const status = statusOf(error.data);
    const safe: AgentErrorInfo = {
      code: error.code,
      message: error.code === 'http_error' && status !== undefined ? `The upstream answered ${status}` : fixed,
    };
    if (error.retryable !== undefined) safe.retryable = error.retryable;
    if (status !== undefined) safe.data = { status };
    return safe;
  }
  const safe: AgentErrorInfo = { ...error, message: redactSecrets(error.message) };
  if (error.code !== undefined) safe.code = redactSecrets(error.code);
  if (error.data !== undefined) safe.data = redactSecretsIn(error.data);
  return safe;
}

/** The event as the host writes it to its log: an error it carries is made safe for every reader. */
export function toSafeEvent(event: AgentEvent): AgentEvent {
  const payload = event.payload as { error?: unknown };
  const { error } = payload;
  if (typeof error !== 'object' || error === null || typeof (error as { message?: unknown }).message !== 'string') {
    return event;
  }
  return { ...event, payload: { ...payload, error: toSafeErrorInfo(error as AgentErrorInfo) } } as AgentEvent;
}

/**
 * An error as the host's default `onError` logs it: its name, code, status, message, body
 * excerpt and stack, with credentials redacted (a log is read by more people than a secret
 * should be). A custom `onError` gets the error itself.
 */
export function redactedForLog(error: unknown, depth = 4): unknown {
  if (!(error instanceof Error)) return redactSecretsIn(error);
  const { code, status, bodyExcerpt } = error as { code?: unknown; status?: unknown; bodyExcerpt?: unknown };
  const shown: Record<string, unknown> = { name: error.name, message: redactSecrets(error.message) };
  if (code !== undefined) shown.code = code;
  if (status !== undefined) shown.status = status;
  if (typeof bodyExcerpt === 'string') shown.bodyExcerpt = redactSecrets(bodyExcerpt);
  if (error.stack !== undefined) shown.stack = redactSecrets(error.stack);
  if (error.cause !== undefined && depth > 0) shown.cause = redactedForLog(error.cause, depth - 1);
  return shown;
}
