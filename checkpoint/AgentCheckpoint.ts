import type { AgentState } from '../machines/agentState';
import type { AgentCommand } from '../protocol/commandSchemas';
import type { AGENT_COMMAND_PROTOCOL_VERSION, AGENT_EVENT_PROTOCOL_VERSION } from '../protocol/constants';

/** The checkpoint format this version of the package writes. */
export const AGENT_CHECKPOINT_SCHEMA_VERSION = 1 as const;

/**
 * What is saved of one conversation, to restore it after a page refresh or a restart and
 * resume its runs from their cursors. Only each run's original `input` is kept: never the
 * request built from it, its headers or any credential.
 */
export interface AgentCheckpoint {
  schemaVersion: typeof AGENT_CHECKPOINT_SCHEMA_VERSION;
  eventProtocolVersion: typeof AGENT_EVENT_PROTOCOL_VERSION;
  commandProtocolVersion: typeof AGENT_COMMAND_PROTOCOL_VERSION;
  sessionId: string;
  state: AgentState;
  /** The input each run of this conversation started with, by run id. */
  inputByRun: Record<string, unknown>;
  /** The last cursor whose events were all dispatched, by run id (runs still streaming). */
  cursorByRun: Record<string, string>;
  /** Commands that were submitting when the checkpoint was saved. Restored, never resent by themselves. */
  pendingCommands: AgentCommand[];
  savedAt: number;
}

/**
 * Where checkpoints are kept, one per session id. `load` returns what is stored as it is
 * (untrusted: `loadAgentCheckpoint` validates it) or `undefined` when there is none. `save`
 * takes its copy when it is called (later changes to the object must not reach the storage)
 * and replaces the session's checkpoint whole. The storages of this package throw
 * `AgentCheckpointError`s; `loadAgentCheckpoint` and the coordinator wrap any other error.
 *
 * @example
 * const storage: AgentCheckpointStorage = {
 *   load: async (sessionId) => (await db.get(sessionId)) ?? undefined,
 *   save: async (sessionId, checkpoint) => db.put(sessionId, JSON.stringify(checkpoint)),
 *   remove: async (sessionId) => db.delete(sessionId),
 * };
 */
export interface AgentCheckpointStorage {
  load(sessionId: string): Promise<unknown>;
  save(sessionId: string, checkpoint: AgentCheckpoint): Promise<void>;
  remove(sessionId: string): Promise<void>;
}
