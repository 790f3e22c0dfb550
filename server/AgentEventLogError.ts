import { AgentError } from '../protocol/errors';

export type AgentEventLogErrorCode = 'invalid_cursor' | 'cursor_expired' | 'too_large' | 'unavailable' | 'closed';

/**
 * Why an event log could not answer. `invalid_cursor`: the cursor is not one the log could
 * have given for the session (malformed, or past its newest entry); `cursor_expired`:
 * entries after the cursor were dropped (the log's bound trimmed them, or the session
 * expired), so a reader must start again from a snapshot; `too_large`: what was to be kept
 * is larger than the log's byte bound for a session (a snapshot); `unavailable`: the storage
 * failed or did not answer in time (Redis down or hung, say; the cause says why); `closed`:
 * the log was closed.
 *
 * @example
 * try {
 *   await log.read(sessionId, { after: cursor, limit: 100 });
 * } catch (error) {
 *   if (AgentEventLogError.isInstance(error) && error.code === 'cursor_expired') startFromSnapshot();
 * }
 */
export class AgentEventLogError extends AgentError {
  override readonly code: AgentEventLogErrorCode;

  constructor(code: AgentEventLogErrorCode, message: string, options?: { cause?: unknown }) {
    super(code, message, options);
    this.name = 'AgentEventLogError';
    this.code = code;
  }

  /** Whether `value` is an AgentEventLogError, from any copy of the package. */
  declare static isInstance: (value: unknown) => value is AgentEventLogError;
}
