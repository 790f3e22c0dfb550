import type { AgentCheckpointStorage } from './AgentCheckpoint';
import { parseAgentCheckpointJson, stringifyAgentCheckpoint } from './checkpointJson';
import { toCheckpointStorageError } from './toCheckpointStorageError';

/** The part of the Web Storage API (`localStorage`, `sessionStorage`) a checkpoint storage uses. */
export interface AgentCheckpointWebStorage {
  getItem(key: string): string | null;
  setItem(key: string, value: string): void;
  removeItem(key: string): void;
}

export interface WebStorageAgentCheckpointStorageOptions {
  /** Put before the session id to make each item's key. Default `'agent-machines:checkpoint:'`. */
  keyPrefix?: string;
}

/**
 * A storage over `localStorage` or `sessionStorage`, passed explicitly: one item of JSON text
 * per session, under `keyPrefix + sessionId`. A full storage (`QuotaExceededError`) is
 * `quota_exceeded`, other failures `storage_failed`, and an item that is not JSON (truncated,
 * edited) `invalid_checkpoint` on load. Web Storage is synchronous and holds about 5 MiB per
 * origin: for long conversations prefer IndexedDB. What it stores is readable by any script
 * of the origin and outlives a logout: remove a user's checkpoints when they sign out.
 *
 * @example
 * const storage = createWebStorageAgentCheckpointStorage(window.localStorage, { keyPrefix: 'my-app:chat:' });
 */
export function createWebStorageAgentCheckpointStorage(
  storage: AgentCheckpointWebStorage,
  options: WebStorageAgentCheckpointStorageOptions = {},
): AgentCheckpointStorage {
  const keyPrefix = options.keyPrefix ?? 'agent-machines:checkpoint:';
  return {
    async load(sessionId) {
      let text: string | null;
      try {
        text = storage.getItem(keyPrefix + sessionId);
      } catch (error) {
        throw toCheckpointStorageError(error, 'load', sessionId);
      }
      return text === null ? undefined : parseAgentCheckpointJson(text, sessionId);
    },
    async save(checkpoint) {
      const { sessionId, text } = stringifyAgentCheckpoint(checkpoint);
      try {
        storage.setItem(keyPrefix + sessionId, text);
      } catch (error) {
        throw toCheckpointStorageError(error, 'save', sessionId);
      }
    },
    async remove(sessionId) {
      try {
        storage.removeItem(keyPrefix + sessionId);
      } catch (error) {
        throw toCheckpointStorageError(error, 'remove', sessionId);
      }
    },
  };
}
