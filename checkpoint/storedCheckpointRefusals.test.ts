import 'fake-indexeddb/auto';
import { createStore, set } from 'idb-keyval';
import { describe, expect, it } from 'vitest';
import { FakeWebStorage, checkpointRejection as rejection, sampleCheckpoint } from '../tests/support/checkpoints';
import type { AgentCheckpointStorage } from './AgentCheckpoint';
import { AgentCheckpointError, describeCheckpointReason } from './AgentCheckpointError';
import { DEFAULT_MAX_CHECKPOINT_SIZE } from './checkpointLimits';
import { createIndexedDbAgentCheckpointStorage } from './createIndexedDbAgentCheckpointStorage';
import { createMemoryAgentCheckpointStorage } from './createMemoryAgentCheckpointStorage';
import { createWebStorageAgentCheckpointStorage } from './createWebStorageAgentCheckpointStorage';
import { loadAgentCheckpoint } from './loadAgentCheckpoint';

describe('what a save refuses before anything is written', () => {
  it('names null as what was given to save, instead of a checkpoint', async () => {
    const storage = createMemoryAgentCheckpointStorage();
    const error = await rejection(storage.save(null as never));
    expect({ code: error.code, path: error.path, message: error.message }).toEqual({
      code: 'invalid_checkpoint',
      path: 'sessionId',
      message: 'Cannot save null as a checkpoint: save takes the checkpoint only, and keeps it under its sessionId',
    });
  });

  it('refuses a checkpoint whose toJSON gives no JSON, keeping the one saved before', async () => {
    const storage = createMemoryAgentCheckpointStorage();
    await storage.save(sampleCheckpoint());
    const error = await rejection(storage.save({ ...sampleCheckpoint(), toJSON: () => undefined } as never));
    expect({ code: error.code, message: error.message }).toEqual({
      code: 'unserializable_input',
      message: 'The checkpoint of session "s1" is not a JSON object',
    });
    expect(await loadAgentCheckpoint(storage, 's1')).toEqual(sampleCheckpoint());
  });
});

describe('what a load refuses in what a storage holds', () => {
  it('refuses an IndexedDB record of null (not JSON text) rather than reading it as nothing stored', async () => {
    await set('s1', null, createStore('null-record', 'checkpoints'));
    const storage = createIndexedDbAgentCheckpointStorage({ databaseName: 'null-record' });
    const error = await rejection(loadAgentCheckpoint(storage, 's1'));
    expect({ code: error.code, path: error.path, message: error.message }).toEqual({
      code: 'invalid_checkpoint',
      path: '',
      message: 'The stored checkpoint of session "s1" is null, not JSON text',
    });
  });

  it('refuses stored text longer than a checkpoint may be without parsing it', async () => {
    const web = new FakeWebStorage();
    web.setItem('agent-machines:checkpoint:s1', `{"padding":"${'x'.repeat(DEFAULT_MAX_CHECKPOINT_SIZE)}"}`);
    const error = await rejection(loadAgentCheckpoint(createWebStorageAgentCheckpointStorage(web), 's1'));
    expect({ code: error.code, path: error.path, message: error.message }).toEqual({
      code: 'invalid_checkpoint',
      path: '',
      message: `The stored checkpoint of session "s1" is larger than ${DEFAULT_MAX_CHECKPOINT_SIZE} characters`,
    });
  });

  it('shows a long session id by its length only', async () => {
    const sessionId = `token-${'t'.repeat(94)}`;
    const web = new FakeWebStorage();
    web.setItem(`agent-machines:checkpoint:${sessionId}`, '{"truncated');
    const error = await rejection(loadAgentCheckpoint(createWebStorageAgentCheckpointStorage(web), sessionId));
    expect(error.message).toBe(
      'The stored checkpoint of session (an id of 100 characters) is not valid JSON (11 characters: truncated or corrupted)',
    );
  });

  it('turns a storage that rejects with something other than an Error into storage_failed, keeping it as the cause', async () => {
    const storage: AgentCheckpointStorage = {
      load: () => Promise.reject('offline'),
      save: async () => undefined,
      remove: async () => undefined,
    };
    const error = await rejection(loadAgentCheckpoint(storage, 's1'));
    expect({ code: error.code, cause: error.cause, message: error.message }).toEqual({
      code: 'storage_failed',
      cause: 'offline',
      message: 'The storage failed to load the checkpoint of session "s1"',
    });
  });
});

describe('messages stay short whatever the stored data', () => {
  it('cuts a path of many short keys after 1,024 characters', () => {
    const keys = Array.from({ length: 40 }, (_, index) => `${'k'.repeat(40)}${index}`);
    const error = new AgentCheckpointError('invalid_checkpoint', 'x', { path: `inputByRun.${keys.join('.')}` });
    expect(error.path).toBe(`${`inputByRun.${keys.join('.')}`.slice(0, 1024)}...`);
  });

  it('cuts a reason of many short quoted ids after 240 characters', () => {
    const reason = `names runs ${Array.from({ length: 60 }, (_, index) => `"r${index}"`).join(', ')}, which are not in runs`;
    const described = describeCheckpointReason(reason);
    expect(described).toBe(`${reason.slice(0, 240)}...`);
  });
});
