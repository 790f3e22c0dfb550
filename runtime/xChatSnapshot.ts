import type { AgentCheckpointError } from '../checkpoint/AgentCheckpointError';
import type { AgentState } from '../machines/agentState';
import type { AgentMessageInfo } from '../machines/selectors';
import type { AgentCommandState } from './commandBook';
import type { AgentConnectionState } from './connectionMachine';

/** What a chat view reads. The same object until something in it changes. */
export interface XChatSnapshot {
  agentState: AgentState;
  /** The session's messages as `{ id, message, status }`, in arrival order. */
  messages: AgentMessageInfo[];
  /** A request of this runtime is in flight: its run has not ended yet. */
  isRequesting: boolean;
  /** Each command of a run not finished yet, by command id. Never part of AgentState. */
  commandStates: Readonly<Record<string, AgentCommandState>>;
  /** The latest command id of each action key (`getAgentActionKey`). */
  latestCommandByAction: Readonly<Record<string, string>>;
  /**
   * The last error a run of this runtime broke off with outside a caller's await (an
   * automatic continuation whose provider broke its contract, say), or the error of a
   * connection that failed or cannot go on, until the next run starts (a request or a continuation). Runs that fail are in AgentState.
   */
  error: unknown;
  /** `idle | restoring | connecting | connected | reconnecting | unrecoverable | failed`. */
  connectionState: AgentConnectionState;
  /** The last checkpoint that could not be read or saved; the runs went on regardless. */
  checkpointError: AgentCheckpointError | undefined;
  /**
   * Runs AgentState shows `running` that this runtime cannot follow (`connectionState` was
   * `unrecoverable`): restored from a checkpoint with no cursor or no resumable provider, or
   * whose stream dropped mid-answer and could not be resumed. They stay as their last event
   * left them; nothing here will end them. A new request with the run's input starts again.
   */
  strandedRunIds: readonly string[];
}
