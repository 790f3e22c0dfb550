import 'fake-indexeddb/auto';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createStore, set } from 'idb-keyval';
import { describe, expect, it } from 'vitest';
import { FakeWebStorage, checkpointRejection as rejection, sampleCheckpoint } from '../tests/support/checkpoints';
import { temporaryDirectory } from '../tests/support/temporaryDirectory';
import type { AgentCheckpointStorage } from './AgentCheckpoint';
import { createFileAgentCheckpointStorage, getAgentCheckpointFileName } from './createFileAgentCheckpointStorage';
import { createIndexedDbAgentCheckpointStorage } from './createIndexedDbAgentCheckpointStorage';
import { createMemoryAgentCheckpointStorage } from './createMemoryAgentCheckpointStorage';
import { createWebStorageAgentCheckpointStorage } from './createWebStorageAgentCheckpointStorage';
import { loadAgentCheckpoint } from './loadAgentCheckpoint';
import { parseAgentCheckpoint } from './parseAgentCheckpoint';

interface StorageUnderTest {
  storage: AgentCheckpointStorage;
  /** Puts raw text where the storage keeps a session's checkpoint; absent where it cannot be reached. */
  writeRaw?: (sessionId: string, text: string) => Promise<void>;
}

let databases = 0;

const storages: Array<[string, () => StorageUnderTest]> = [
  ['memory', () => ({ storage: createMemoryAgentCheckpointStorage() })],
  [
    'Web Storage',
    () => {
      const web = new FakeWebStorage();
      return {
        storage: createWebStorageAgentCheckpointStorage(web),
        writeRaw: async (sessionId, text) => web.setItem(`agent-machines:checkpoint:${sessionId}`, text),
      };
    },
  ],
  [
    'IndexedDB',
    () => {
      databases += 1;
      const databaseName = `checkpoints-${databases}`;
      return {
        storage: createIndexedDbAgentCheckpointStorage({ databaseName }),
        writeRaw: (sessionId, text) => set(sessionId, text, createStore(databaseName, 'checkpoints')),
      };
    },
  ],
  [
    'file',
    () => {
      const directory = temporaryDirectory('agent-machines-checkpoints-');
      return {
        storage: createFileAgentCheckpointStorage(directory),
        writeRaw: (sessionId, text) => writeFile(join(directory, getAgentCheckpointFileName(sessionId)), text),
      };
    },
  ],
];

describe.each(storages)('%s checkpoint storage', (_, create) => {
  it('loads nothing for a session never saved', async () => {
    const { storage } = create();
    expect(await storage.load('s1')).toBeUndefined();
    expect(await loadAgentCheckpoint(storage, 's1')).toBeUndefined();
  });

  it('gives back what was saved: parse(JSON round trip) deep-equals the checkpoint', async () => {
    const { storage } = create();
    const checkpoint = sampleCheckpoint();
    await storage.save(checkpoint);
    expect(parseAgentCheckpoint(JSON.parse(JSON.stringify(await storage.load('s1'))))).toEqual(checkpoint);
    expect(await loadAgentCheckpoint(storage, 's1')).toEqual(checkpoint);
  });

  it('keeps what was saved apart from later changes to the saved object', async () => {
    const { storage } = create();
    const checkpoint = sampleCheckpoint();
    const saving = storage.save(checkpoint);
    (checkpoint.inputByRun.r1 as { prompt: string }).prompt = 'changed before the write';
    checkpoint.cursorByRun.r1 = 'changed';
    await saving;
    (checkpoint.inputByRun.r1 as { prompt: string }).prompt = 'changed after the write';
    expect(await loadAgentCheckpoint(storage, 's1')).toEqual(sampleCheckpoint());
  });

  it('overwrites, keeps sessions apart, and removes one', async () => {
    const { storage } = create();
    const first = sampleCheckpoint();
    const second = { ...sampleCheckpoint(), savedAt: 10_000 };
    const other = sampleCheckpoint('other');
    await storage.save(first);
    await storage.save(second);
    await storage.save(other);
    expect((await loadAgentCheckpoint(storage, 's1'))?.savedAt).toBe(10_000);
    await storage.remove('s1');
    await storage.remove('never-saved');
    expect(await storage.load('s1')).toBeUndefined();
    expect(await loadAgentCheckpoint(storage, 'other')).toEqual(other);
  });

  it('saves a checkpoint under its own sessionId (seed 003 §12.2: save(checkpoint))', async () => {
    const { storage } = create();
    await storage.save(sampleCheckpoint('s2'));
    expect(await loadAgentCheckpoint(storage, 's2')).toEqual(sampleCheckpoint('s2'));
    expect(await storage.load('s1')).toBeUndefined();
    expect(await storage.load('undefined')).toBeUndefined();
  });

  it('refuses, loudly, a checkpoint without a session id and the older save(sessionId, checkpoint)', async () => {
    const { storage } = create();
    const older = storage.save as unknown as (sessionId: string, checkpoint: unknown) => Promise<void>;
    const fromOlderCode = await rejection(older('s1', sampleCheckpoint()));
    expect({ code: fromOlderCode.code, path: fromOlderCode.path }).toEqual({
      code: 'invalid_checkpoint',
      path: 'sessionId',
    });
    expect(fromOlderCode.message).toBe(
      'Cannot save string as a checkpoint: save takes the checkpoint only, and keeps it under its sessionId',
    );
    for (const sessionId of [undefined, '', 7]) {
      const error = await rejection(storage.save({ ...sampleCheckpoint(), sessionId } as never));
      expect({ code: error.code, path: error.path }).toEqual({ code: 'invalid_checkpoint', path: 'sessionId' });
    }
    expect(await storage.load('s1')).toBeUndefined();
    expect(await storage.load('undefined')).toBeUndefined();
    expect(await storage.load('')).toBeUndefined();
  });

  it('refuses to save what JSON cannot write, keeping the previous checkpoint', async () => {
    const { storage } = create();
    await storage.save(sampleCheckpoint());
    const broken = sampleCheckpoint();
    broken.inputByRun.r1 = { big: 10n };
    const error = await rejection(storage.save(broken));
    expect(error.code).toBe('unserializable_input');
    expect(await loadAgentCheckpoint(storage, 's1')).toEqual(sampleCheckpoint());
  });

  it('refuses malformed and truncated JSON as invalid_checkpoint, without quoting it', async () => {
    const { storage, writeRaw } = create();
    if (writeRaw === undefined) return;
    const text = JSON.stringify(sampleCheckpoint());
    for (const raw of ['{"schemaVersion":1,"HOSTILE', text.slice(0, Math.floor(text.length / 2)), '']) {
      await writeRaw('s1', raw);
      const error = await rejection(loadAgentCheckpoint(storage, 's1'));
      expect({ code: error.code, path: error.path }).toEqual({ code: 'invalid_checkpoint', path: '' });
      expect(error.message).toContain(`(${raw.length} characters: truncated or corrupted)`);
      expect(error.message).not.toContain('HOSTILE');
      expect(error.message).not.toContain('schemaVersion');
    }
  });

  it('refuses 147 KB of nesting (73,500 levels of arrays) with AgentCheckpointError, on load and on save', async () => {
    const { storage, writeRaw } = create();
    await storage.save(sampleCheckpoint());
    let deep: unknown = [];
    for (let level = 1; level < 73_500; level += 1) deep = [deep];
    const saving = await rejection(storage.save({ ...sampleCheckpoint(), state: deep } as never));
    expect(saving.code).toBe('unserializable_input');
    expect(await loadAgentCheckpoint(storage, 's1')).toEqual(sampleCheckpoint());
    if (writeRaw === undefined) return;
    const nested = `${'['.repeat(73_500)}${']'.repeat(73_500)}`;
    const text = JSON.stringify(sampleCheckpoint());
    for (const [raw, path] of [
      [nested, '0.0.0'],
      [text.replace('"state":{', `"state":{"extra":${nested},`), 'state.extra.0.0'],
      [text.replace(JSON.stringify(sampleCheckpoint().inputByRun), `{"r1":${nested}}`), 'inputByRun.r1.0.0'],
    ] as const) {
      expect(raw.length).toBeGreaterThanOrEqual(147_000);
      await writeRaw('s1', raw);
      const error = await rejection(loadAgentCheckpoint(storage, 's1'));
      expect(error.code).toBe('invalid_checkpoint');
      expect(error.path?.slice(0, path.length)).toBe(path);
      expect(error.message.length).toBeLessThanOrEqual(2_000);
    }
  });

  it('hands a stored checkpoint of the wrong version to parse, which refuses it', async () => {
    const { storage, writeRaw } = create();
    if (writeRaw === undefined) return;
    await writeRaw('s1', JSON.stringify({ ...sampleCheckpoint(), schemaVersion: 2 }));
    expect((await rejection(loadAgentCheckpoint(storage, 's1'))).code).toBe('unsupported_version');
    const migrated = await loadAgentCheckpoint(storage, 's1', {
      migrate: (old) => ({ ...(old as object), schemaVersion: 1 }),
    });
    expect(migrated).toEqual(sampleCheckpoint());
  });
});
