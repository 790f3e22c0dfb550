import { describe, expect, it } from 'vitest';
import { checkpointRejection as rejection, sampleCheckpoint, sampleStored } from '../tests/support/checkpoints';
import type { AgentCheckpointStorage } from './AgentCheckpoint';
import { createMemoryAgentCheckpointStorage } from './createMemoryAgentCheckpointStorage';
import { loadAgentCheckpoint } from './loadAgentCheckpoint';

function storageLoading(load: () => Promise<unknown>): AgentCheckpointStorage {
  return { load, save: async () => undefined, remove: async () => undefined };
}

describe('loadAgentCheckpoint', () => {
  it('is undefined when the storage has nothing (undefined or null)', async () => {
    expect(
      await loadAgentCheckpoint(
        storageLoading(async () => undefined),
        's1',
      ),
    ).toBeUndefined();
    expect(
      await loadAgentCheckpoint(
        storageLoading(async () => null),
        's1',
      ),
    ).toBeUndefined();
  });

  it('returns a validated copy of what the storage holds', async () => {
    const stored = sampleStored();
    const checkpoint = await loadAgentCheckpoint(
      storageLoading(async () => stored),
      's1',
    );
    expect(checkpoint).toEqual(sampleCheckpoint());
    expect(checkpoint).not.toBe(stored);
  });

  it('turns a storage that throws or rejects into storage_failed, with the cause', async () => {
    const cause = new Error('disk on fire');
    const throwing = storageLoading(() => {
      throw cause;
    });
    const rejecting = storageLoading(async () => {
      throw cause;
    });
    for (const storage of [throwing, rejecting]) {
      const error = await rejection(loadAgentCheckpoint(storage, 's1'));
      expect({ code: error.code, cause: error.cause }).toEqual({ code: 'storage_failed', cause });
      expect(error.message).not.toContain('disk on fire');
    }
  });

  it('refuses a checkpoint of another session than the one asked for', async () => {
    const error = await rejection(
      loadAgentCheckpoint(
        storageLoading(async () => sampleStored()),
        's2',
      ),
    );
    expect({ code: error.code, path: error.path }).toEqual({ code: 'invalid_checkpoint', path: 'sessionId' });
  });

  it('lets the caller remove an invalid checkpoint and start empty', async () => {
    const storage = createMemoryAgentCheckpointStorage();
    await storage.save({ ...sampleCheckpoint(), cursorByRun: { r404: 'x' } });
    const error = await rejection(loadAgentCheckpoint(storage, 's1'));
    expect({ code: error.code, path: error.path }).toEqual({ code: 'invalid_checkpoint', path: 'cursorByRun.r404' });
    await storage.remove('s1');
    expect(await loadAgentCheckpoint(storage, 's1')).toBeUndefined();
  });

  it('passes migrate on', async () => {
    const stored = { ...sampleStored(), schemaVersion: 0 };
    const checkpoint = await loadAgentCheckpoint(
      storageLoading(async () => stored),
      's1',
      {
        migrate: (old, fromVersion) => ({ ...(old as object), schemaVersion: fromVersion + 1 }),
      },
    );
    expect(checkpoint).toEqual(sampleCheckpoint());
  });
});
