import { checkPlainJson, measureJsonSize } from '../protocol/plainJson';
import type { AgentCheckpoint, AgentCheckpointStorage } from './AgentCheckpoint';
import {
  AgentCheckpointError,
  describeCheckpointKey,
  describeCheckpointPath,
  describeCheckpointReason,
} from './AgentCheckpointError';
import { DEFAULT_MAX_CHECKPOINT_SIZE } from './checkpointLimits';
import { toCheckpointStorageError } from './toCheckpointStorageError';

/**
 * What changed: `batch` (events were dispatched) and `cursor` (a run's cursor moved) are
 * throttled; `command` (a command was created or settled), `started` (a run started) and
 * `terminal` (a run ended) save at once.
 */
export type AgentCheckpointSaveReason = 'batch' | 'cursor' | 'command' | 'started' | 'terminal';

/** The part of `document` the coordinator uses to save when the page is hidden. */
export interface AgentCheckpointVisibility {
  readonly visibilityState: string;
  addEventListener(type: 'visibilitychange', listener: () => void): void;
  removeEventListener(type: 'visibilitychange', listener: () => void): void;
}

export interface AgentCheckpointCoordinatorOptions {
  storage: AgentCheckpointStorage;
  /** The session saved: every checkpoint `build` returns must be of it (`storage.save` keeps it under its `sessionId`). */
  sessionId: string;
  /** Builds the checkpoint to save; called only when a save starts, never per event. */
  build: () => AgentCheckpoint;
  /** At most one throttled (`batch`, `cursor`) save per this many milliseconds. Default 1000. */
  throttleMs?: number;
  /** A save the storage has not answered after this many milliseconds is `storage_timeout`. Default 10,000. */
  saveTimeoutMs?: number;
  /** Told of every failed or skipped save (also kept as `lastError`). What it throws is ignored. */
  onError?: (error: AgentCheckpointError) => void;
  /** Saves at once when it turns hidden. Default `globalThis.document` where there is one; `null` for none. */
  visibility?: AgentCheckpointVisibility | null;
  /** A checkpoint larger than this (characters of JSON) is not saved: a load would refuse it. Default `DEFAULT_MAX_CHECKPOINT_SIZE`. */
  maxSize?: number;
}

export interface AgentCheckpointCoordinator {
  /** Notes that something changed; saves now or later as `reason` says. Never throws. */
  schedule(reason: AgentCheckpointSaveReason): void;
  /** Saves what is scheduled now, throttle or not, and resolves once the storage answered (or failed). Never rejects. */
  flush(): Promise<void>;
  /** Why the last save failed or was skipped; `undefined` again once a save succeeds. */
  readonly lastError: AgentCheckpointError | undefined;
  /**
   * Removes the visibility listener and every timer; nothing is saved after it. A save in
   * flight is not waited for (its failure is still reported): call `flush` first to keep
   * what is scheduled.
   */
  stop(): void;
}

/**
 * `idle`: nothing to save or saving; `throttled`: a save waits for its throttle window;
 * `saving`: one save is in flight (what is scheduled meanwhile waits for it); `stopped`.
 */
type CoordinatorStatus = 'idle' | 'throttled' | 'saving' | 'stopped';
/** Whether what is scheduled may wait for the throttle window. */
type Urgency = 'throttled' | 'immediate';

/**
 * The first record keyed `__proto__` (a run or session of that id, which the store keeps as
 * data), as a path: a load refuses such a checkpoint, so it is not saved. Only the containers
 * are looked at, not every value: the rest is made of events and commands, whose `__proto__`
 * keys their validation refuses.
 */
function findProtoKeyedRecord(checkpoint: AgentCheckpoint): string | undefined {
  const containers: Array<[string, unknown]> = [
    ['inputByRun', checkpoint.inputByRun],
    ['cursorByRun', checkpoint.cursorByRun],
    ...Object.entries(checkpoint.state ?? {}).map(([name, value]): [string, unknown] => [`state.${name}`, value]),
  ];
  for (const [path, container] of containers) {
    if (typeof container === 'object' && container !== null && Object.hasOwn(container, '__proto__')) {
      return `${path}.__proto__`;
    }
  }
  return undefined;
}

function defaultVisibility(): AgentCheckpointVisibility | undefined {
  const document = (globalThis as { document?: Partial<AgentCheckpointVisibility> }).document;
  return typeof document?.addEventListener === 'function' && typeof document.removeEventListener === 'function'
    ? (document as AgentCheckpointVisibility)
    : undefined;
}

/**
 * Decides when to save a session's checkpoint, so that saving never fails or slows a run:
 * `batch` and `cursor` updates are throttled to one save per `throttleMs`, `command`,
 * `started` and `terminal` save at once, one save is in flight at a time and what is scheduled meanwhile
 * becomes one save after it, and the page turning hidden saves at once. `build` runs only
 * when a save starts, and what it returns is the only thing saved. A storage that throws,
 * rejects, is full or does not answer within `saveTimeoutMs` sets `lastError` and calls
 * `onError`; the next save goes ahead (after a timeout too, and a save that answers late is
 * followed by another, as it may have overwritten a newer one). A run input that is not plain
 * JSON skips that save with `unserializable_input` naming the run; the run itself goes on.
 *
 * @example
 * const checkpoints = createAgentCheckpointCoordinator({
 *   storage: createIndexedDbAgentCheckpointStorage(),
 *   sessionId,
 *   build: () => ({
 *     schemaVersion: AGENT_CHECKPOINT_SCHEMA_VERSION,
 *     eventProtocolVersion: AGENT_EVENT_PROTOCOL_VERSION,
 *     commandProtocolVersion: AGENT_COMMAND_PROTOCOL_VERSION,
 *     sessionId,
 *     state: store.getSnapshot(),
 *     inputByRun,
 *     cursorByRun,
 *     pendingCommands,
 *     savedAt: Date.now(),
 *   }),
 *   onError: (error) => console.warn(error.message),
 * });
 * store.subscribe(() => checkpoints.schedule('batch'));
 * // on unmount:
 * await checkpoints.flush();
 * checkpoints.stop();
 */
export function createAgentCheckpointCoordinator(
  options: AgentCheckpointCoordinatorOptions,
): AgentCheckpointCoordinator {
  const { storage, sessionId, build } = options;
  const throttleMs = options.throttleMs ?? 1000;
  const saveTimeoutMs = options.saveTimeoutMs ?? 10_000;
  const maxSize = options.maxSize ?? DEFAULT_MAX_CHECKPOINT_SIZE;
  const visibility = options.visibility === undefined ? defaultVisibility() : (options.visibility ?? undefined);
  const session = describeCheckpointKey(sessionId);

  let status: CoordinatorStatus = 'idle';
  /** What was scheduled and not yet saved. */
  let pending: Urgency | undefined;
  let lastError: AgentCheckpointError | undefined;
  let lastStartedAt = Number.NEGATIVE_INFINITY;
  let throttleTimer: ReturnType<typeof setTimeout> | undefined;
  let timeoutTimer: ReturnType<typeof setTimeout> | undefined;
  /** Settles when the save in flight ends, times out or is abandoned by `stop`. */
  let inFlight: Promise<void> | undefined;
  let abandonInFlight: (() => void) | undefined;
  /** Counts saves started, so one that answers after its timeout knows whether a newer one began. */
  let started = 0;

  function report(error: AgentCheckpointError): void {
    lastError = error;
    try {
      options.onError?.(error);
    } catch {
      // A failing error handler must not break saving, nor reach the run that scheduled it.
    }
  }

  /** The checkpoint to save, or why this save is skipped. */
  function buildCheckpoint(): AgentCheckpoint | AgentCheckpointError {
    let checkpoint: AgentCheckpoint;
    try {
      checkpoint = build();
    } catch (error) {
      return new AgentCheckpointError(
        'unserializable_input',
        `Building the checkpoint of session ${session} threw; this save was skipped`,
        { cause: error },
      );
    }
    if (typeof checkpoint !== 'object' || checkpoint === null || checkpoint.sessionId !== sessionId) {
      return new AgentCheckpointError(
        'invalid_checkpoint',
        `build returned a checkpoint that is not of session ${session}; this save was skipped`,
        { path: 'sessionId' },
      );
    }
    const protoKey = findProtoKeyedRecord(checkpoint);
    if (protoKey !== undefined) {
      return new AgentCheckpointError(
        'invalid_checkpoint',
        `The checkpoint of session ${session} holds a run or session of id "__proto__" (${protoKey}), which a load refuses; this save was skipped`,
        { path: protoKey },
      );
    }
    const inputs = checkpoint.inputByRun;
    for (const runId of typeof inputs === 'object' && inputs !== null ? Object.keys(inputs) : []) {
      const failure = checkPlainJson(inputs[runId]);
      if (failure === undefined) continue;
      const path = failure.path === '' ? `inputByRun.${runId}` : `inputByRun.${runId}.${failure.path}`;
      return new AgentCheckpointError(
        'unserializable_input',
        `The input of run ${describeCheckpointKey(runId)} cannot be saved: ${describeCheckpointPath(path)} ${describeCheckpointReason(failure.reason)}; this save was skipped`,
        { path, runId },
      );
    }
    // The state is the store's, made of validated events; what the application gave (inputs,
    // pending commands) is measured here. The storages of this package also refuse text over
    // the limit when they write it.
    const given = { inputByRun: checkpoint.inputByRun, pendingCommands: checkpoint.pendingCommands };
    if (measureJsonSize(given, maxSize) > maxSize) {
      return new AgentCheckpointError(
        'quota_exceeded',
        `The inputs and commands of session ${session} are larger than ${maxSize} characters, which a load would refuse; this save was skipped`,
        { path: '' },
      );
    }
    return checkpoint;
  }

  /** Waits for the storage, at most `saveTimeoutMs`; never rejects. */
  function awaitSave(saving: Promise<void>, generation: number): Promise<void> {
    return new Promise((resolve) => {
      let timedOut = false;
      abandonInFlight = resolve;
      const timer = setTimeout(() => {
        timedOut = true;
        // The timer of the save in flight, the only one: `stop` clears it rather than letting it fire.
        /* v8 ignore else */
        if (timeoutTimer === timer) timeoutTimer = undefined;
        report(
          new AgentCheckpointError(
            'storage_timeout',
            `The storage did not answer within ${saveTimeoutMs} ms while saving the checkpoint of session ${session}`,
          ),
        );
        resolve();
      }, saveTimeoutMs);
      timeoutTimer = timer;
      const answered = (error?: AgentCheckpointError) => {
        if (timedOut) {
          // Written late: it may have overwritten a newer save, so the latest state is saved again.
          if (error === undefined && started > generation && status !== 'stopped') {
            pending ??= 'throttled';
            advance();
          }
          return;
        }
        clearTimeout(timer);
        if (timeoutTimer === timer) timeoutTimer = undefined;
        if (error === undefined) lastError = undefined;
        else report(error);
        resolve();
      };
      saving.then(
        () => answered(),
        (error: unknown) => answered(toCheckpointStorageError(error, 'save', sessionId)),
      );
    });
  }

  function startSave(): void {
    // `saving` from here: a `schedule` made by `build` itself only marks what is pending.
    status = 'saving';
    pending = undefined;
    lastStartedAt = Date.now();
    const checkpoint = buildCheckpoint();
    if (AgentCheckpointError.isInstance(checkpoint)) {
      report(checkpoint);
      status = 'idle';
      // Scheduled again meanwhile (by build or onError): it waits for the throttle window rather than failing in a loop.
      if (pending !== undefined) {
        pending = 'throttled';
        advance();
      }
      return;
    }
    let saving: Promise<void>;
    try {
      saving = Promise.resolve(storage.save(checkpoint));
    } catch (error) {
      saving = Promise.reject(error);
    }
    started += 1;
    const current = awaitSave(saving, started).then(() => {
      if (inFlight !== current) return;
      inFlight = undefined;
      abandonInFlight = undefined;
      if (status === 'saving') status = 'idle';
      advance();
    });
    inFlight = current;
  }

  /** Starts the save that is due, or waits for the throttle window. */
  function advance(): void {
    if (status === 'stopped' || status === 'saving' || pending === undefined) return;
    const wait = pending === 'immediate' ? 0 : lastStartedAt + throttleMs - Date.now();
    if (wait <= 0) {
      clearTimeout(throttleTimer);
      throttleTimer = undefined;
      startSave();
      return;
    }
    if (status === 'throttled') return;
    status = 'throttled';
    throttleTimer = setTimeout(() => {
      throttleTimer = undefined;
      // Whatever leaves `throttled` (a save starting, stop) clears this timer first.
      /* v8 ignore else */
      if (status === 'throttled') status = 'idle';
      advance();
    }, wait);
  }

  function schedule(reason: AgentCheckpointSaveReason): void {
    if (status === 'stopped') return;
    const urgency: Urgency = reason === 'batch' || reason === 'cursor' ? 'throttled' : 'immediate';
    // Already waiting (for its window, or for the save in flight) with this urgency or more:
    // the common case, once per event, costs one comparison.
    if ((status === 'throttled' || status === 'saving') && (pending === 'immediate' || pending === urgency)) return;
    // An immediate save does not wait while idle (advance starts it at once); a waiting one returned above.
    pending = pending === 'immediate' ? /* v8 ignore next */ pending : urgency;
    advance();
  }

  async function flush(): Promise<void> {
    if (pending !== undefined) pending = 'immediate';
    advance();
    while (inFlight !== undefined) await inFlight;
  }

  const onVisibilityChange = () => {
    if (visibility?.visibilityState === 'hidden') void flush();
  };
  visibility?.addEventListener('visibilitychange', onVisibilityChange);

  return {
    schedule(reason) {
      try {
        schedule(reason);
      } catch {
        // Every failure is reported through onError; scheduling must never fail a run.
      }
    },
    flush() {
      return flush().catch(() => undefined);
    },
    get lastError() {
      return lastError;
    },
    stop() {
      if (status === 'stopped') return;
      status = 'stopped';
      pending = undefined;
      visibility?.removeEventListener('visibilitychange', onVisibilityChange);
      clearTimeout(throttleTimer);
      clearTimeout(timeoutTimer);
      throttleTimer = undefined;
      timeoutTimer = undefined;
      inFlight = undefined;
      abandonInFlight?.();
      abandonInFlight = undefined;
    },
  };
}
