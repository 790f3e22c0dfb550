import type { AgentCheckpoint, AgentCheckpointStorage } from './AgentCheckpoint';
import { AgentCheckpointError, describeCheckpointKey } from './AgentCheckpointError';
import { type ParseAgentCheckpointOptions, parseAgentCheckpoint } from './parseAgentCheckpoint';
import { toCheckpointStorageError } from './toCheckpointStorageError';

/**
 * Loads and validates the checkpoint of one session: `undefined` when none is stored (the
 * storage returned `undefined` or `null`), else a clean, validated copy (`parseAgentCheckpoint`)
 * that belongs to `sessionId`. Never hands an invalid checkpoint on: what to do then is the
 * caller's choice, usually to remove it and start from an empty state.
 *
 * @throws AgentCheckpointError `storage_failed` (or `quota_exceeded`) when the storage throws,
 * else what `parseAgentCheckpoint` throws (`invalid_checkpoint`, `unsupported_version`).
 *
 * @example
 * let checkpoint: AgentCheckpoint | undefined;
 * try {
 *   checkpoint = await loadAgentCheckpoint(storage, sessionId);
 * } catch (error) {
 *   if (!AgentCheckpointError.isInstance(error) || error.code === 'storage_failed') throw error;
 *   console.warn(error.message); // names the path, never the stored content
 *   await storage.remove(sessionId); // corrupted or from an unsupported version: start empty
 * }
 * if (checkpoint !== undefined) store.reset(checkpoint.state);
 */
export async function loadAgentCheckpoint(
  storage: AgentCheckpointStorage,
  sessionId: string,
  options: ParseAgentCheckpointOptions = {},
): Promise<AgentCheckpoint | undefined> {
  let stored: unknown;
  try {
    stored = await storage.load(sessionId);
  } catch (error) {
    throw toCheckpointStorageError(error, 'load', sessionId);
  }
  if (stored === undefined || stored === null) return undefined;
  const checkpoint = parseAgentCheckpoint(stored, options);
  if (checkpoint.sessionId !== sessionId) {
    throw new AgentCheckpointError(
      'invalid_checkpoint',
      `Invalid checkpoint: sessionId is not ${describeCheckpointKey(sessionId)}, the session it was loaded for`,
      { path: 'sessionId' },
    );
  }
  return checkpoint;
}
