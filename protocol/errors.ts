import type { AgentProtocolIssue } from './protocolIssue';

const AGENT_ERROR_MARKER = Symbol.for('agent-machines.error');

/** The marker of one error class: a global symbol, so every copy of the package shares it. */
function markerOf(errorName: string): symbol {
  return Symbol.for(`agent-machines.error.${errorName}`);
}

/**
 * Base class of every error agent-machines throws.
 *
 * Each class names itself with `this.name = '...'` in its constructor; that assignment
 * also marks the instance with `Symbol.for('agent-machines.error.<name>')`, so an error carries
 * one marker per class of its chain. `isInstance`, inherited by every subclass without
 * code of its own, answers for that class and its subclasses only, and works across
 * duplicated copies of the package (two bundles, ESM beside CJS), where `instanceof` does not.
 *
 * @example
 * if (AgentTransportError.isInstance(error)) console.log(error.status); // not true for an AgentProviderError
 */
export class AgentError extends Error {
  declare readonly [AGENT_ERROR_MARKER]: true;
  readonly code: string;

  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    Object.defineProperty(this, AGENT_ERROR_MARKER, { value: true });
    // `this.name = 'X'` in each constructor goes through this setter, which adds X's marker
    // to those the base classes' constructors left: one marker per class of the chain.
    let errorName = 'AgentError';
    Object.defineProperty(this, 'name', {
      enumerable: true,
      configurable: true,
      get: () => errorName,
      set: (name: string) => {
        errorName = name;
        Object.defineProperty(this, markerOf(name), { value: true, configurable: true });
      },
    });
    this.name = 'AgentError';
    this.code = code;
  }

  /**
   * Whether `value` is an error of this class or of one of its subclasses, from this copy
   * of the package or another. Subclasses inherit it; to narrow to its own type a subclass
   * only declares it: `declare static isInstance: (value: unknown) => value is MyError;`.
   */
  static isInstance(value: unknown): value is AgentError {
    if (typeof value !== 'object' || value === null || !(AGENT_ERROR_MARKER in value)) return false;
    // biome-ignore lint/complexity/noThisInStatic: `this` is the class it is called on, a subclass too
    if (value instanceof this) return true;
    // Another copy of the package: compare class names by their global markers. A bundler
    // that renames classes leaves this check false, never wrongly true.
    // biome-ignore lint/complexity/noThisInStatic: as above
    return (value as Record<symbol, unknown>)[markerOf(this.name)] === true;
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

  /** Whether `value` is an AgentValidationError (or of a subclass), from any copy of the package. */
  declare static isInstance: (value: unknown) => value is AgentValidationError;
}

/** Thrown by a strict store at the first protocol issue; `.issue` says which and why. */
export class AgentProtocolError extends AgentError {
  readonly issue: AgentProtocolIssue;

  constructor(issue: AgentProtocolIssue) {
    super(issue.code, issue.message);
    this.name = 'AgentProtocolError';
    this.issue = issue;
  }

  /** Whether `value` is an AgentProtocolError (or of a subclass), from any copy of the package. */
  declare static isInstance: (value: unknown) => value is AgentProtocolError;
}
