import { describe, expect, it, vi } from 'vitest';
import { sampleCheckpoint } from '../tests/support/checkpoints';
import type { AgentCheckpoint, AgentCheckpointStorage } from './AgentCheckpoint';
import { AgentCheckpointError } from './AgentCheckpointError';
import { parseAgentCheckpointJson } from './checkpointJson';
import { createAgentCheckpointCoordinator } from './createAgentCheckpointCoordinator';
import { createMemoryAgentCheckpointStorage } from './createMemoryAgentCheckpointStorage';
import { loadAgentCheckpoint } from './loadAgentCheckpoint';
import type { ParseAgentCheckpointOptions } from './parseAgentCheckpoint';

function storageOf(load: () => unknown): AgentCheckpointStorage {
  return { load: async () => load(), save: async () => undefined, remove: async () => undefined };
}

async function refusal(
  storage: AgentCheckpointStorage,
  options: ParseAgentCheckpointOptions = {},
): Promise<AgentCheckpointError> {
  const error = await loadAgentCheckpoint(storage, 's1', options).then(
    () => undefined,
    (failure: unknown) => failure,
  );
  if (!AgentCheckpointError.isInstance(error))
    throw new Error(`expected an AgentCheckpointError, got ${String(error)}`);
  expect(error.message.length).toBeLessThanOrEqual(2_000);
  return error;
}

/** About 147 KB of stored text each, shaped as attacks on a parser are. */
const base = JSON.stringify(sampleCheckpoint());
const deepArrays = (levels: number) => `${'['.repeat(levels)}${']'.repeat(levels)}`;
const deepObjects = (levels: number) => `${'{"a":'.repeat(levels)}1${'}'.repeat(levels)}`;
const shapes: Array<[string, string]> = [
  ['a checkpoint that is 73,000 nested arrays', deepArrays(73_000)],
  ['state holding 73,000 nested arrays', base.replace('"state":{', `"state":{"extra":${deepArrays(73_000)},`)],
  ['savedAt as 29,000 nested objects', base.replace('"savedAt":9000', `"savedAt":${deepObjects(29_000)}`)],
  [
    'an unknown field of 29,000 nested objects',
    base.replace('"savedAt":9000', `"savedAt":9000,"x":${deepObjects(29_000)}`),
  ],
  [
    'a pending command of 73,000 nested arrays',
    base.replace('"pendingCommands":[', `"pendingCommands":[${deepArrays(73_000)},`),
  ],
  ['a 147 KB run status', base.replace('"status":"running"', `"status":"${'\\"'.repeat(73_000)}"`)],
  ['a 147 KB run id key', base.replace('"runs":{', `"runs":{"${'k'.repeat(147_000)}":1,`)],
  ['73,000 numbers as the order', base.replace(/"order":\[[^\]]*\]/, `"order":[${'0,'.repeat(73_000)}0]`)],
];

/** A value nested `levels` arrays deep, built without JSON: what a storage handing back objects may return. */
function nestedArrays(levels: number): unknown {
  let value: unknown = [];
  for (let level = 1; level < levels; level += 1) value = [value];
  return value;
}

describe('loadAgentCheckpoint fails closed with AgentCheckpointError, whatever the stored value', () => {
  it.each(shapes)('%s', async (_, text) => {
    expect(text.length).toBeGreaterThan(100_000);
    const error = await refusal(storageOf(() => parseAgentCheckpointJson(text, 's1')));
    expect(error.code).toBe('invalid_checkpoint');
  });

  it('refuses values nested 73,000 levels that a storage hands back as objects, naming where', async () => {
    const cases: Array<[unknown, string]> = [
      [nestedArrays(73_000), '0.0.0'],
      [{ ...sampleCheckpoint(), state: { ...sampleCheckpoint().state, extra: nestedArrays(73_000) } }, 'state.extra.0'],
      [{ ...sampleCheckpoint(), inputByRun: { r1: nestedArrays(73_000) } }, 'inputByRun.r1.0'],
    ];
    for (const [stored, path] of cases) {
      const error = await refusal(storageOf(() => stored));
      expect([error.code, error.path?.slice(0, path.length)]).toEqual(['invalid_checkpoint', path]);
    }
  });

  it('refuses what migrate returns nested 73,000 levels, as any checkpoint', async () => {
    const stored = { ...sampleCheckpoint(), schemaVersion: 0 };
    const migrations: Array<[(old: unknown) => unknown, string]> = [
      [() => ({ ...sampleCheckpoint(), pendingCommands: [nestedArrays(73_000)] }), 'pendingCommands.0.0'],
      [() => ({ ...sampleCheckpoint(), cursorByRun: { r1: nestedArrays(73_000) } }), 'cursorByRun.r1.0'],
    ];
    for (const [migrate, path] of migrations) {
      const error = await refusal(
        storageOf(() => stored),
        { migrate },
      );
      expect([error.code, error.path?.slice(0, path.length)]).toEqual(['invalid_checkpoint', path]);
    }
  });

  it('the coordinator reports a checkpoint nested 73,000 levels as AgentCheckpointError, keeping the last good one', async () => {
    const storage = createMemoryAgentCheckpointStorage();
    await storage.save(sampleCheckpoint());
    const errors: unknown[] = [];
    const builds = [
      () => ({ ...sampleCheckpoint(), inputByRun: { r1: nestedArrays(73_000) } }),
      () => ({ ...sampleCheckpoint(), state: { ...sampleCheckpoint().state, extra: nestedArrays(73_000) } }),
    ];
    for (const build of builds) {
      const coordinator = createAgentCheckpointCoordinator({
        storage,
        sessionId: 's1',
        build: build as () => AgentCheckpoint,
        visibility: null,
        onError: (error) => errors.push(error),
      });
      coordinator.schedule('terminal');
      await coordinator.flush();
      coordinator.stop();
    }
    expect(errors.map((error) => AgentCheckpointError.isInstance(error) && [error.code, error.runId])).toEqual([
      ['unserializable_input', 'r1'],
      ['unserializable_input', undefined],
    ]);
    expect(await loadAgentCheckpoint(storage, 's1')).toEqual(sampleCheckpoint());
  });

  it('turns what breaks past the shape check (the state validator out of stack) into invalid_checkpoint, keeping the cause', async () => {
    const overflow = new RangeError('Maximum call stack size exceeded');
    vi.resetModules();
    vi.doMock('../machines/agentStateSchema', async (importOriginal) => ({
      ...(await importOriginal<object>()),
      parseAgentState: () => {
        throw overflow;
      },
    }));
    try {
      const { loadAgentCheckpoint: load } = await import('./loadAgentCheckpoint');
      const error = await load(
        storageOf(() => JSON.parse(base)),
        's1',
      ).then(
        () => undefined,
        (failure: unknown) => failure,
      );
      expect(AgentCheckpointError.isInstance(error)).toBe(true);
      const { code, path, message, cause } = error as AgentCheckpointError;
      expect({ code, path, message, cause }).toEqual({
        code: 'invalid_checkpoint',
        path: '',
        message: 'Invalid checkpoint: it could not be read (RangeError)',
        cause: overflow,
      });
    } finally {
      vi.doUnmock('../machines/agentStateSchema');
      vi.resetModules();
    }
  });
});
