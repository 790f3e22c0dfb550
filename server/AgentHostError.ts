import { AgentError } from '../protocol/errors';
import type { AgentCommandOutcome } from './AgentEventLog';

/** Every code a host answers an HTTP request with when it refuses it, and its status. */
export const AGENT_HOST_ERROR_STATUS = {
  invalid_request: 400,
  invalid_input: 400,
  invalid_command: 400,
  forbidden: 403,
  session_mismatch: 403,
  not_found: 404,
  unknown_provider: 404,
  unknown_run: 404,
  method_not_allowed: 405,
  run_exists: 409,
  run_ended: 409,
  continuation_in_progress: 409,
  idempotency_conflict: 409,
  cursor_expired: 410,
  payload_too_large: 413,
  unsupported_media_type: 415,
  invalid_cursor: 422,
  unsupported_capability: 422,
  internal_error: 500,
  not_implemented: 501,
  provider_error: 502,
  run_unavailable: 503,
  unavailable: 503,
  timeout: 504,
} as const;

export type AgentHostErrorCode = keyof typeof AGENT_HOST_ERROR_STATUS;

/**
 * Why a host refused a request. It becomes the answer `{ error: { code, message } }` with
 * the code's HTTP status; the message names what was wrong and never carries a stack or
 * the internals of the error that caused it.
 *
 * @example
 * const host = createAgentHost({
 *   providers,
 *   authorize: (request) => {
 *     if (!request.headers.get('authorization')) throw new AgentHostError('forbidden', 'Sign in first');
 *     return true;
 *   },
 * });
 */
export class AgentHostError extends AgentError {
  override readonly code: AgentHostErrorCode;
  /** When the client may try again, in seconds: the answer's `Retry-After`. */
  readonly retryAfterSeconds: number | undefined;
  /** The methods the path takes, for `method_not_allowed`: the answer's `Allow`. */
  readonly allow: string | undefined;

  constructor(
    code: AgentHostErrorCode,
    message: string,
    options?: { cause?: unknown; retryAfterSeconds?: number; allow?: string },
  ) {
    super(code, message, options);
    this.name = 'AgentHostError';
    this.code = code;
    this.retryAfterSeconds = options?.retryAfterSeconds;
    this.allow = options?.allow;
  }

  get status(): number {
    return AGENT_HOST_ERROR_STATUS[this.code];
  }

  /** Whether `value` is an AgentHostError, from any copy of the package. */
  declare static isInstance: (value: unknown) => value is AgentHostError;
}

const JSON_HEADERS = { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' };

/** A JSON answer. */
export function jsonResponse(body: unknown, status = 200): Response {
  return new Response(JSON.stringify(body), { status, headers: JSON_HEADERS });
}

/** The answer to a refused request: a host error as it is, anything else as `internal_error` without its details. */
export function errorResponse(error: unknown): Response {
  const hostError = AgentHostError.isInstance(error)
    ? error
    : new AgentHostError('internal_error', 'The host failed to handle the request');
  const response = jsonResponse({ error: { code: hostError.code, message: hostError.message } }, hostError.status);
  if (hostError.retryAfterSeconds !== undefined)
    response.headers.set('retry-after', String(hostError.retryAfterSeconds));
  if (hostError.allow !== undefined) response.headers.set('allow', hostError.allow);
  return response;
}

/** A command's outcome when the host refuses it, with the code and message it answers. */
export const failed = (code: AgentHostErrorCode, message: string): AgentCommandOutcome => ({
  status: 'failed',
  error: { code, message },
});
