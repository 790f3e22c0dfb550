import { AgentError } from '../protocol/errors';
import { redactSecrets } from '../protocol/redactSecrets';

export type AgentTransportErrorCode =
  | 'http_error'
  | 'invalid_content_type'
  | 'network_error'
  | 'aborted'
  | 'frame_too_large'
  | 'response_too_large'
  | 'invalid_frame'
  | 'abnormal_close'
  | 'missing_websocket'
  | 'unsupported_headers'
  | 'timeout'
  | 'invalid_cursor';

export interface AgentTransportErrorDetails {
  /** The HTTP status, for `http_error` and `invalid_cursor`. */
  status?: number;
  /** The start of the response body (at most 2 KB), for `http_error`. */
  bodyExcerpt?: string;
  contentType?: string;
  /** The WebSocket close code and reason, for `abnormal_close`. */
  closeCode?: number;
  closeReason?: string;
  cause?: unknown;
}

/**
 * A transport could not deliver the stream; `code` says how, the details say with what.
 * `timeout`: nothing arrived for the transport's `idleTimeoutMs`. `response_too_large`: an
 * answer was longer than the reader's bound (read as it arrived, and stopped there). `invalid_cursor`: the
 * server refused the cursor a `resume` asked for (it expired, or it never knew it).
 *
 * The message names the address and is shown and logged: credentials in it (URL userinfo,
 * `key=`/`token=` query parameters, `Bearer ...`, `sk-...`) are redacted (`redactSecrets`).
 * `bodyExcerpt` and `cause` are kept as they came, for the operator: they may hold what an
 * upstream echoed of the request, so never put them in an event or a client's answer.
 *
 * @example
 * if (AgentTransportError.isInstance(error) && error.code === 'http_error' && error.status === 401) signIn();
 */
export class AgentTransportError extends AgentError {
  override readonly code: AgentTransportErrorCode;
  readonly status: number | undefined;
  readonly bodyExcerpt: string | undefined;
  readonly contentType: string | undefined;
  readonly closeCode: number | undefined;
  readonly closeReason: string | undefined;

  constructor(code: AgentTransportErrorCode, message: string, details: AgentTransportErrorDetails = {}) {
    super(code, redactSecrets(message), details.cause === undefined ? undefined : { cause: details.cause });
    this.name = 'AgentTransportError';
    this.code = code;
    this.status = details.status;
    this.bodyExcerpt = details.bodyExcerpt;
    this.contentType = details.contentType;
    this.closeCode = details.closeCode;
    this.closeReason = details.closeReason;
  }

  /** Whether `value` is an AgentTransportError (or of a subclass), from any copy of the package. */
  declare static isInstance: (value: unknown) => value is AgentTransportError;
}

/** Whether an error is the end of an aborted operation, from fetch, a transport or a signal. */
export function isAbortError(error: unknown): boolean {
  if (AgentTransportError.isInstance(error)) return error.code === 'aborted';
  return typeof error === 'object' && error !== null && (error as { name?: unknown }).name === 'AbortError';
}
