import { describe, expect, it, vi } from 'vitest';
import { getAgentEntityKey } from '../protocol/getAgentEntityKey';
import { sampleCheckpoint, sampleCommand, sampleStored } from '../tests/support/checkpoints';
import { AgentCheckpointError, type AgentCheckpointErrorCode } from './AgentCheckpointError';
import { DEFAULT_MAX_CHECKPOINT_SIZE } from './checkpointLimits';
import { parseAgentCheckpoint } from './parseAgentCheckpoint';

/** Marks hostile content: no error message may contain it. */
const HOSTILE = 'HOSTILE-CONTENT';

function refusal(value: unknown, options?: Parameters<typeof parseAgentCheckpoint>[1]): AgentCheckpointError {
  try {
    parseAgentCheckpoint(value, options);
  } catch (error) {
    if (!AgentCheckpointError.isInstance(error)) throw error;
    expect(error.message).not.toContain(HOSTILE);
    expect(error.message.length).toBeLessThan(1_000);
    return error;
  }
  throw new Error('the checkpoint was accepted');
}

function expectRefused(value: unknown, code: AgentCheckpointErrorCode, path: string): AgentCheckpointError {
  const error = refusal(value);
  expect({ code: error.code, path: error.path }).toEqual({ code, path });
  return error;
}

/** The sample, stored, with `change` applied to it. */
// biome-ignore lint/suspicious/noExplicitAny: the tests reach anywhere into stored JSON to corrupt it
function stored(change: (checkpoint: Record<string, any>) => void): Record<string, unknown> {
  const checkpoint = sampleStored();
  change(checkpoint);
  return checkpoint;
}

const messageKey = getAgentEntityKey('r1', 'm1');

describe('parseAgentCheckpoint: valid checkpoints', () => {
  it('reads back a JSON round trip of a saved checkpoint as it was', () => {
    const checkpoint = sampleCheckpoint();
    expect(parseAgentCheckpoint(JSON.parse(JSON.stringify(checkpoint)))).toEqual(checkpoint);
  });

  it('returns a copy that shares nothing with the value given', () => {
    const value = sampleStored();
    const parsed = parseAgentCheckpoint(value);
    (value.inputByRun as Record<string, { prompt: string }>).r1!.prompt = 'changed';
    (value.cursorByRun as Record<string, string>).r1 = 'changed';
    (value.pendingCommands as Array<{ commandId: string }>)[0]!.commandId = 'changed';
    (value.state as { runs: Record<string, { status: string }> }).runs.r1!.status = 'failed';
    expect(parsed).toEqual(sampleCheckpoint());
  });

  it('drops fields it does not know', () => {
    const parsed = parseAgentCheckpoint(
      stored((checkpoint) => {
        checkpoint.extra = { token: 'secret' };
      }),
    );
    expect(Object.keys(parsed)).not.toContain('extra');
  });

  it('keeps a run named constructor as data, polluting nothing; a run named __proto__ is refused', () => {
    const checkpoint = JSON.parse(
      JSON.stringify(sampleCheckpoint()).replace('"inputByRun":{', '"inputByRun":{"constructor":1,'),
    );
    checkpoint.state.runs = JSON.parse(
      `{"constructor":${JSON.stringify({ ...checkpoint.state.runs.r2, id: 'constructor' })},` +
        `${JSON.stringify(checkpoint.state.runs).slice(1)}`,
    );
    checkpoint.cursorByRun = JSON.parse('{"constructor":"cursor-1","r1":"cursor-7"}');
    const parsed = parseAgentCheckpoint(checkpoint);
    expect(Object.getOwnPropertyDescriptor(parsed.cursorByRun, 'constructor')?.value).toBe('cursor-1');
    expect(Object.getPrototypeOf(parsed.cursorByRun)).toBe(Object.prototype);
    expect(parsed.inputByRun.constructor).toBe(1);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    // JSON.parse makes `__proto__` an own field; a checkpoint never holds one (see checkpointProtoKeys.test.ts).
    checkpoint.cursorByRun = JSON.parse('{"__proto__":"cursor-1","r1":"cursor-7"}');
    expectRefused(checkpoint, 'invalid_checkpoint', 'cursorByRun.__proto__');
  });

  it('keeps constructor.prototype inside an input as plain data', () => {
    const checkpoint = stored((value) => {
      value.inputByRun.r1 = JSON.parse('{"constructor":{"prototype":{"polluted":true}}}');
    });
    const parsed = parseAgentCheckpoint(checkpoint);
    expect(parsed.inputByRun.r1).toEqual({ constructor: { prototype: { polluted: true } } });
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
});

describe('parseAgentCheckpoint: corrupted checkpoints', () => {
  it.each([
    ['a string', 'checkpoint'],
    ['an array', []],
    ['null', null],
    ['a number', 1],
  ])('refuses %s', (_, value) => {
    expectRefused(value, 'invalid_checkpoint', '');
  });

  it('refuses a missing or malformed field, naming it', () => {
    expectRefused(
      stored((checkpoint) => {
        delete checkpoint.sessionId;
      }),
      'invalid_checkpoint',
      'sessionId',
    );
    expectRefused(
      stored((checkpoint) => {
        checkpoint.savedAt = 'yesterday';
      }),
      'invalid_checkpoint',
      'savedAt',
    );
    expectRefused(
      stored((checkpoint) => {
        checkpoint.cursorByRun.r1 = 7;
      }),
      'invalid_checkpoint',
      'cursorByRun.r1',
    );
    expectRefused(
      stored((checkpoint) => {
        checkpoint.pendingCommands = {};
      }),
      'invalid_checkpoint',
      'pendingCommands',
    );
  });

  it('refuses a state that is not a valid AgentState, at state.<path>, without its value', () => {
    const error = expectRefused(
      stored((checkpoint) => {
        checkpoint.state.runs.r1.status = `${HOSTILE}`.repeat(1000);
      }),
      'invalid_checkpoint',
      'state.runs.r1.status',
    );
    expect(error.message).toMatch(/^Invalid checkpoint: state\.runs\.r1\.status: expected one of/);
    expectRefused(
      stored((checkpoint) => {
        delete checkpoint.state.order;
      }),
      'invalid_checkpoint',
      'state.order',
    );
  });

  it('refuses values JSON cannot hold, given as objects', () => {
    const cycle = sampleStored();
    (cycle.inputByRun as Record<string, unknown>).r1 = cycle;
    expectRefused(cycle, 'invalid_checkpoint', 'inputByRun.r1');
    const dated = stored((checkpoint) => {
      checkpoint.savedAt = new Date(0);
    });
    expect(refusal(dated).path).toBe('savedAt');
    const notFinite = stored((checkpoint) => {
      checkpoint.inputByRun.r1 = { temperature: Number.NaN };
    });
    expectRefused(notFinite, 'invalid_checkpoint', 'inputByRun.r1.temperature');
  });
});

describe('parseAgentCheckpoint: versions', () => {
  const versionTwo = () =>
    stored((checkpoint) => {
      checkpoint.schemaVersion = 2;
    });

  it('refuses another schemaVersion without migrate', () => {
    const error = expectRefused(versionTwo(), 'unsupported_version', 'schemaVersion');
    expect(error.message).toContain('schemaVersion is 2');
  });

  it('migrates another schemaVersion, then validates the result as version 1', () => {
    const migrate = vi.fn((old: unknown) => ({ ...(old as object), schemaVersion: 1 }));
    expect(parseAgentCheckpoint(versionTwo(), { migrate })).toEqual(sampleCheckpoint());
    expect(migrate).toHaveBeenCalledWith(expect.objectContaining({ schemaVersion: 2 }), 2);
  });

  it('refuses what migrate returns when it is not a valid version 1 checkpoint', () => {
    const stillTwo = refusal(versionTwo(), { migrate: (old) => old });
    expect({ code: stillTwo.code, path: stillTwo.path }).toEqual({
      code: 'unsupported_version',
      path: 'schemaVersion',
    });
    const broken = refusal(versionTwo(), { migrate: (old) => ({ ...(old as object), schemaVersion: 1, state: {} }) });
    expect({ code: broken.code, path: broken.path }).toEqual({ code: 'invalid_checkpoint', path: 'state.sessions' });
  });

  it('turns a migrate that throws into unsupported_version, with the cause', () => {
    const cause = new Error('cannot migrate');
    const error = refusal(versionTwo(), {
      migrate: () => {
        throw cause;
      },
    });
    expect(error.code).toBe('unsupported_version');
    expect(error.cause).toBe(cause);
  });

  it('refuses a schemaVersion that is not a whole number as malformed', () => {
    for (const schemaVersion of ['1', 1.5, -1, undefined]) {
      expectRefused(
        stored((checkpoint) => {
          checkpoint.schemaVersion = schemaVersion;
        }),
        'invalid_checkpoint',
        'schemaVersion',
      );
    }
  });

  it('refuses protocol versions this package does not read', () => {
    expectRefused(
      stored((checkpoint) => {
        checkpoint.eventProtocolVersion = '9.0';
      }),
      'unsupported_version',
      'eventProtocolVersion',
    );
    expectRefused(
      stored((checkpoint) => {
        checkpoint.commandProtocolVersion = '9.0';
      }),
      'unsupported_version',
      'commandProtocolVersion',
    );
  });
});

describe('parseAgentCheckpoint: hostile checkpoints', () => {
  it('refuses a __proto__ key at depth in an input', () => {
    const text = JSON.stringify(sampleCheckpoint()).replace(
      '"options":{',
      `"options":{"__proto__":{"polluted":"${HOSTILE}"},`,
    );
    expectRefused(JSON.parse(text), 'invalid_checkpoint', 'inputByRun.r1.options.__proto__');
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('refuses __proto__ or constructor keys naming runs that do not exist', () => {
    expectRefused(
      JSON.parse(JSON.stringify(sampleCheckpoint()).replace('"cursorByRun":{', '"cursorByRun":{"__proto__":"x",')),
      'invalid_checkpoint',
      'cursorByRun.__proto__',
    );
    expectRefused(
      JSON.parse(JSON.stringify(sampleCheckpoint()).replace('"inputByRun":{', '"inputByRun":{"constructor":{},')),
      'invalid_checkpoint',
      'inputByRun.constructor',
    );
  });

  it('refuses a 50 MiB string before reading it, naming where it is', () => {
    const huge = HOSTILE + 'x'.repeat(50 * 1024 * 1024);
    const error = expectRefused(
      stored((checkpoint) => {
        checkpoint.state.messages[messageKey].content = huge;
      }),
      'invalid_checkpoint',
      `state.messages.${messageKey}.content`,
    );
    expect(error.message).toContain(`larger than ${DEFAULT_MAX_CHECKPOINT_SIZE} characters`);
  });

  it('refuses a checkpoint over maxSize, and shows a huge key in the path and message only by its length', () => {
    const key = 'k'.repeat(1_500_000);
    const error = refusal(
      stored((checkpoint) => {
        checkpoint.inputByRun[key] = 1;
      }),
      { maxSize: 1024 * 1024 },
    );
    expect(error.code).toBe('invalid_checkpoint');
    expect(error.path).toBe('inputByRun.(1500000 characters)');
    expect(error.message).toBe(
      'Invalid checkpoint: inputByRun.(1500000 characters): makes the checkpoint larger than 1048576 characters',
    );
  });

  it('refuses deep nesting without overflowing the stack', () => {
    let deep: unknown = HOSTILE;
    for (let level = 0; level < 100_000; level += 1) deep = { d: deep };
    const error = refusal(
      stored((checkpoint) => {
        checkpoint.inputByRun.r1 = deep;
      }),
    );
    expect(error.code).toBe('invalid_checkpoint');
    expect(error.path).toMatch(/^inputByRun\.r1(\.d)+$/);
    expect(error.message).toContain('nested deeper than');
  });

  it('holds inputs to the nesting limit of event values', () => {
    let deep: unknown = 1;
    for (let level = 0; level < 104; level += 1) deep = { d: deep };
    const error = refusal(
      stored((checkpoint) => {
        checkpoint.inputByRun.r1 = deep;
      }),
    );
    expect(error.code).toBe('invalid_checkpoint');
    expect(error.path).toMatch(/^inputByRun\.r1(\.d)+$/);
  });

  it('refuses a run, a session or shared state of another session', () => {
    expectRefused(
      stored((checkpoint) => {
        checkpoint.state.runs.r9 = { ...checkpoint.state.runs.r2, id: 'r9', sessionId: HOSTILE };
      }),
      'invalid_checkpoint',
      'state.runs.r9.sessionId',
    );
    expectRefused(
      stored((checkpoint) => {
        checkpoint.state.sessions.s2 = { id: 's2', createdAt: 1, updatedAt: 1 };
      }),
      'invalid_checkpoint',
      'state.sessions.s2',
    );
    expectRefused(
      stored((checkpoint) => {
        checkpoint.state.state.s2 = { secret: HOSTILE };
      }),
      'invalid_checkpoint',
      'state.state.s2',
    );
  });

  it('refuses an input or a cursor of a run that is not in the state', () => {
    expectRefused(
      stored((checkpoint) => {
        checkpoint.cursorByRun.r404 = HOSTILE;
      }),
      'invalid_checkpoint',
      'cursorByRun.r404',
    );
    expectRefused(
      stored((checkpoint) => {
        checkpoint.inputByRun.r404 = { prompt: HOSTILE };
      }),
      'invalid_checkpoint',
      'inputByRun.r404',
    );
  });

  it('refuses a pending command of another session, of an unknown run, or malformed', () => {
    expectRefused(
      stored((checkpoint) => {
        checkpoint.pendingCommands = [sampleCommand({ sessionId: 's2' })];
      }),
      'invalid_checkpoint',
      'pendingCommands.0.sessionId',
    );
    expectRefused(
      stored((checkpoint) => {
        checkpoint.pendingCommands = [sampleCommand(), sampleCommand({ runId: 'r404' })];
      }),
      'invalid_checkpoint',
      'pendingCommands.1.runId',
    );
    expectRefused(
      stored((checkpoint) => {
        checkpoint.pendingCommands = [{ ...sampleCommand(), type: HOSTILE }];
      }),
      'invalid_checkpoint',
      'pendingCommands.0.type',
    );
    expectRefused(
      stored((checkpoint) => {
        checkpoint.pendingCommands = [
          {
            ...sampleCommand(),
            payload: JSON.parse(`{"approvalId":"a1","decision":"approved","data":{"__proto__":{}}}`),
          },
        ];
      }),
      'invalid_checkpoint',
      'pendingCommands.0.payload.data.__proto__',
    );
  });
});
