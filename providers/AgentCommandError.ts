import { AgentError } from '../protocol/errors';

export type AgentCommandErrorCode =
  | 'unsupported_capability'
  | 'invalid_command'
  | 'provider_error'
  | 'protocol_error'
  | 'interrupted'
  | 'restoring'
  | 'runtime_destroyed';

/**
 * Why a command was not carried out. `invalid_command`: the envelope or payload is wrong,
 * or a precondition failed (the message names it); `unsupported_capability`: the provider
 * does not declare the command or has no `executeCommand`; `provider_error`: executing it
 * failed (`retryable` as the provider classifies it); `protocol_error`: it returned an
 * event that breaks the contract; `interrupted`: it was aborted or timed out; `restoring`:
 * the conversation is being restored from its checkpoint, and takes commands once it is;
 * `runtime_destroyed`: the conversation's runtime was destroyed (`XChatRuntime.destroy`).
 *
 * @example
 * try {
 *   await chat.agentActions.retryTool({ runId, toolCallId });
 * } catch (error) {
 *   if (AgentCommandError.isInstance(error) && error.retryable) showRetryLater(error.message);
 * }
 */
export class AgentCommandError extends AgentError {
  override readonly code: AgentCommandErrorCode;
  readonly retryable: boolean;

  constructor(code: AgentCommandErrorCode, message: string, options: { retryable?: boolean; cause?: unknown } = {}) {
    super(code, message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'AgentCommandError';
    this.code = code;
    this.retryable = options.retryable ?? false;
  }

  /** Whether `value` is an AgentCommandError (or of a subclass), from any copy of the package. */
  declare static isInstance: (value: unknown) => value is AgentCommandError;
}
