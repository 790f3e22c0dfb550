import { execFileSync } from 'node:child_process';
import { mkdir, readdir, readFile, stat, truncate, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { checkpointRejection as rejection, sampleCheckpoint } from '../tests/support/checkpoints';
import { temporaryDirectory } from '../tests/support/temporaryDirectory';
import { createFileAgentCheckpointStorage, getAgentCheckpointFileName } from './createFileAgentCheckpointStorage';
import { loadAgentCheckpoint } from './loadAgentCheckpoint';

/** A valid checkpoint of `sessionId` whose JSON is about `size` characters. */
function checkpointOf(sessionId: string, size = 0) {
  const checkpoint = sampleCheckpoint(sessionId);
  checkpoint.inputByRun = { r1: { padding: 'p'.repeat(size) } };
  return checkpoint;
}

describe('createFileAgentCheckpointStorage', () => {
  it('names each file from the hex of its session id, so no id leaves the directory', async () => {
    const parent = temporaryDirectory();
    const directory = join(parent, 'checkpoints');
    const storage = createFileAgentCheckpointStorage(directory);
    const sessionIds = ['../escape', 'a/b', '..', '/etc/passwd', 'C:\\evil', 'S1', 's1', 'nul', '\u0000x'];
    for (const sessionId of sessionIds) await storage.save(checkpointOf(sessionId));
    expect(await readdir(parent)).toEqual(['checkpoints']);
    const files = await readdir(directory);
    expect(files).toHaveLength(sessionIds.length);
    for (const file of files) expect(file).toMatch(/^session-[0-9a-f]+\.json$/);
    expect(getAgentCheckpointFileName('../x')).toBe('session-2e2e2f78.json');
    for (const sessionId of sessionIds) {
      expect((await loadAgentCheckpoint(storage, sessionId))?.sessionId).toBe(sessionId);
    }
  });

  it('hashes a long session id into a short name', () => {
    const name = getAgentCheckpointFileName('x'.repeat(10_000));
    expect(name).toMatch(/^session-sha256-[0-9a-f]{64}\.json$/);
    expect(getAgentCheckpointFileName('x'.repeat(10_001))).not.toBe(name);
  });

  it('creates the directory on the first save, and loads nothing from a missing one', async () => {
    const directory = join(temporaryDirectory(), 'a', 'b');
    const storage = createFileAgentCheckpointStorage(directory);
    expect(await storage.load('s1')).toBeUndefined();
    await storage.save(sampleCheckpoint());
    expect(await readdir(directory)).toEqual([getAgentCheckpointFileName('s1')]);
  });

  it.skipIf(process.platform === 'win32')('makes files readable by their owner only', async () => {
    const directory = join(temporaryDirectory(), 'private');
    await createFileAgentCheckpointStorage(directory).save(sampleCheckpoint());
    expect((await stat(join(directory, getAgentCheckpointFileName('s1')))).mode & 0o777).toBe(0o600);
    expect((await stat(directory)).mode & 0o777).toBe(0o700);
  });

  it('refuses a truncated file as invalid_checkpoint', async () => {
    const directory = temporaryDirectory();
    const storage = createFileAgentCheckpointStorage(directory);
    await storage.save(sampleCheckpoint());
    const path = join(directory, getAgentCheckpointFileName('s1'));
    const text = await readFile(path, 'utf8');
    await writeFile(path, text.slice(0, text.length - 10));
    const error = await rejection(loadAgentCheckpoint(storage, 's1'));
    expect({ code: error.code, path: error.path }).toEqual({ code: 'invalid_checkpoint', path: '' });
  });

  it('does not read a file larger than a checkpoint may be', async () => {
    const directory = temporaryDirectory();
    const path = join(directory, getAgentCheckpointFileName('s1'));
    await writeFile(path, '');
    await truncate(path, 200 * 1024 * 1024); // sparse: nothing is written
    const error = await rejection(createFileAgentCheckpointStorage(directory).load('s1'));
    expect(error.code).toBe('invalid_checkpoint');
    expect(error.message).toContain(`is ${200 * 1024 * 1024} bytes`);
  });

  it('replaces the file atomically: a reader during saves sees the old or the new checkpoint, whole', async () => {
    const directory = temporaryDirectory();
    const storage = createFileAgentCheckpointStorage(directory);
    const path = join(directory, getAgentCheckpointFileName('s1'));
    const older = checkpointOf('s1', 4 * 1024 * 1024);
    const newer = { ...checkpointOf('s1', 4 * 1024 * 1024 + 1), savedAt: 2 };
    await storage.save(older);
    let saving = true;
    const seen = new Set<number>();
    const reader = (async () => {
      while (saving) {
        const text = await readFile(path, 'utf8');
        seen.add((JSON.parse(text) as { savedAt: number }).savedAt);
      }
    })();
    for (let round = 0; round < 4; round += 1) await storage.save(round % 2 === 0 ? newer : older);
    saving = false;
    await reader;
    expect(seen.size).toBeGreaterThan(0);
    expect([...seen].every((savedAt) => savedAt === older.savedAt || savedAt === newer.savedAt)).toBe(true);
    expect(await readdir(directory)).toEqual([getAgentCheckpointFileName('s1')]);
  });

  it('leaves no temporary file behind when the rename fails, and reports storage_failed', async () => {
    const directory = temporaryDirectory();
    // A non-empty directory where the file should go: the rename over it fails.
    await mkdir(join(directory, getAgentCheckpointFileName('s1'), 'occupied'), { recursive: true });
    const error = await rejection(createFileAgentCheckpointStorage(directory).save(sampleCheckpoint()));
    expect(error.code).toBe('storage_failed');
    expect(error.cause).toMatchObject({ code: expect.stringMatching(/^E/) });
    expect(await readdir(directory)).toEqual([getAgentCheckpointFileName('s1')]);
  });

  it('refuses a FIFO in place of the checkpoint file at once, instead of waiting for a writer', async () => {
    const directory = temporaryDirectory();
    const path = join(directory, getAgentCheckpointFileName('s1'));
    execFileSync('mkfifo', [path]);
    expect((await stat(path)).isFIFO()).toBe(true);
    const storage = createFileAgentCheckpointStorage(directory);
    const error = await rejection(storage.load('s1'));
    expect({ code: error.code, path: error.path, message: error.message }).toEqual({
      code: 'invalid_checkpoint',
      path: '',
      message: 'The stored checkpoint of session "s1" is not a regular file (a FIFO); it was not read',
    });
    // A save replaces it with a file, which loads.
    await storage.save(sampleCheckpoint());
    expect(await loadAgentCheckpoint(storage, 's1')).toEqual(sampleCheckpoint());
  });

  it('refuses a directory in place of the checkpoint file', async () => {
    const directory = temporaryDirectory();
    await mkdir(join(directory, getAgentCheckpointFileName('s1')));
    const error = await rejection(createFileAgentCheckpointStorage(directory).load('s1'));
    expect({ code: error.code, message: error.message }).toEqual({
      code: 'invalid_checkpoint',
      message: 'The stored checkpoint of session "s1" is not a regular file (a directory); it was not read',
    });
  });

  it('removes a file, and removing a missing one succeeds', async () => {
    const directory = temporaryDirectory();
    const storage = createFileAgentCheckpointStorage(directory);
    await storage.save(sampleCheckpoint());
    await storage.remove('s1');
    await storage.remove('s1');
    expect(await readdir(directory)).toEqual([]);
  });
});
