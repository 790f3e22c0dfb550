import { AgentError } from '../protocol/errors';

export type AgentCheckpointErrorCode =
  | 'invalid_checkpoint'
  | 'unsupported_version'
  | 'storage_failed'
  | 'storage_timeout'
  | 'quota_exceeded'
  | 'unserializable_input'
  | 'incomplete_checkpoint';

export interface AgentCheckpointErrorOptions {
  /** Where in the checkpoint the problem is, dotted (`state.runs.r1.status`), `''` for the whole; overlong keys in it are cut short. */
  path?: string;
  /** The run whose input could not be saved (`unserializable_input`), or that nothing saved continues (`incomplete_checkpoint`). */
  runId?: string;
  cause?: unknown;
}

/**
 * Why a checkpoint was not loaded or saved. `invalid_checkpoint`: what is stored is not a
 * checkpoint of this session (malformed or truncated JSON, a wrong field, a run of another
 * session, too large); `unsupported_version`: its schema or protocol version is one this
 * package does not read; `storage_failed`: the storage threw or rejected; `storage_timeout`:
 * it did not answer in time; `quota_exceeded`: it is full, or the checkpoint is larger than
 * a load would accept; `unserializable_input`: a run's input is not plain JSON, so that save
 * was skipped; `incomplete_checkpoint`: the checkpoint was restored, but a run in it had every
 * input it waited for and no run saved continues it (`agentActions.continueRun` does). The message names the path and what is wrong there, never the stored content.
 *
 * @example
 * try {
 *   checkpoint = await loadAgentCheckpoint(storage, sessionId);
 * } catch (error) {
 *   if (AgentCheckpointError.isInstance(error) && error.code === 'invalid_checkpoint') await storage.remove(sessionId);
 * }
 */
export class AgentCheckpointError extends AgentError {
  override readonly code: AgentCheckpointErrorCode;
  readonly path?: string;
  readonly runId?: string;

  constructor(code: AgentCheckpointErrorCode, message: string, options: AgentCheckpointErrorOptions = {}) {
    super(code, message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'AgentCheckpointError';
    this.code = code;
    if (options.path !== undefined) this.path = shortenCheckpointPath(options.path);
    if (options.runId !== undefined) this.runId = options.runId;
  }

  /** Whether `value` is an AgentCheckpointError (or of a subclass), from any copy of the package. */
  declare static isInstance: (value: unknown) => value is AgentCheckpointError;
}

/**
 * Longest id or key a message shows: keys come from stored data too. A longer one is not an
 * id a person chose but data (a token, say), so none of it is shown, only its length.
 */
const MAX_SHOWN_KEY = 64;

/** Longest path a message shows (the deepest a checkpoint may nest, with short keys, fits). */
const MAX_SHOWN_PATH = 1024;

/** An id or key as a message shows it: quoted, or only its length when long (a hostile key may be megabytes). */
export function describeCheckpointKey(key: string): string {
  if (key.length <= MAX_SHOWN_KEY) return JSON.stringify(key);
  return `(an id of ${key.length} characters)`;
}

/**
 * A dotted path as a message shows it: a segment longer than `MAX_SHOWN_KEY` becomes
 * `(N characters)`, and the whole is cut after `MAX_SHOWN_PATH` characters. Keys come from
 * stored data.
 */
export function shortenCheckpointPath(path: string): string {
  if (path.length <= MAX_SHOWN_KEY) return path;
  const shown = path
    .split('.')
    .map((segment) => (segment.length <= MAX_SHOWN_KEY ? segment : `(${segment.length} characters)`))
    .join('.');
  return shown.length <= MAX_SHOWN_PATH ? shown : `${shown.slice(0, MAX_SHOWN_PATH)}...`;
}

/** A path as a message shows it: shortened, and `(root)` for the checkpoint itself. */
export function describeCheckpointPath(path: string): string {
  return path === '' ? '(root)' : shortenCheckpointPath(path);
}

/**
 * A validation reason without the values it may quote. Schema messages say `got "..."`
 * (the offending value, whole) and the state checks quote ids; a checkpoint's error must not
 * carry what was stored, so the value is dropped, and every piece between quotes (or around
 * them: an id may hold quotes itself) longer than a short id becomes its length. At most
 * about 250 characters.
 */
export function describeCheckpointReason(reason: string): string {
  const withoutValue = reason
    .replace(/^unknown value .*, expected one of /s, 'unknown value, expected one of ')
    .replace(
      /\bgot (?!(?:string|number|boolean|object|array|null|undefined|bigint|symbol|function|NaN|-?Infinity)$).*$/s,
      'got a value not allowed here',
    );
  const shortPieces = withoutValue
    .split('"')
    .map((piece) => (piece.length <= MAX_SHOWN_KEY ? piece : `(${piece.length} characters)`))
    .join('"');
  return shortPieces.length <= 240 ? shortPieces : `${shortPieces.slice(0, 240)}...`;
}
