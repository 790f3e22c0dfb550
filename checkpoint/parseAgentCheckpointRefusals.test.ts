import { describe, expect, it } from 'vitest';
import { createAgentStore } from '../machines/createAgentStore';
import { sampleCheckpoint, sampleStored } from '../tests/support/checkpoints';
import { runEvents } from '../tests/support/events';
import { AgentCheckpointError } from './AgentCheckpointError';
import { parseAgentCheckpoint } from './parseAgentCheckpoint';

function refusal(value: unknown, options?: Parameters<typeof parseAgentCheckpoint>[1]): AgentCheckpointError {
  try {
    parseAgentCheckpoint(value, options);
  } catch (error) {
    if (AgentCheckpointError.isInstance(error)) return error;
    throw error;
  }
  throw new Error('expected parseAgentCheckpoint to refuse the checkpoint');
}

/** A stored checkpoint of session s1 whose state holds activity p1 (a plan) of run r1. */
function storedWithActivity(): Record<string, unknown> & {
  state: { activities: Record<string, { sessionId: string }> };
} {
  const store = createAgentStore();
  const r1 = runEvents('r1');
  store.batch([
    r1.create('run.started', {}),
    r1.create('activity.snapshot', { activityId: 'p1', activityType: 'PLAN', content: { steps: ['a'] } }),
  ]);
  const state = store.getSnapshot();
  store.destroy();
  return JSON.parse(
    JSON.stringify({ ...sampleCheckpoint(), state, inputByRun: {}, cursorByRun: {}, pendingCommands: [] }),
  );
}

describe('parseAgentCheckpoint: what it refuses, and where', () => {
  it.each([
    ['a number', 7],
    ['null', null],
    ['an array', []],
  ])('refuses a state that is %s at the path state itself', (_, state) => {
    const error = refusal({ ...sampleStored(), state });
    expect({ code: error.code, path: error.path }).toEqual({ code: 'invalid_checkpoint', path: 'state' });
    expect(error.message).toMatch(/^Invalid checkpoint: state: /);
  });

  it('keeps an activity of its own session, and refuses one of another session at its sessionId', () => {
    const own = storedWithActivity();
    const parsed = parseAgentCheckpoint(own);
    expect(Object.values(parsed.state.activities).map((activity) => [activity.id, activity.sessionId])).toEqual([
      ['p1', 's1'],
    ]);

    const foreign = storedWithActivity();
    const [key] = Object.keys(foreign.state.activities);
    (foreign.state.activities[key as string] as { sessionId: string }).sessionId = 's2';
    const error = refusal(foreign);
    expect({ code: error.code, path: error.path }).toEqual({
      code: 'invalid_checkpoint',
      path: `state.activities.${key}.sessionId`,
    });
    expect(error.message).toContain('belongs to another session than the checkpoint');
  });

  it('fails closed when a value that passed the shape check throws a non-Error when read again, naming its type', () => {
    // What a storage hands back may be a proxy or hold getters: a value that answers the shape
    // check and throws at a later read is still this checkpoint's fault.
    let savedAtReads = 0;
    const hostile = new Proxy(sampleStored(), {
      get(target, key, receiver) {
        if (key === 'savedAt') {
          savedAtReads += 1;
          if (savedAtReads > 1) throw 'read once only';
        }
        return Reflect.get(target, key, receiver);
      },
    });
    const error = refusal(hostile);
    expect({ code: error.code, path: error.path, cause: error.cause }).toEqual({
      code: 'invalid_checkpoint',
      path: '',
      cause: 'read once only',
    });
    expect(error.message).toBe('Invalid checkpoint: it could not be read (string)');
  });

  it.each([
    ['null', null],
    ['an array', [{ schemaVersion: 1 }]],
    ['a string', '{"schemaVersion":1}'],
  ])('refuses a migrate that returns %s: it names no version', (_, migrated) => {
    const error = refusal({ ...sampleStored(), schemaVersion: 0 }, { migrate: () => migrated });
    expect({ code: error.code, path: error.path }).toEqual({ code: 'unsupported_version', path: 'schemaVersion' });
    expect(error.message).toBe('Unsupported checkpoint: migrate turned schemaVersion 0 into no version, not 1');
  });

  it('names the version a migrate returned when it is a number other than 1', () => {
    const error = refusal(
      { ...sampleStored(), schemaVersion: 0 },
      { migrate: (old) => ({ ...(old as object), schemaVersion: 2 }) },
    );
    expect(error.message).toBe('Unsupported checkpoint: migrate turned schemaVersion 0 into 2, not 1');
  });
});
