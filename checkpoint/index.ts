/**
 * `agent-machines/checkpoint`: save a conversation's AgentState, run inputs, cursors and pending
 * commands, and restore them after a refresh. Files on disk are `agent-machines/checkpoint/node`.
 *
 * @example
 * const storage = createIndexedDbAgentCheckpointStorage();
 * try {
 *   const checkpoint = await loadAgentCheckpoint(storage, sessionId);
 *   if (checkpoint !== undefined) store.reset(checkpoint.state);
 * } catch (error) {
 *   // Invalid or of an unsupported version: start empty.
 *   if (AgentCheckpointError.isInstance(error) && error.code !== 'storage_failed') await storage.remove(sessionId);
 * }
 * const checkpoints = createAgentCheckpointCoordinator({ storage, sessionId, build: buildCheckpoint });
 * store.subscribe(() => checkpoints.schedule('batch'));
 */
export type { AgentCheckpoint, AgentCheckpointStorage } from './AgentCheckpoint';
export { AGENT_CHECKPOINT_SCHEMA_VERSION } from './AgentCheckpoint';
export type { AgentCheckpointErrorCode, AgentCheckpointErrorOptions } from './AgentCheckpointError';
export { AgentCheckpointError } from './AgentCheckpointError';
export { DEFAULT_MAX_CHECKPOINT_SIZE } from './checkpointLimits';
export type {
  AgentCheckpointCoordinator,
  AgentCheckpointCoordinatorOptions,
  AgentCheckpointSaveReason,
  AgentCheckpointVisibility,
} from './createAgentCheckpointCoordinator';
export { createAgentCheckpointCoordinator } from './createAgentCheckpointCoordinator';
export type { IndexedDbAgentCheckpointStorageOptions } from './createIndexedDbAgentCheckpointStorage';
export { createIndexedDbAgentCheckpointStorage } from './createIndexedDbAgentCheckpointStorage';
export { createMemoryAgentCheckpointStorage } from './createMemoryAgentCheckpointStorage';
export type {
  AgentCheckpointWebStorage,
  WebStorageAgentCheckpointStorageOptions,
} from './createWebStorageAgentCheckpointStorage';
export { createWebStorageAgentCheckpointStorage } from './createWebStorageAgentCheckpointStorage';
export { loadAgentCheckpoint } from './loadAgentCheckpoint';
export type { ParseAgentCheckpointOptions } from './parseAgentCheckpoint';
export { parseAgentCheckpoint } from './parseAgentCheckpoint';
