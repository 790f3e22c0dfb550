import { describe, expect, it } from 'vitest';
import { createAgentCommandFactory } from './createAgentCommandFactory';
import { createAgentEventFactory } from './createAgentEventFactory';
import { getAgentEntityKey } from './getAgentEntityKey';
import { isAgentCommand, isAgentEvent } from './parseAgentEvent';

describe('createAgentEventFactory', () => {
  it('creates valid events with strictly increasing sequences', () => {
    let clock = 100;
    const events = createAgentEventFactory({
      sessionId: 's1',
      runId: 'r1',
      initialSequence: 4,
      now: () => clock++,
      createEventId: (n) => `e${n}`,
    });
    const first = events.create('run.started', {});
    const second = events.create(
      'message.delta',
      { messageId: 'm1', delta: 'x' },
      { parentId: 'e5', meta: { provider: 'test' } },
    );
    expect(first).toEqual({
      protocolVersion: '0.1',
      type: 'run.started',
      eventId: 'e5',
      sessionId: 's1',
      runId: 'r1',
      sequence: 5,
      timestamp: 100,
      payload: {},
    });
    expect(second).toMatchObject({
      sequence: 6,
      eventId: 'e6',
      timestamp: 101,
      parentId: 'e5',
      meta: { provider: 'test' },
    });
    expect(events.getSequence()).toBe(6);
    expect(isAgentEvent(first) && isAgentEvent(second)).toBe(true);
  });

  it('gives distinct default ids to two factories of the same run', () => {
    const a = createAgentEventFactory({ sessionId: 's', runId: 'r' }).create('run.started', {});
    const b = createAgentEventFactory({ sessionId: 's', runId: 'r' }).create('run.started', {});
    expect(a.eventId).not.toBe(b.eventId);
  });

  it('makes default ids of a random prefix and the sequence in base 36, unique within the factory', () => {
    const events = createAgentEventFactory({ sessionId: 's', runId: 'r', initialSequence: 35 });
    const ids = [events.create('run.started', {}).eventId, events.create('run.completed', {}).eventId];
    expect(ids[0]).toMatch(/^[0-9a-z]{6}-10$/);
    expect(ids[1]).toBe(`${ids[0]?.slice(0, 6)}-11`);
  });

  it('refuses a negative initial sequence', () => {
    expect(() => createAgentEventFactory({ sessionId: 's', runId: 'r', initialSequence: -1 })).toThrow(RangeError);
  });
});

describe('createAgentCommandFactory', () => {
  it('binds one idempotency key to each new command and reuses it on resend', () => {
    let id = 0;
    let clock = 10;
    const commands = createAgentCommandFactory({
      sessionId: 's1',
      runId: 'r1',
      now: () => clock++,
      createCommandId: () => `c${++id}`,
    });
    const approve = commands.create('approval.resolve', { approvalId: 'a1', decision: 'approved' });
    expect(approve).toEqual({
      commandProtocol: 'agent-command',
      commandProtocolVersion: '0.1',
      type: 'approval.resolve',
      commandId: 'c1',
      idempotencyKey: 'idempotency:c1',
      sessionId: 's1',
      runId: 'r1',
      timestamp: 10,
      payload: { approvalId: 'a1', decision: 'approved' },
    });
    const again = commands.resend(approve);
    expect(again).toEqual({ ...approve, timestamp: 11 });
    const changed = commands.create('approval.resolve', { approvalId: 'a1', decision: 'rejected' });
    expect(changed.idempotencyKey).not.toBe(approve.idempotencyKey);
    expect(isAgentCommand(approve) && isAgentCommand(changed)).toBe(true);
  });
});

describe('getAgentEntityKey', () => {
  it('scopes ids by run without ambiguity', () => {
    expect(getAgentEntityKey('run-1', 'call-1')).toBe('run-1:call-1');
    expect(getAgentEntityKey('a:b', 'c')).not.toBe(getAgentEntityKey('a', 'b:c'));
  });
});
