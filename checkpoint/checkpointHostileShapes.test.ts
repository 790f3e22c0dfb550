import { describe, expect, it, vi } from 'vitest';
import { sampleCheckpoint } from '../tests/support/checkpoints';
import type { AgentCheckpointStorage } from './AgentCheckpoint';
import { AgentCheckpointError } from './AgentCheckpointError';
import { parseAgentCheckpointJson } from './checkpointJson';
import { loadAgentCheckpoint } from './loadAgentCheckpoint';

function storageOf(load: () => unknown): AgentCheckpointStorage {
  return { load: async () => load(), save: async () => undefined, remove: async () => undefined };
}

async function refusal(storage: AgentCheckpointStorage): Promise<AgentCheckpointError> {
  const error = await loadAgentCheckpoint(storage, 's1').then(
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

describe('loadAgentCheckpoint fails closed with AgentCheckpointError, whatever the stored value', () => {
  it.each(shapes)('%s', async (_, text) => {
    expect(text.length).toBeGreaterThan(100_000);
    const error = await refusal(storageOf(() => parseAgentCheckpointJson(text, 's1')));
    expect(error.code).toBe('invalid_checkpoint');
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
