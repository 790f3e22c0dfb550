import { symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { checkpointRejection as rejection, sampleCheckpoint } from '../tests/support/checkpoints';
import { temporaryDirectory } from '../tests/support/temporaryDirectory';
import { createFileAgentCheckpointStorage, getAgentCheckpointFileName } from './createFileAgentCheckpointStorage';

describe.skipIf(process.platform === 'win32')('createFileAgentCheckpointStorage: what is not a checkpoint file', () => {
  it('refuses a device in place of the checkpoint file without reading it (a link to /dev/zero never ends)', async () => {
    const directory = temporaryDirectory();
    await symlink('/dev/zero', join(directory, getAgentCheckpointFileName('s1')));
    const error = await rejection(createFileAgentCheckpointStorage(directory).load('s1'));
    expect({ code: error.code, path: error.path, message: error.message }).toEqual({
      code: 'invalid_checkpoint',
      path: '',
      message: 'The stored checkpoint of session "s1" is not a regular file (a device); it was not read',
    });
  });

  it('reports a directory that is a file as storage_failed on load and on save, with the system error as the cause', async () => {
    const parent = temporaryDirectory();
    const directory = join(parent, 'checkpoints');
    await writeFile(directory, 'not a directory');
    const storage = createFileAgentCheckpointStorage(directory);
    const loading = await rejection(storage.load('s1'));
    expect({ code: loading.code, message: loading.message }).toEqual({
      code: 'storage_failed',
      message: 'The storage failed to load the checkpoint of session "s1"',
    });
    expect(loading.cause).toMatchObject({ code: 'ENOTDIR' });
    const saving = await rejection(storage.save(sampleCheckpoint()));
    expect(saving.code).toBe('storage_failed');
    expect(saving.cause).toMatchObject({ code: expect.stringMatching(/^E(EXIST|NOTDIR)$/) });
  });
});
