import { describe, expect, it } from 'vitest';
import { FakeWebStorage, checkpointRejection as rejection, sampleCheckpoint } from '../tests/support/checkpoints';
import { createWebStorageAgentCheckpointStorage } from './createWebStorageAgentCheckpointStorage';
import { loadAgentCheckpoint } from './loadAgentCheckpoint';

describe('createWebStorageAgentCheckpointStorage', () => {
  it('keeps one JSON item per session under keyPrefix + sessionId', async () => {
    const web = new FakeWebStorage();
    const storage = createWebStorageAgentCheckpointStorage(web, { keyPrefix: 'app:' });
    await storage.save(sampleCheckpoint());
    expect([...web.items.keys()]).toEqual(['app:s1']);
    expect(JSON.parse(web.items.get('app:s1') as string)).toEqual(JSON.parse(JSON.stringify(sampleCheckpoint())));
    await storage.remove('s1');
    expect(web.items.size).toBe(0);
  });

  it('uses agent-machines:checkpoint: as the default prefix', async () => {
    const web = new FakeWebStorage();
    await createWebStorageAgentCheckpointStorage(web).save(sampleCheckpoint());
    expect([...web.items.keys()]).toEqual(['agent-machines:checkpoint:s1']);
  });

  it.each([
    ['a QuotaExceededError DOMException', new DOMException('The quota has been exceeded.', 'QuotaExceededError')],
    ['legacy code 22', Object.assign(new Error('full'), { code: 22 })],
    ["Firefox's code 1014", Object.assign(new Error('full'), { name: 'NS_ERROR_DOM_QUOTA_REACHED', code: 1014 })],
  ])('turns %s into quota_exceeded, keeping the cause', async (_, failure) => {
    const web = new FakeWebStorage();
    web.failWith = failure;
    const error = await rejection(createWebStorageAgentCheckpointStorage(web).save(sampleCheckpoint()));
    expect(error.code).toBe('quota_exceeded');
    expect(error.cause).toBe(failure);
  });

  it('turns any other failure into storage_failed, on load, save and remove', async () => {
    const web = new FakeWebStorage();
    const storage = createWebStorageAgentCheckpointStorage(web);
    web.failWith = new DOMException('The operation is insecure.', 'SecurityError');
    expect((await rejection(storage.save(sampleCheckpoint()))).code).toBe('storage_failed');
    expect((await rejection(storage.load('s1'))).code).toBe('storage_failed');
    expect((await rejection(storage.remove('s1'))).code).toBe('storage_failed');
    expect((await rejection(loadAgentCheckpoint(storage, 's1'))).code).toBe('storage_failed');
  });
});
