import { createStore, del, get, set } from 'idb-keyval';
import type { AgentCheckpointStorage } from './AgentCheckpoint';
import { parseAgentCheckpointJson, stringifyAgentCheckpoint } from './checkpointJson';
import { toCheckpointStorageError } from './toCheckpointStorageError';

export interface IndexedDbAgentCheckpointStorageOptions {
  /** Default `'agent-machines'`. */
  databaseName?: string;
  /** The object store, one per database (idb-keyval's rule). Default `'checkpoints'`. */
  storeName?: string;
}

/**
 * A storage over IndexedDB (through idb-keyval): one record of JSON text per session id, in
 * its own database and object store. Text rather than the object itself, because IndexedDB
 * copies a value only when its transaction runs, later than `save` is called: the text is
 * taken at once. The database is opened on first use. A full disk is
 * `quota_exceeded`, other failures `storage_failed`, a record that is not JSON
 * `invalid_checkpoint` on load.
 *
 * @example
 * const storage = createIndexedDbAgentCheckpointStorage({ databaseName: 'my-app' });
 * const checkpoint = await loadAgentCheckpoint(storage, sessionId);
 */
export function createIndexedDbAgentCheckpointStorage(
  options: IndexedDbAgentCheckpointStorageOptions = {},
): AgentCheckpointStorage {
  // idb-keyval opens the database on first use, so creating this storage during server
  // rendering, where there is no `indexedDB`, is harmless.
  const store = createStore(options.databaseName ?? 'agent-machines', options.storeName ?? 'checkpoints');
  return {
    async load(sessionId) {
      let stored: unknown;
      try {
        stored = await get(sessionId, store);
      } catch (error) {
        throw toCheckpointStorageError(error, 'load', sessionId);
      }
      return stored === undefined ? undefined : parseAgentCheckpointJson(stored, sessionId);
    },
    async save(checkpoint) {
      const { sessionId, text } = stringifyAgentCheckpoint(checkpoint);
      try {
        await set(sessionId, text, store);
      } catch (error) {
        throw toCheckpointStorageError(error, 'save', sessionId);
      }
    },
    async remove(sessionId) {
      try {
        await del(sessionId, store);
      } catch (error) {
        throw toCheckpointStorageError(error, 'remove', sessionId);
      }
    },
  };
}
