import 'fake-indexeddb/auto';
import { createStore, get, set } from 'idb-keyval';
import { describe, expect, it } from 'vitest';
import { checkpointRejection as rejection, sampleCheckpoint } from '../tests/support/checkpoints';
import { createIndexedDbAgentCheckpointStorage } from './createIndexedDbAgentCheckpointStorage';
import { loadAgentCheckpoint } from './loadAgentCheckpoint';

describe('createIndexedDbAgentCheckpointStorage', () => {
  it('keeps JSON text under the session id, in agent-machines/checkpoints by default', async () => {
    await createIndexedDbAgentCheckpointStorage().save(sampleCheckpoint());
    const text = await get('s1', createStore('agent-machines', 'checkpoints'));
    expect(typeof text).toBe('string');
    expect(JSON.parse(text)).toEqual(JSON.parse(JSON.stringify(sampleCheckpoint())));
  });

  it('refuses a stored record that is not JSON text', async () => {
    await set('s1', { schemaVersion: 1 }, createStore('not-text', 'checkpoints'));
    const storage = createIndexedDbAgentCheckpointStorage({ databaseName: 'not-text' });
    const error = await rejection(loadAgentCheckpoint(storage, 's1'));
    expect({ code: error.code, path: error.path }).toEqual({ code: 'invalid_checkpoint', path: '' });
  });

  it('turns an IndexedDB failure into storage_failed', async () => {
    // The database exists without the object store asked for: every transaction fails.
    await set('x', 'x', createStore('other-store', 'something-else'));
    const storage = createIndexedDbAgentCheckpointStorage({ databaseName: 'other-store' });
    const error = await rejection(storage.save(sampleCheckpoint()));
    expect(error.code).toBe('storage_failed');
    expect(error.cause).toBeInstanceOf(Error);
    expect((await rejection(storage.load('s1'))).code).toBe('storage_failed');
  });
});
