import { AgentError } from '../protocol/errors';

export type AgentProviderErrorCode =
  | 'unsupported_protocol'
  | 'undeclared_transport'
  | 'resume_unsupported'
  | 'invalid_event';

/**
 * A provider broke the contract: an unsupported protocol, an undeclared transport, or an
 * event that is malformed, undeclared, out of order or of another session or run.
 * `event` is the offending event, `reason` what was wrong with it.
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

  constructor(code: AgentProviderErrorCode, providerId: string, reason: string, event?: unknown) {
    super(code, `Provider "${providerId}": ${reason}`);
    this.name = 'AgentProviderError';
    this.code = code;
    this.providerId = providerId;
    this.reason = reason;
    this.event = event;
  }

  /** Whether `value` is an AgentProviderError (or of a subclass), from any copy of the package. */
  declare static isInstance: (value: unknown) => value is AgentProviderError;
}
