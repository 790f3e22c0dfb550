import type { AgentCheckpointStorage } from './AgentCheckpoint';
import { parseAgentCheckpointJson, stringifyAgentCheckpoint } from './checkpointJson';

/**
 * A storage that keeps checkpoints in memory, as JSON text: what `load` returns is a fresh
 * value, and later changes to a saved object never reach it. For tests, and for a server
 * that keeps sessions only while it runs.
 *
 * @example
 * const storage = createMemoryAgentCheckpointStorage();
 * await storage.save(checkpoint); // kept under checkpoint.sessionId
 * const restored = await loadAgentCheckpoint(storage, checkpoint.sessionId);
 */
export function createMemoryAgentCheckpointStorage(): AgentCheckpointStorage {
  const texts = new Map<string, string>();
  return {
    async load(sessionId) {
      const text = texts.get(sessionId);
      return text === undefined ? undefined : parseAgentCheckpointJson(text, sessionId);
    },
    async save(checkpoint) {
      const { sessionId, text } = stringifyAgentCheckpoint(checkpoint);
      texts.set(sessionId, text);
    },
    async remove(sessionId) {
      texts.delete(sessionId);
    },
  };
}
