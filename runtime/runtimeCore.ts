import type { AgentCheckpointError } from '../checkpoint/AgentCheckpointError';
import type { AgentStore } from '../machines/createAgentStore';
import type { AnyAgentProvider } from '../providers/AgentProvider';
import type { CommandBook } from './commandBook';
import type { CommandLaneRef, XChatRuntimeEvent } from './xChatRuntimeMachine';

/** A run the runtime started. */
export interface RuntimeRun {
  provider: AnyAgentProvider;
  input: unknown;
  /** While its stream is open. */
  controller: AbortController | undefined;
  /** A cancel was confirmed: the stream is closed here and its last events are dropped. */
  closedByCommand: boolean;
  /** Automatic continuations in a row that led to this run. */
  autoDepth: number;
  /** The last cursor whose events were all dispatched, while the run streams. */
  cursor: string | undefined;
}

/** What makes a checkpoint worth saving: throttled for batches and cursors, at once for the rest. */
export type CheckpointReason = 'batch' | 'cursor' | 'command' | 'started' | 'terminal';

/** What a view shows beside the actors' snapshots; the runtime's parts write it, the view reads it. */
export interface RuntimeStatus {
  /** The last error a run broke off with outside a caller's await, until the next run starts. */
  error: unknown;
  /** The last checkpoint that could not be read or saved. */
  checkpointError: AgentCheckpointError | undefined;
  /** Requests waiting for the restore to finish. */
  waiting: number;
  /** `destroy` was called. */
  destroyed: boolean;
  /** And its streams and commands have wound down: its actor and store are stopped. */
  disposed: boolean;
}

/** What the parts of one interaction runtime share: its conversation, runs and command states. */
export interface RuntimeCore {
  readonly sessionId: string;
  readonly now: () => number;
  readonly store: AgentStore;
  readonly runs: Map<string, RuntimeRun>;
  readonly book: CommandBook;
  readonly status: RuntimeStatus;
  /**
   * Runs AgentState shows running that this runtime cannot follow: restored from a
   * checkpoint without a cursor or a resumable provider. Nothing here will end them.
   */
  readonly strandedRuns: Set<string>;
  /** Tells the runtime's listeners, at the next animation frame or in a task of their own (`scheduleNotification`). */
  schedule(): void;
  /** Sends an event to the conversation's actor, unless it is stopped. */
  send(event: XChatRuntimeEvent): void;
  /** The provider a run's commands and continuations go to: the one that ran it here, else the runtime's. */
  providerOf(runId: string): AnyAgentProvider;
  /** Something a checkpoint holds changed (no-op without a checkpoint storage). */
  checkpoint(reason: CheckpointReason): void;
  /** Whether the conversation is being restored from its checkpoint: commands wait for it. */
  isRestoring(): boolean;
  /** The lane of a run, if it has one: a child of the runtime's actor. */
  findLane(runId: string): CommandLaneRef | undefined;
  /** Puts a command into its run's lane, spawning the lane on the run's first command. */
  enqueueCommand(runId: string, commandId: string, cancels: boolean): void;
  /** The run's cancel has settled: its lane takes commands again. */
  settleCancel(runId: string): void;
  /** Stops the lane of a run that has finished. */
  closeLane(runId: string): void;
}

/**
 * Stops the lane of a run that has finished. The outcome of a lane's last command closes it
 * from within that command: the lane finishes the command (back to idle) before it is stopped.
 */
export function closeLaneWhenIdle(core: Pick<RuntimeCore, 'findLane' | 'send'>, runId: string): void {
  const lane = core.findLane(runId);
  if (lane === undefined) return;
  if (lane.getSnapshot().matches({ execution: 'idle' })) {
    core.send({ type: 'lane.close', runId });
    return;
  }
  const subscription = lane.subscribe((snapshot) => {
    if (!snapshot.matches({ execution: 'idle' })) return;
    subscription.unsubscribe();
    if (core.findLane(runId) === lane) core.send({ type: 'lane.close', runId });
  });
}
