import { AgentError } from '../protocol/errors';

export type AgentProviderErrorCode =
  | 'unsupported_protocol'
  | 'undeclared_transport'
  | 'resume_unsupported'
  | 'invalid_event'
  | 'duplicate_event_id'
  | 'resume_gap'
  | 'invalid_cursor';

/**
 * A provider broke the contract: an unsupported protocol, an undeclared transport, or an
 * event that is malformed, undeclared, out of order or of another session or run
 * (`invalid_event`), or that reuses the id of an earlier event of the run with other
 * content (`duplicate_event_id`; the same event sent again is absorbed).
 * `event` is the offending event, `reason` what was wrong with it.
 *
 * Two codes say a resumed stream cannot continue the run, whoever is to blame:
 * `resume_gap` (after a resume or reconnect, the first new event skipped sequences: events
 * were lost) and `invalid_cursor` (the server no longer knows the cursor; the transport's
 * error is the `cause`). Neither ends the run: what was applied stays as it was.
 *
 * @example
 * try {
 *   await runAgentProvider({ provider, input, sessionId, onEvent: store.dispatch });
 * } catch (error) {
 *   if (AgentProviderError.isInstance(error)) console.error(error.reason, error.event);
 * }
 */
export class AgentProviderError extends AgentError {
  override readonly code: AgentProviderErrorCode;
  readonly providerId: string;
  readonly event: unknown;
  readonly reason: string;

  constructor(
    code: AgentProviderErrorCode,
    providerId: string,
    reason: string,
    event?: unknown,
    options?: { cause?: unknown },
  ) {
    super(code, `Provider "${providerId}": ${reason}`, options);
    this.name = 'AgentProviderError';
    this.code = code;
    this.providerId = providerId;
    this.reason = reason;
    this.event = event;
  }

  /** Whether `value` is an AgentProviderError (or of a subclass), from any copy of the package. */
  declare static isInstance: (value: unknown) => value is AgentProviderError;
}
