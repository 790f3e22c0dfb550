import { AgentCheckpointError } from '../checkpoint/AgentCheckpointError';
import type { AgentState } from '../machines/agentState';
import type { XChatSnapshot } from './createXChatRuntime';

/** Where an error a chat shows came from. */
export type XChatErrorSource = 'run' | 'connection' | 'checkpoint' | 'command';

/** An error in a form a view can show: its message and code, where it came from, and the original value. */
export interface XChatError {
  message: string;
  code?: string;
  source: XChatErrorSource;
  /** The error or record it was made from. */
  cause: unknown;
}

function describe(value: unknown, source: XChatErrorSource): XChatError {
  const error: XChatError = { message: String(value), source, cause: value };
  if (typeof value === 'object' && value !== null) {
    const { message, code } = value as { message?: unknown; code?: unknown };
    if (typeof message === 'string') error.message = message;
    if (typeof code === 'string') error.code = code;
  }
  return error;
}

const latestRunError = new WeakMap<AgentState, Map<string, XChatError | undefined>>();

/** The failure of the session's latest run, when it failed: a later run that did not fail clears it. */
function failureOfLatestRun(state: AgentState, sessionId: string): XChatError | undefined {
  let cached = latestRunError.get(state);
  if (cached?.has(sessionId)) return cached.get(sessionId);
  let latest: AgentState['runs'][string] | undefined;
  for (const run of Object.values(state.runs)) {
    if (run.sessionId === sessionId && (latest === undefined || run.startedAt >= latest.startedAt)) latest = run;
  }
  let error: XChatError | undefined;
  if (latest?.status === 'failed') {
    error = { message: latest.error?.message ?? `Run ${latest.id} failed`, source: 'run', cause: latest };
    if (latest.error?.code !== undefined) error.code = latest.error.code;
  }
  if (cached === undefined) {
    cached = new Map();
    latestRunError.set(state, cached);
  }
  cached.set(sessionId, error);
  return error;
}

/** The failure of the latest command, when the latest command failed. */
function failureOfLatestCommand(snapshot: XChatSnapshot): XChatError | undefined {
  let latest: XChatSnapshot['commandStates'][string] | undefined;
  for (const commandId of Object.values(snapshot.latestCommandByAction)) {
    const state = snapshot.commandStates[commandId];
    if (state !== undefined && (latest === undefined || state.updatedAt >= latest.updatedAt)) latest = state;
  }
  return latest?.status === 'failed' ? describe(latest.error, 'command') : undefined;
}

/**
 * The error a chat shows, first found of: the error a stream broke off with (`checkpoint`
 * when the checkpoint could not be read, `connection` when the connection failed or cannot
 * go on, else `run`), the failure of the session's
 * latest run, the failure of the latest command, the last checkpoint error. `undefined`
 * when there is none.
 *
 * @example
 * const error = toXChatError(runtime.getSnapshot(), runtime.sessionId);
 * if (error?.source === 'connection') showBanner(error.message);
 */
export function toXChatError(snapshot: XChatSnapshot, sessionId: string): XChatError | undefined {
  if (snapshot.error !== undefined) {
    // A checkpoint that could not be read fails the connection, and is the checkpoint's error.
    if (AgentCheckpointError.isInstance(snapshot.error)) return describe(snapshot.error, 'checkpoint');
    const broken = snapshot.connectionState === 'failed' || snapshot.connectionState === 'unrecoverable';
    return describe(snapshot.error, broken ? 'connection' : 'run');
  }
  return (
    failureOfLatestRun(snapshot.agentState, sessionId) ??
    failureOfLatestCommand(snapshot) ??
    (snapshot.checkpointError === undefined ? undefined : describe(snapshot.checkpointError, 'checkpoint'))
  );
}

/** Whether two errors show the same: the same source, message, code and cause. */
export function isSameXChatError(a: XChatError | undefined, b: XChatError | undefined): boolean {
  return (
    a === b ||
    (a !== undefined &&
      b !== undefined &&
      a.source === b.source &&
      a.message === b.message &&
      a.code === b.code &&
      a.cause === b.cause)
  );
}
