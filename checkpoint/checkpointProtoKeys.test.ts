import { describe, expect, it, vi } from 'vitest';
import { sampleCheckpoint } from '../tests/support/checkpoints';
import { AgentCheckpointError } from './AgentCheckpointError';
import { createAgentCheckpointCoordinator } from './createAgentCheckpointCoordinator';
import { createMemoryAgentCheckpointStorage } from './createMemoryAgentCheckpointStorage';
import { loadAgentCheckpoint } from './loadAgentCheckpoint';
import { parseAgentCheckpoint } from './parseAgentCheckpoint';

/** Whatever is refused, the message stays this short. */
const MAX_MESSAGE = 2_000;

function refusal(run: () => unknown): AgentCheckpointError {
  try {
    run();
  } catch (error) {
    if (!AgentCheckpointError.isInstance(error)) throw error;
    expect(error.message.length).toBeLessThanOrEqual(MAX_MESSAGE);
    return error;
  }
  throw new Error('the checkpoint was accepted');
}

/** The sample checkpoint as stored text, with `find` replaced by `replace`, read back as JSON.parse reads it. */
function storedWith(find: string, replace: string): unknown {
  const text = JSON.stringify(sampleCheckpoint());
  expect(text).toContain(find);
  return JSON.parse(text.replace(find, replace));
}

describe('a checkpoint with a __proto__ key anywhere is refused (JSON.parse makes it an own field)', () => {
  it.each([
    ['at the top level', '{"schemaVersion":1,', '{"__proto__":{"polluted":true},"schemaVersion":1,', '__proto__'],
    ['as a run id in state.runs', '"runs":{', '"runs":{"__proto__":{"polluted":true},', 'state.runs.__proto__'],
    ['as a session id in the shared state', '"state":{}', '"state":{"__proto__":{}}', 'state.state.__proto__'],
    [
      'as a run id in lastSequenceByRun',
      '"lastSequenceByRun":{',
      '"lastSequenceByRun":{"__proto__":1,',
      'state.lastSequenceByRun.__proto__',
    ],
    ['as a run id in inputByRun', '"inputByRun":{', '"inputByRun":{"__proto__":{},', 'inputByRun.__proto__'],
    ['as a run id in cursorByRun', '"cursorByRun":{', '"cursorByRun":{"__proto__":"c",', 'cursorByRun.__proto__'],
    [
      'deep in a message',
      '"role":"assistant"',
      '"role":"assistant","meta":{"a":[{"__proto__":{"polluted":true}}]}',
      'state.messages.r1:m1.meta.a.0.__proto__',
    ],
  ])('%s, naming its path', (_, find, replace, path) => {
    const value = storedWith(find, replace);
    const error = refusal(() => parseAgentCheckpoint(value));
    expect({ code: error.code, path: error.path }).toEqual({ code: 'invalid_checkpoint', path });
    expect(error.message).toBe(`Invalid checkpoint: ${path}: is a "__proto__" key, which is not allowed`);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('before migrate or anything else reads it', () => {
    const migrate = vi.fn((old: unknown) => old);
    const value = storedWith('{"schemaVersion":1,', '{"schemaVersion":0,"__proto__":{"schemaVersion":1},');
    const error = refusal(() => parseAgentCheckpoint(value, { migrate }));
    expect(error.path).toBe('__proto__');
    expect(migrate).not.toHaveBeenCalled();
  });

  it('loadAgentCheckpoint refuses it, so nothing reaches store.reset', async () => {
    const storage = createMemoryAgentCheckpointStorage();
    const value = storedWith('"runs":{', '"runs":{"__proto__":{"polluted":true},');
    const load = vi.fn(async () => value);
    const error = await loadAgentCheckpoint({ ...storage, load }, 's1').then(
      () => undefined,
      (failure: unknown) => failure,
    );
    expect(AgentCheckpointError.isInstance(error) && [error.code, error.path]).toEqual([
      'invalid_checkpoint',
      'state.runs.__proto__',
    ]);
  });
});

describe('a refusal never echoes what was stored', () => {
  const token = 'Bearer sk-live-0123456789abcdef';
  const huge = `${token}${'x'.repeat(5 * 1024 * 1024)}`;

  it.each([
    ['a 5 MB sessionId', (checkpoint: Record<string, unknown>) => Object.assign(checkpoint, { sessionId: huge })],
    [
      'a 5 MB session id as a key of state.sessions',
      (checkpoint: Record<string, unknown>) => {
        const state = checkpoint.state as { sessions: Record<string, unknown> };
        state.sessions = { [huge]: state.sessions.s1 };
      },
    ],
    [
      'a 5 MB run id in cursorByRun',
      (checkpoint: Record<string, unknown>) => Object.assign(checkpoint, { cursorByRun: { [huge]: 'c' } }),
    ],
    [
      'a 5 MB run id in a pending command',
      (checkpoint: Record<string, unknown>) => {
        const [command] = checkpoint.pendingCommands as Array<Record<string, unknown>>;
        Object.assign(command as object, { runId: huge });
      },
    ],
    ['a 5 MB savedAt', (checkpoint: Record<string, unknown>) => Object.assign(checkpoint, { savedAt: huge })],
  ])('%s', async (_, corrupt) => {
    const checkpoint = JSON.parse(JSON.stringify(sampleCheckpoint())) as Record<string, unknown>;
    corrupt(checkpoint);
    const messages: string[] = [];
    for (const sessionId of ['s1', huge]) {
      const error = await loadAgentCheckpoint(
        { load: async () => checkpoint, save: async () => undefined, remove: async () => undefined },
        sessionId,
      ).then(
        () => undefined,
        (failure: unknown) => failure,
      );
      if (!AgentCheckpointError.isInstance(error)) throw new Error(`not refused: ${String(error)}`);
      messages.push(error.message, error.path ?? '');
    }
    for (const message of messages) {
      expect(message.length).toBeLessThanOrEqual(MAX_MESSAGE);
      expect(message).not.toContain('sk-live');
      expect(message).not.toContain('Bearer');
    }
  });
});

describe('the coordinator does not save what a load would refuse for a __proto__ key', () => {
  it('skips the save, naming the path, and keeps the last good checkpoint', async () => {
    const storage = createMemoryAgentCheckpointStorage();
    const good = sampleCheckpoint();
    const errors: AgentCheckpointError[] = [];
    let next = good;
    const coordinator = createAgentCheckpointCoordinator({
      storage,
      sessionId: 's1',
      build: () => next,
      onError: (error) => errors.push(error),
      visibility: null,
    });
    coordinator.schedule('command');
    await coordinator.flush();
    const hostile = sampleCheckpoint();
    const runs = hostile.state.runs as Record<string, unknown>;
    Object.defineProperty(runs, '__proto__', { value: runs.r2, enumerable: true, configurable: true, writable: true });
    next = hostile;
    coordinator.schedule('command');
    await coordinator.flush();
    expect(errors.map((error) => [error.code, error.path])).toEqual([['invalid_checkpoint', 'state.runs.__proto__']]);
    expect(await loadAgentCheckpoint(storage, 's1')).toEqual(good);
    coordinator.stop();
  });
});
