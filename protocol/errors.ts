import type { AgentProtocolIssue } from './protocolIssue';

const AGENT_ERROR_MARKER = Symbol.for('agentstate.error');

/**
 * Base class of every error agentstate throws. `AgentError.isInstance` works
 * across duplicated copies of the package, where `instanceof` does not.
 */
export class AgentError extends Error {
  readonly [AGENT_ERROR_MARKER] = true;
  readonly code: string;

  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'AgentError';
    this.code = code;
  }

  static isInstance(value: unknown): value is AgentError {
    return typeof value === 'object' && value !== null && AGENT_ERROR_MARKER in value;
  }
}

/** Where a value failed its schema: a dotted path and what was expected there. */
export interface AgentValidationFailure {
  path: string;
  reason: string;
  message: string;
}

/** Thrown when a value given to the library does not match its schema (a state to reset from, say). */
export class AgentValidationError extends AgentError {
  readonly failure: AgentValidationFailure;

  constructor(what: string, failure: AgentValidationFailure) {
    super('invalid_input', `Invalid ${what}: ${failure.message}`);
    this.name = 'AgentValidationError';
    this.failure = failure;
  }

  static override isInstance(value: unknown): value is AgentValidationError {
    return AgentError.isInstance(value) && value.name === 'AgentValidationError';
  }
}

/** Thrown by a strict store at the first protocol issue; `.issue` says which and why. */
export class AgentProtocolError extends AgentError {
  readonly issue: AgentProtocolIssue;

  constructor(issue: AgentProtocolIssue) {
    super(issue.code, issue.message);
    this.name = 'AgentProtocolError';
    this.issue = issue;
  }

  static override isInstance(value: unknown): value is AgentProtocolError {
    return AgentError.isInstance(value) && value.name === 'AgentProtocolError';
  }
}
