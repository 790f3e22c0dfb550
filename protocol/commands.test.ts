import { describe, expect, it, vi } from 'vitest';
import { AGENT_COMMAND_TYPES, type AgentCommandType } from './commandSchemas';
import { AGENT_COMMAND_PROTOCOL, AGENT_COMMAND_PROTOCOL_VERSION } from './constants';
import { createAgentCommandFactory } from './createAgentCommandFactory';
import { isAgentCommand, isAgentCommandEnvelope, parseAgentCommand } from './parseAgentEvent';

/** A well-formed envelope around any type and payload. */
function envelope(type: string, payload: unknown, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    commandProtocol: 'agent-command',
    commandProtocolVersion: '0.1',
    type,
    commandId: 'c1',
    idempotencyKey: 'k1',
    sessionId: 's1',
    runId: 'r1',
    timestamp: 1_000,
    payload,
    ...extra,
  };
}

/** The same value with one field removed. */
function without(value: Record<string, unknown>, field: string): Record<string, unknown> {
  const { [field]: _removed, ...rest } = value;
  return rest;
}

describe('isAgentCommandEnvelope (seed §7.5)', () => {
  it('accepts a well-formed envelope of a type it does not know, with an object payload', () => {
    expect(isAgentCommandEnvelope(envelope('workflow.pause', { stepId: 'x', anything: [1, 2] }))).toBe(true);
    expect(isAgentCommandEnvelope(envelope('workflow.pause', {}, { meta: { source: 'button' } }))).toBe(true);
  });

  it('accepts every valid command, whose envelope it checks without its payload', () => {
    expect(isAgentCommandEnvelope(envelope('approval.resolve', { approvalId: 'a1', decision: 'approved' }))).toBe(true);
    // The payload is the typed check's business: an envelope check does not read it.
    expect(isAgentCommandEnvelope(envelope('approval.resolve', { approvalId: '', decision: 'maybe' }))).toBe(true);
  });

  it.each(['commandId', 'idempotencyKey', 'sessionId', 'runId', 'type'])('refuses a missing or empty %s', (field) => {
    const valid = envelope('workflow.pause', {});
    expect(isAgentCommandEnvelope(without(valid, field))).toBe(false);
    expect(isAgentCommandEnvelope({ ...valid, [field]: '' })).toBe(false);
    expect(isAgentCommandEnvelope({ ...valid, [field]: 7 })).toBe(false);
  });

  it('refuses another protocol or another version of this one', () => {
    const valid = envelope('workflow.pause', {});
    expect(isAgentCommandEnvelope({ ...valid, commandProtocol: 'agent-event' })).toBe(false);
    expect(isAgentCommandEnvelope({ ...valid, commandProtocolVersion: '0.2' })).toBe(false);
    expect(isAgentCommandEnvelope({ ...valid, commandProtocolVersion: 0.1 })).toBe(false);
    expect(isAgentCommandEnvelope(without(valid, 'commandProtocolVersion'))).toBe(false);
    // The event protocol's version field is not the command protocol's.
    expect(isAgentCommandEnvelope({ ...without(valid, 'commandProtocolVersion'), protocolVersion: '0.1' })).toBe(false);
  });

  it.each([Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, Number.NaN, '1000', undefined])(
    'refuses the timestamp %s',
    (timestamp) => {
      expect(isAgentCommandEnvelope({ ...envelope('workflow.pause', {}), timestamp })).toBe(false);
    },
  );

  it('refuses a payload that is not an object', () => {
    for (const payload of [[], ['a1'], null, 'a1', 3, undefined]) {
      expect(isAgentCommandEnvelope(envelope('workflow.pause', payload))).toBe(false);
    }
  });

  it('refuses meta that is not a plain object', () => {
    for (const meta of [[], [{ a: 1 }], 'x', 1, null, new Date(0), new Map([['a', 1]])]) {
      expect(isAgentCommandEnvelope(envelope('workflow.pause', {}, { meta }))).toBe(false);
    }
    expect(isAgentCommandEnvelope(envelope('workflow.pause', {}, { meta: {} }))).toBe(true);
  });

  it('refuses what is not an object at all', () => {
    for (const value of [null, undefined, 'approval.resolve', 1, [], [envelope('workflow.pause', {})]]) {
      expect(isAgentCommandEnvelope(value)).toBe(false);
    }
  });
});

/** For each command type: valid payloads, invalid ones, and one with an unknown (misspelt) field. */
const payloadCases: Record<AgentCommandType, { valid: unknown[]; invalid: unknown[]; unknownField: unknown }> = {
  'approval.resolve': {
    valid: [
      { approvalId: 'a1', decision: 'approved' },
      { approvalId: 'a1', decision: 'rejected', expectedVersion: 2 },
      { approvalId: 'a1', decision: 'modified', data: { query: 'edited' }, expectedVersion: 'v3' },
    ],
    invalid: [
      { approvalId: 'a1', decision: 'maybe' },
      { approvalId: 'a1', decision: 'expired' },
      { approvalId: 'a1' },
      { approvalId: '', decision: 'approved' },
      { decision: 'approved' },
      { approvalId: 'a1', decision: 'approved', expectedVersion: true },
      { approvalId: 'a1', decision: 'approved', expectedVersion: { v: 1 } },
      { approvalId: 'a1', decision: 'modified', data: new Date(0) },
    ],
    unknownField: { approvalId: 'a1', decison: 'approved', decision: 'approved' },
  },
  'tool.retry': {
    valid: [{ toolCallId: 't1' }],
    invalid: [{}, { toolCallId: '' }, { toolCallId: 7 }],
    unknownField: { toolCallId: 't1', targetId: 't1' },
  },
  'run.cancel': {
    valid: [{}, { reason: 'user' }],
    invalid: [{ reason: 5 }, { reason: null }],
    unknownField: { reason: 'user', force: true },
  },
  'tool.submit_result': {
    valid: [
      { toolCallId: 't1' },
      { toolCallId: 't1', result: { hits: 3 } },
      { toolCallId: 't1', error: { message: 'denied by the user', code: 'user_denied' } },
    ],
    invalid: [
      { result: 1 },
      { toolCallId: '', result: 1 },
      { toolCallId: 't1', error: 'failed' },
      { toolCallId: 't1', error: { code: 'no_message' } },
      { toolCallId: 't1', result: () => 1 },
    ],
    unknownField: { toolCallId: 't1', output: { hits: 3 } },
  },
};

describe('isAgentCommand (seed §7.2, §7.5, §20.1)', () => {
  it('has cases for every command type', () => {
    expect(Object.keys(payloadCases).sort()).toEqual([...AGENT_COMMAND_TYPES].sort());
  });

  describe.each(AGENT_COMMAND_TYPES)('%s', (type) => {
    const cases = payloadCases[type];

    it('accepts its valid payloads', () => {
      for (const payload of cases.valid) {
        expect(isAgentCommand(envelope(type, payload)), JSON.stringify(payload)).toBe(true);
      }
    });

    it('refuses its invalid payloads', () => {
      for (const payload of cases.invalid) {
        expect(isAgentCommand(envelope(type, payload)), String(JSON.stringify(payload))).toBe(false);
      }
    });

    it('refuses a payload with an unknown field rather than dropping the field', () => {
      expect(isAgentCommand(envelope(type, cases.unknownField))).toBe(false);
      const result = parseAgentCommand(envelope(type, cases.unknownField));
      expect(result.success).toBe(false);
      if (!result.success) expect(result.error.path).toMatch(/^payload/);
    });

    it('refuses an envelope with an unknown field', () => {
      expect(isAgentCommand(envelope(type, cases.valid[0], { targetId: 'x' }))).toBe(false);
    });
  });

  it("refuses a payload that is another type's (type and payload must agree)", () => {
    expect(isAgentCommand(envelope('tool.retry', { approvalId: 'a1', decision: 'approved' }))).toBe(false);
    expect(isAgentCommand(envelope('approval.resolve', { toolCallId: 't1' }))).toBe(false);
    expect(isAgentCommand(envelope('run.cancel', { toolCallId: 't1' }))).toBe(false);
    expect(isAgentCommand(envelope('tool.retry', { toolCallId: 't1', result: 1 }))).toBe(false);
  });

  it('refuses a command type that protocol 0.1 does not have, though its envelope is fine', () => {
    const command = envelope('approval.approve', { approvalId: 'a1' });
    expect(isAgentCommandEnvelope(command)).toBe(true);
    expect(isAgentCommand(command)).toBe(false);
  });

  it('refuses a command of another protocol version (seed §20.1)', () => {
    const command = envelope('run.cancel', {}, { commandProtocolVersion: '1.0' });
    expect(isAgentCommand(command)).toBe(false);
  });

  it('checks the envelope as isAgentCommandEnvelope does', () => {
    const valid = envelope('tool.retry', { toolCallId: 't1' });
    expect(isAgentCommand(valid)).toBe(true);
    for (const invalid of [
      { ...valid, commandId: '' },
      { ...valid, idempotencyKey: '' },
      { ...valid, sessionId: '' },
      { ...valid, runId: '' },
      { ...valid, timestamp: Number.POSITIVE_INFINITY },
      { ...valid, meta: [] },
      { ...valid, commandProtocol: 'agent-event' },
    ]) {
      expect(isAgentCommand(invalid)).toBe(false);
    }
  });

  it('requires meta and data to be plain JSON', () => {
    expect(isAgentCommand(envelope('run.cancel', {}, { meta: { source: 'button', at: [1, 2] } }))).toBe(true);
    expect(isAgentCommand(envelope('run.cancel', {}, { meta: { at: new Date(0) } }))).toBe(false);
    expect(
      isAgentCommand(envelope('approval.resolve', { approvalId: 'a1', decision: 'modified', data: { at: new Map() } })),
    ).toBe(false);
  });
});

describe('createAgentCommandFactory (seed §7.4)', () => {
  function injected() {
    let id = 0;
    let clock = 100;
    const createIdempotencyKey = vi.fn((commandId: string) => `key-of-${commandId}`);
    const commands = createAgentCommandFactory({
      sessionId: 's1',
      runId: 'r1',
      now: () => clock++,
      createCommandId: () => `c${++id}`,
      createIdempotencyKey,
    });
    return { commands, createIdempotencyKey };
  }

  it('uses the injected clock, command ids and idempotency keys, and creates valid commands', () => {
    const { commands, createIdempotencyKey } = injected();
    const retry = commands.create('tool.retry', { toolCallId: 't1' });
    expect(retry).toEqual({
      commandProtocol: AGENT_COMMAND_PROTOCOL,
      commandProtocolVersion: AGENT_COMMAND_PROTOCOL_VERSION,
      type: 'tool.retry',
      commandId: 'c1',
      idempotencyKey: 'key-of-c1',
      sessionId: 's1',
      runId: 'r1',
      timestamp: 100,
      payload: { toolCallId: 't1' },
    });
    expect(createIdempotencyKey).toHaveBeenCalledExactlyOnceWith('c1');
    expect(isAgentCommand(retry)).toBe(true);
    const cancel = commands.create('run.cancel', { reason: 'user' }, { meta: { source: 'button' } });
    expect(cancel).toMatchObject({ commandId: 'c2', idempotencyKey: 'key-of-c2', timestamp: 101 });
    expect(cancel.meta).toEqual({ source: 'button' });
    expect(isAgentCommand(cancel)).toBe(true);
    expect('meta' in retry).toBe(false);
  });

  it('resends the same command: same id and key, a new timestamp, nothing else changed', () => {
    const { commands, createIdempotencyKey } = injected();
    const approve = commands.create('approval.resolve', { approvalId: 'a1', decision: 'approved' });
    const again = commands.resend(approve);
    expect(again).toEqual({ ...approve, timestamp: 101 });
    expect(again.commandId).toBe(approve.commandId);
    expect(again.idempotencyKey).toBe(approve.idempotencyKey);
    expect(again).not.toBe(approve);
    expect(approve.timestamp).toBe(100);
    // No new key was made for the resend.
    expect(createIdempotencyKey).toHaveBeenCalledTimes(1);
    expect(isAgentCommand(again)).toBe(true);
  });

  it('makes a changed decision or data a new command, with a new id and key', () => {
    const { commands } = injected();
    const approve = commands.create('approval.resolve', { approvalId: 'a1', decision: 'approved' });
    const reject = commands.create('approval.resolve', { approvalId: 'a1', decision: 'rejected' });
    const modify = commands.create('approval.resolve', { approvalId: 'a1', decision: 'modified', data: { q: 1 } });
    const modifyAgain = commands.create('approval.resolve', { approvalId: 'a1', decision: 'modified', data: { q: 2 } });
    const all = [approve, reject, modify, modifyAgain];
    expect(new Set(all.map((command) => command.commandId)).size).toBe(4);
    expect(new Set(all.map((command) => command.idempotencyKey)).size).toBe(4);
  });

  it('binds a default idempotency key to its command id without being equal to it', () => {
    const ids = () => {
      let id = 0;
      return () => `c${++id}`;
    };
    const first = createAgentCommandFactory({ sessionId: 's1', runId: 'r1', createCommandId: ids() });
    const second = createAgentCommandFactory({ sessionId: 's1', runId: 'r1', createCommandId: ids() });
    const one = first.create('tool.retry', { toolCallId: 't1' });
    const two = first.create('tool.retry', { toolCallId: 't1' });
    expect(one.idempotencyKey).not.toBe(one.commandId);
    expect(two.idempotencyKey).not.toBe(one.idempotencyKey);
    // One key per command id: the same id always gets the same key.
    expect(second.create('run.cancel', {}).idempotencyKey).toBe(one.idempotencyKey);
    expect(isAgentCommand(one)).toBe(true);
  });

  it('gives commands unique random ids and keys by default, bound one to one', () => {
    const commands = createAgentCommandFactory({ sessionId: 's1', runId: 'r1' });
    const created = Array.from({ length: 200 }, () => commands.create('run.cancel', {}));
    const ids = new Set(created.map((command) => command.commandId));
    const keys = new Set(created.map((command) => command.idempotencyKey));
    expect(ids.size).toBe(200);
    expect(keys.size).toBe(200);
    for (const command of created) {
      expect(command.commandId).not.toBe('');
      expect(command.idempotencyKey).not.toBe(command.commandId);
      expect(ids.has(command.idempotencyKey)).toBe(false);
    }
  });
});
