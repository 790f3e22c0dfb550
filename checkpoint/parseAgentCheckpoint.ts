import * as z from 'zod/mini';
import type { AgentState } from '../machines/agentState';
import { parseAgentState } from '../machines/agentStateSchema';
import type { AgentCommand } from '../protocol/commandSchemas';
import { AGENT_COMMAND_PROTOCOL_VERSION, AGENT_EVENT_PROTOCOL_VERSION } from '../protocol/constants';
import { AgentValidationError } from '../protocol/errors';
import { parseAgentCommand } from '../protocol/parseAgentEvent';
import { checkPlainJson, DEFAULT_MAX_JSON_DEPTH, findJsonSizeOverflow, measureJsonSize } from '../protocol/plainJson';
import { toValidationFailure } from '../protocol/validationFailure';
import { AGENT_CHECKPOINT_SCHEMA_VERSION, type AgentCheckpoint } from './AgentCheckpoint';
import { AgentCheckpointError, describeCheckpointPath, describeCheckpointReason } from './AgentCheckpointError';
import { isSizeCheckedCheckpointValue } from './checkpointJson';
import { DEFAULT_MAX_CHECKPOINT_SIZE } from './checkpointLimits';

/**
 * How deep a checkpoint may nest: AgentState may nest `DEFAULT_MAX_JSON_DEPTH + 8` levels
 * (see `parseAgentState`) and sits one level down; `parseAgentState` and the input check then
 * hold each part to its own limit.
 */
const MAX_CHECKPOINT_DEPTH = DEFAULT_MAX_JSON_DEPTH + 9;

export interface ParseAgentCheckpointOptions {
  /**
   * Turns a checkpoint of another `schemaVersion` into a version 1 one, which is then
   * validated as any other. Without it such a checkpoint is `unsupported_version`. It gets the
   * stored value, already checked to be plain JSON within the size limit and nothing more.
   */
  migrate?: (checkpoint: unknown, fromVersion: number) => unknown;
  /** The largest checkpoint accepted, in characters of JSON. Default `DEFAULT_MAX_CHECKPOINT_SIZE`. */
  maxSize?: number;
}

const id = z.string().check(z.minLength(1));

/** The envelope; `state`, inputs and commands are checked by their own parsers after it. */
const agentCheckpointEnvelopeSchema = z.object({
  schemaVersion: z.literal(AGENT_CHECKPOINT_SCHEMA_VERSION),
  eventProtocolVersion: z.literal(AGENT_EVENT_PROTOCOL_VERSION),
  commandProtocolVersion: z.literal(AGENT_COMMAND_PROTOCOL_VERSION),
  sessionId: id,
  state: z.unknown(),
  inputByRun: z.record(z.string(), z.unknown()),
  cursorByRun: z.record(z.string(), z.string()),
  pendingCommands: z.array(z.unknown()),
  savedAt: z.number(),
});

type Envelope = z.infer<typeof agentCheckpointEnvelopeSchema>;

function invalid(path: string, reason: string, cause?: unknown): AgentCheckpointError {
  return new AgentCheckpointError(
    'invalid_checkpoint',
    `Invalid checkpoint: ${describeCheckpointPath(path)}: ${describeCheckpointReason(reason)}`,
    cause === undefined ? { path } : { path, cause },
  );
}

function join(base: string, path: string): string {
  return path === '' ? base : `${base}.${path}`;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Plain JSON within the depth and size limits, and no `__proto__` key anywhere (JSON.parse
 * makes it an own field, which a later spread or assignment turns into a prototype), before
 * any schema, `migrate` or the store reads it.
 */
function checkShape(value: unknown, maxSize: number): void {
  const plain = checkPlainJson(value, { maxDepth: MAX_CHECKPOINT_DEPTH });
  if (plain !== undefined) throw invalid(plain.path, plain.reason);
  // Read from stored text within the limit: its JSON size is within it too.
  if (maxSize >= DEFAULT_MAX_CHECKPOINT_SIZE && isSizeCheckedCheckpointValue(value)) return;
  if (measureJsonSize(value, maxSize) > maxSize) {
    // findJsonSizeOverflow counts as measureJsonSize does: it finds the overflow just measured.
    throw invalid(
      /* v8 ignore next */ findJsonSizeOverflow(value, maxSize) ?? '',
      `makes the checkpoint larger than ${maxSize} characters`,
    );
  }
}

function checkVersions(value: Record<string, unknown>): void {
  const versions = [
    ['eventProtocolVersion', AGENT_EVENT_PROTOCOL_VERSION],
    ['commandProtocolVersion', AGENT_COMMAND_PROTOCOL_VERSION],
  ] as const;
  for (const [field, expected] of versions) {
    const version = value[field];
    // A version of another kind (a number, missing) is malformed: the schema reports it.
    if (typeof version === 'string' && version !== expected) {
      throw new AgentCheckpointError(
        'unsupported_version',
        `Unsupported checkpoint: ${field} is not ${expected}, the one this package reads`,
        { path: field },
      );
    }
  }
}

function parseState(value: unknown): AgentState {
  try {
    // `checkShape` has checked the whole checkpoint for plain JSON, within a depth that leaves
    // the state, one level down, the depth `parseAgentState` allows.
    return parseAgentState(value, { plainJsonChecked: true });
  } catch (error) {
    if (!AgentValidationError.isInstance(error)) throw error;
    // `(root)` comes from parseAgentState's own plain-JSON check, which plainJsonChecked skips.
    const path = error.failure.path === '(root)' ? /* v8 ignore next */ '' : error.failure.path;
    throw invalid(join('state', path), error.failure.reason, error);
  }
}

/** Everything in the state belongs to the checkpoint's session (entities follow their run). */
function checkSession(state: AgentState, sessionId: string): void {
  const foreign = (path: string) => invalid(path, 'belongs to another session than the checkpoint');
  for (const key of Object.keys(state.sessions)) if (key !== sessionId) throw foreign(`state.sessions.${key}`);
  for (const key of Object.keys(state.state)) if (key !== sessionId) throw foreign(`state.state.${key}`);
  for (const [key, run] of Object.entries(state.runs)) {
    if (run.sessionId !== sessionId) throw foreign(`state.runs.${key}.sessionId`);
  }
  for (const [key, activity] of Object.entries(state.activities)) {
    if (activity.sessionId !== sessionId) throw foreign(`state.activities.${key}.sessionId`);
  }
}

/** Inputs, cursors and commands are of runs the state holds; inputs are plain JSON. */
function checkRunRecords(envelope: Envelope, state: AgentState): void {
  const isRun = (runId: string) => Object.hasOwn(state.runs, runId);
  for (const [runId, input] of Object.entries(envelope.inputByRun)) {
    if (!isRun(runId)) throw invalid(`inputByRun.${runId}`, 'names a run that is not in state.runs');
    const failure = checkPlainJson(input);
    if (failure !== undefined) throw invalid(join(`inputByRun.${runId}`, failure.path), failure.reason);
  }
  for (const [runId, cursor] of Object.entries(envelope.cursorByRun)) {
    if (!isRun(runId)) throw invalid(`cursorByRun.${runId}`, 'names a run that is not in state.runs');
    // The envelope schema has checked every cursor to be a string.
    /* v8 ignore if */
    if (typeof cursor !== 'string') throw invalid(`cursorByRun.${runId}`, `expected string, got ${typeof cursor}`);
  }
  envelope.pendingCommands.forEach((command, index) => {
    const path = `pendingCommands.${index}`;
    const result = parseAgentCommand(command);
    if (!result.success) throw invalid(join(path, result.error.path), result.error.reason);
    if (result.value.sessionId !== envelope.sessionId) {
      throw invalid(`${path}.sessionId`, 'belongs to another session than the checkpoint');
    }
    if (!isRun(result.value.runId)) throw invalid(`${path}.runId`, 'names a run that is not in state.runs');
  });
}

function copyJson<Value>(value: Value): Value {
  return JSON.parse(JSON.stringify(value)) as Value;
}

/**
 * Validates an untrusted checkpoint (what a storage loaded) and returns a clean copy of it,
 * failing closed: plain JSON only (no cycles, class instances or values JSON cannot hold), at
 * most `maxSize` characters and `DEFAULT_MAX_JSON_DEPTH + 9` levels deep, schema version 1
 * (others go through `migrate`, or are `unsupported_version`), the protocol versions of this
 * package, no `__proto__` key anywhere (a run or session of that id included), a valid
 * AgentState (`parseAgentState`) all of whose runs, sessions and shared state belong to
 * `sessionId`, inputs that are plain JSON, and inputs, cursors and pending commands of runs the
 * state holds. Fields it does not know are dropped;
 * the copy shares nothing with `value`.
 *
 * @throws AgentCheckpointError naming the first path that is wrong (`state.runs.r1.status`),
 * never what was stored there: keys in the path and quoted ids longer than a short id are
 * replaced by their length, and the message is at most about 1,300 characters.
 *
 * @example
 * const checkpoint = parseAgentCheckpoint(JSON.parse(text), {
 *   migrate: (old, fromVersion) => (fromVersion === 0 ? upgradeFromZero(old) : old),
 * });
 * store.reset(checkpoint.state);
 */
export function parseAgentCheckpoint(value: unknown, options: ParseAgentCheckpointOptions = {}): AgentCheckpoint {
  try {
    return parseCheckpoint(value, options);
  } catch (error) {
    if (AgentCheckpointError.isInstance(error)) throw error;
    // Anything else that breaks while untrusted data is read (an engine limit such as a
    // RangeError, a getter or proxy of what a storage returned) is still this checkpoint's
    // fault, and must fail closed as one: the caller handles AgentCheckpointError only.
    const kind = error instanceof Error ? error.name : typeof error;
    throw new AgentCheckpointError('invalid_checkpoint', `Invalid checkpoint: it could not be read (${kind})`, {
      path: '',
      cause: error,
    });
  }
}

function parseCheckpoint(value: unknown, options: ParseAgentCheckpointOptions): AgentCheckpoint {
  const maxSize = options.maxSize ?? DEFAULT_MAX_CHECKPOINT_SIZE;
  checkShape(value, maxSize);
  if (!isRecord(value)) throw invalid('', 'is not an object');
  const version = value.schemaVersion;
  if (version !== AGENT_CHECKPOINT_SCHEMA_VERSION) {
    if (typeof version !== 'number' || !Number.isInteger(version) || version < 0 || version > Number.MAX_SAFE_INTEGER) {
      throw invalid('schemaVersion', 'is not a schema version (a whole number)');
    }
    if (options.migrate === undefined) {
      throw new AgentCheckpointError(
        'unsupported_version',
        `Unsupported checkpoint: schemaVersion is ${version}, and this package reads ${AGENT_CHECKPOINT_SCHEMA_VERSION} (pass migrate to convert it)`,
        { path: 'schemaVersion' },
      );
    }
    let migrated: unknown;
    try {
      migrated = options.migrate(value, version);
    } catch (error) {
      throw new AgentCheckpointError(
        'unsupported_version',
        `Unsupported checkpoint: migrate threw while converting schemaVersion ${version}`,
        { path: 'schemaVersion', cause: error },
      );
    }
    const migratedVersion = isRecord(migrated) ? migrated.schemaVersion : undefined;
    if (migratedVersion !== AGENT_CHECKPOINT_SCHEMA_VERSION) {
      throw new AgentCheckpointError(
        'unsupported_version',
        `Unsupported checkpoint: migrate turned schemaVersion ${version} into ${typeof migratedVersion === 'number' ? migratedVersion : 'no version'}, not ${AGENT_CHECKPOINT_SCHEMA_VERSION}`,
        { path: 'schemaVersion' },
      );
    }
    // Validated as any version 1 checkpoint, without migrate: migrating happens once.
    return parseCheckpoint(migrated, { maxSize });
  }
  checkVersions(value);
  const parsed = agentCheckpointEnvelopeSchema.safeParse(value);
  if (!parsed.success) {
    const failure = toValidationFailure(parsed.error.issues, value);
    throw invalid(failure.path, failure.reason);
  }
  // The checked value, not zod's output, whose records are of fields zod knows.
  const envelope = value as Envelope;
  const state = parseState(envelope.state);
  checkSession(state, envelope.sessionId);
  checkRunRecords(envelope, state);
  return {
    schemaVersion: AGENT_CHECKPOINT_SCHEMA_VERSION,
    eventProtocolVersion: AGENT_EVENT_PROTOCOL_VERSION,
    commandProtocolVersion: AGENT_COMMAND_PROTOCOL_VERSION,
    sessionId: envelope.sessionId,
    state,
    inputByRun: copyJson(envelope.inputByRun),
    cursorByRun: copyJson(envelope.cursorByRun),
    pendingCommands: copyJson(envelope.pendingCommands) as AgentCommand[],
    savedAt: envelope.savedAt,
  };
}
