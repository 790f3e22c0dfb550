import type { CommandRunner } from './createCommandRunner';
import type { RuntimeCore } from './runtimeCore';
import { scheduleNotification } from './scheduleNotification';

/** How a conversation tells its listeners, and how it ends: dropped streams, a user leaving, `destroy`. */
export interface ConversationLifecycle {
  /**
   * Tells the listeners at the next animation frame (in a task of their own where no frame
   * comes), once however many changes were made meanwhile.
   */
  schedule(): void;
  subscribe(listener: () => void): () => void;
  abort(reason?: unknown): void;
  retain(): () => void;
  destroy(): void;
}

export interface ConversationLifecycleParts {
  runner: () => CommandRunner;
  /** Aborts the client tools running: their calls keep waiting for a result. */
  abortClientTools(reason: unknown): void;
  /** Stops the conversation's actor (and with it the store's session, the connection and the lanes) and its store. */
  stop(): void;
  /** Stops the checkpoint saver: what was scheduled is dropped. */
  stopSaving(): void;
}

/**
 * The conversation's notifications and its end. Listeners hear of changes through
 * `scheduleNotification` (at the next animation frame in a browser whose page is shown, else
 * in a task of their own), after the run has dispatched what one read of the stream holds: a
 * transport yields frame by frame, through microtasks, and reading AgentState after each
 * event would undo the store's coalescing. They are called after the actors have taken the
 * change, never from within one: a listener that acts at once (approves, retries) finds the
 * conversation ready to take that too.
 */
export function createConversationLifecycle(
  core: RuntimeCore,
  parts: ConversationLifecycleParts,
): ConversationLifecycle {
  const { status } = core;
  const listeners = new Set<() => void>();
  let scheduled = false;
  let holders = 0;

  /**
   * Whether a destroyed runtime still has a stream closing or a command to fail: its lanes
   * carry out their queued commands, which fail `interrupted` at once, their signals being
   * aborted. An answer kept for a waiting run's continuation is not waited for: no run will
   * carry it now.
   */
  const isWindingDown = (): boolean => {
    for (const run of core.runs.values()) if (run.controller !== undefined) return true;
    for (const command of core.book.submittingCommands()) {
      const kept =
        command.type === 'approval.resolve' &&
        parts.runner().answersOf(command.runId)?.get(command.payload.approvalId)?.commandId === command.commandId;
      if (!kept) return true;
    }
    return false;
  };
  /** The end of a destroyed runtime, once it has wound down: its actors and store stop, its listeners go. */
  const dispose = () => {
    status.disposed = true;
    parts.stop();
    listeners.clear();
  };
  const notify = () => {
    scheduled = false;
    if (status.disposed) return;
    // The last of a destroyed runtime's streams and commands has ended: its listeners hear of that, then of nothing more.
    const ending = status.destroyed && !isWindingDown();
    for (const listener of [...listeners]) listener();
    if (ending) dispose();
  };
  const dropStreams = (reason: unknown) => {
    for (const run of core.runs.values()) run.controller?.abort(reason);
    parts.runner().abort(reason);
    parts.abortClientTools(reason);
  };
  const abort = (reason?: unknown) => {
    if (!status.destroyed) dropStreams(reason);
  };

  const schedule = () => {
    if (scheduled) return;
    scheduled = true;
    scheduleNotification(notify);
  };
  // Every change of the conversation's AgentState: listeners are told, and a checkpoint is
  // due (not while restoring: the restored state is what was saved; `core.checkpoint` says so).
  core.store.subscribe(() => {
    schedule();
    core.checkpoint('batch');
  });

  return {
    schedule,
    subscribe(listener) {
      if (status.destroyed) return () => undefined;
      // One entry per call: the same function subscribed twice is two subscriptions.
      const entry = () => listener();
      listeners.add(entry);
      return () => listeners.delete(entry);
    },
    abort,
    retain() {
      if (status.destroyed) return () => undefined;
      holders += 1;
      let released = false;
      return () => {
        if (released) return;
        released = true;
        holders -= 1;
        if (holders > 0) return;
        // React runs an unmount and the next mount's effects apart (StrictMode does both at
        // once): a conversation held again by then is still in use, its runs go on.
        setTimeout(() => {
          if (holders === 0) abort(new DOMException('The chat was unmounted', 'AbortError'));
        }, 0);
      };
    },
    destroy() {
      if (status.destroyed) return;
      dropStreams(new DOMException('The chat runtime was destroyed', 'AbortError'));
      status.destroyed = true;
      parts.stopSaving();
      if (!isWindingDown()) dispose();
      else schedule();
    },
  };
}
