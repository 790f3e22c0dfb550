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
 * Where checkpoints are kept, one per session id (seed 003 §12.2). `save(checkpoint)` keeps
 * it under its own `checkpoint.sessionId`, takes its copy when it is called (later changes
 * to the object must not reach the storage) and replaces that session's checkpoint whole;
 * `load(sessionId)` returns what is stored under that id as it is (untrusted:
 * `loadAgentCheckpoint` validates it, and refuses one whose `sessionId` is another) or
 * `undefined` when there is none; `remove(sessionId)` deletes it. The runtime's session id
 * (useXChat's `conversationKey`) is the id it loads, saves and removes under. The storages
 * of this package throw `AgentCheckpointError`s; `loadAgentCheckpoint` and the coordinator
 * wrap any other error.
 *
 * @example
 * const storage: AgentCheckpointStorage = {
 *   load: async (sessionId) => JSON.parse((await db.get(sessionId)) ?? 'null') ?? undefined,
 *   save: async (checkpoint) => db.put(checkpoint.sessionId, JSON.stringify(checkpoint)),
 *   remove: async (sessionId) => db.delete(sessionId),
 * };
 */
export interface AgentCheckpointStorage {
  load(sessionId: string): Promise<unknown>;
  save(checkpoint: AgentCheckpoint): Promise<void>;
  remove(sessionId: string): Promise<void>;
}
