import { afterEach, describe, expect, it, vi } from 'vitest';
import { createAgentCommandFactory } from '../protocol/createAgentCommandFactory';
import type { AgentEvent } from '../protocol/eventSchemas';
import { describeAgentEventLogContract } from '../tests/support/eventLogContract';
import { runEvents } from '../tests/support/events';
import type { AgentEventLog, AgentHostSignal } from './AgentEventLog';
import { AgentEventLogError } from './AgentEventLogError';
import { createMemoryEventLog, type MemoryEventLog } from './createMemoryEventLog';

describeAgentEventLogContract(
  'memory',
  async () => {
    const log = createMemoryEventLog({ maxEntriesPerSession: 20, maxBytesPerSession: 40_000 });
    // One process shares one memory log: a second host instance would get this same object.
    return { log, peer: async () => log, cleanup: () => log.close() };
  },
  { maxEntriesPerSession: 20, maxBytesPerSession: 40_000 },
);

/** `count` message deltas of one run; the sequence of each is its position from 1. */
function deltas(sessionId: string, count: number, initialSequence = 0): AgentEvent[] {
  const events = runEvents('r1', sessionId, initialSequence);
  return Array.from({ length: count }, () => events.create('message.delta', { messageId: 'm1', delta: 'x' }));
}

async function rejectionCode(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (error) {
    if (AgentEventLogError.isInstance(error)) return error.code;
    throw error;
  }
  throw new Error('it resolved');
}

function cancelSignal(): AgentHostSignal {
  const commands = createAgentCommandFactory({ sessionId: 's1', runId: 'r1' });
  return { type: 'command', command: commands.create('run.cancel', {}) };
}

describe('createMemoryEventLog', () => {
  const opened: AgentEventLog[] = [];
  function open(options?: Parameters<typeof createMemoryEventLog>[0]): MemoryEventLog {
    const log = createMemoryEventLog(options);
    opened.push(log);
    return log;
  }
  /** A log on a clock the test moves. */
  function openWithClock(options: Parameters<typeof createMemoryEventLog>[0] = {}) {
    const clock = { now: 0 };
    return { log: open({ ...options, now: () => clock.now }), clock };
  }

  afterEach(async () => {
    vi.useRealTimers();
    for (const log of opened.splice(0)) await log.close();
  });

  describe('cursors', () => {
    it('are decimal integers from "1", one apart within a session', async () => {
      const log = open();
      expect(await log.append('s1', deltas('s1', 3))).toEqual(['1', '2', '3']);
      expect(await log.append('s1', deltas('s1', 2, 3))).toEqual(['4', '5']);
    });

    it('are never given again: trimming does not restart them', async () => {
      const log = open({ maxEntriesPerSession: 3 });
      await log.append('s1', deltas('s1', 5));
      expect(await log.append('s1', deltas('s1', 1, 5))).toEqual(['6']);
      expect((await log.read('s1', { limit: 10 })).map((entry) => entry.cursor)).toEqual(['4', '5', '6']);
    });

    it('a session dropped and started again gets cursors above all earlier ones; its old cursors are cursor_expired', async () => {
      const { log, clock } = openWithClock({ sessionTtlMs: 1_000 });
      await log.append('s1', deltas('s1', 3));
      clock.now = 1_000;
      expect(await log.lastCursor('s1')).toBeUndefined();
      expect(await log.append('s1', deltas('s1', 2))).toEqual(['4', '5']);
      expect(await rejectionCode(log.read('s1', { after: '3', limit: 10 }))).toBe('cursor_expired');
      expect(await rejectionCode(log.read('s1', { after: '1', limit: 10 }))).toBe('cursor_expired');
      expect((await log.read('s1', { after: '4', limit: 10 })).map((entry) => entry.cursor)).toEqual(['5']);
    });

    it('rejects anything but /^[1-9][0-9]{0,15}$/ as invalid_cursor', async () => {
      const log = open();
      await log.append('s1', deltas('s1', 2));
      for (const after of ['0', '01', '1.0', '1e3', '+1', '12345678901234567', '2 ']) {
        expect(await rejectionCode(log.read('s1', { after, limit: 10 })), after).toBe('invalid_cursor');
      }
      expect(await rejectionCode(log.read('s1', { after: '3', limit: 10 }))).toBe('invalid_cursor');
      expect(await rejectionCode(log.read('s1', { after: '9999999999999999', limit: 10 }))).toBe('invalid_cursor');
    });
  });

  describe('the bound', () => {
    it('an append larger than the bound keeps its newest events', async () => {
      const log = open({ maxEntriesPerSession: 4 });
      const events = deltas('s1', 10);
      await log.append('s1', events);
      expect(await log.read('s1', { limit: 100 })).toEqual(
        events.slice(6).map((event, index) => ({ cursor: String(index + 7), event })),
      );
    });

    it('reads by arithmetic on the cursor, through trimming and compaction, in a session of 100 000 entries', async () => {
      const log = open({ maxEntriesPerSession: 30_000 });
      const events = deltas('s1', 100_000);
      for (let start = 0; start < events.length; start += 250) {
        await log.append('s1', events.slice(start, start + 250));
      }
      expect(await log.lastCursor('s1')).toBe('100000');
      for (const after of [70_000, 85_432, 99_990]) {
        const entries = await log.read('s1', { after: String(after), limit: 5 });
        expect(entries.map((entry) => entry.cursor)).toEqual([1, 2, 3, 4, 5].map((step) => String(after + step)));
        expect(entries.map((entry) => entry.event)).toEqual(events.slice(after, after + 5));
      }
      expect((await log.read('s1', { limit: 2 })).map((entry) => entry.event.sequence)).toEqual([70_001, 70_002]);
      expect(await rejectionCode(log.read('s1', { after: '69999', limit: 5 }))).toBe('cursor_expired');
      expect(await log.read('s1', { after: '100000', limit: 5 })).toEqual([]);
    });

    it('a session of 100 000 untrimmed entries reads the right entries after a cursor near the end', async () => {
      const log = open({ maxEntriesPerSession: 200_000 });
      const events = deltas('s1', 100_000);
      await log.append('s1', events);
      const entries = await log.read('s1', { after: '99997', limit: 10 });
      expect(entries).toEqual([
        { cursor: '99998', event: events[99_997] },
        { cursor: '99999', event: events[99_998] },
        { cursor: '100000', event: events[99_999] },
      ]);
    });
  });

  describe('sessions', () => {
    it('beyond maxSessions, the least recently appended session is dropped with all it holds', async () => {
      const log = open({ maxSessions: 2 });
      const [cursorA] = await log.append('a', deltas('a', 1));
      const [cursorB] = await log.append('b', deltas('b', 1));
      await log.saveSnapshot('b', { state: { b: true }, cursor: cursorB! });
      await log.claimRun('b', 'r1', 'host-a', 60_000);
      await log.append('a', deltas('a', 1, 1));
      await log.append('c', deltas('c', 1));
      expect(await log.lastCursor('b')).toBeUndefined();
      expect(await log.read('b', { limit: 10 })).toEqual([]);
      expect(await rejectionCode(log.read('b', { after: cursorB, limit: 10 }))).toBe('cursor_expired');
      expect(await log.loadSnapshot('b')).toBeUndefined();
      expect(await log.runOwner('b', 'r1')).toEqual({ state: 'unowned' });
      expect(await log.read('a', { after: cursorA, limit: 10 })).toHaveLength(1);
      expect(await log.lastCursor('c')).toBeDefined();
    });

    it('a session with no append for sessionTtlMs is dropped; an append keeps it', async () => {
      const { log, clock } = openWithClock({ sessionTtlMs: 1_000 });
      const [cursor] = await log.append('s1', deltas('s1', 1));
      await log.claimRun('s1', 'r1', 'host-a', 60_000);
      await log.releaseRun('s1', 'r1', 'host-a');
      clock.now = 600;
      await log.append('s2', deltas('s2', 1));
      clock.now = 999;
      expect(await log.lastCursor('s1')).toBe(cursor);
      expect(await log.runOwner('s1', 'r1')).toEqual({ state: 'ended' });
      clock.now = 1_000;
      expect(await log.lastCursor('s1')).toBeUndefined();
      expect(await rejectionCode(log.read('s1', { after: cursor, limit: 10 }))).toBe('cursor_expired');
      // Ended runs go with their session.
      expect(await log.runOwner('s1', 'r1')).toEqual({ state: 'unowned' });
      expect(await log.lastCursor('s2')).toBeDefined();
      await log.append('s2', deltas('s2', 1, 1));
      clock.now = 1_999;
      expect(await log.lastCursor('s2')).toBeDefined();
      clock.now = 2_000;
      expect(await log.lastCursor('s2')).toBeUndefined();
    });

    it('a held lease being renewed keeps its session', async () => {
      const { log, clock } = openWithClock({ sessionTtlMs: 1_000 });
      await log.append('s1', deltas('s1', 1));
      await log.claimRun('s1', 'r1', 'host-a', 800);
      clock.now = 700;
      expect(await log.renewRun('s1', 'r1', 'host-a', 800)).toBe(true);
      clock.now = 1_400;
      expect(await log.lastCursor('s1')).toBe('1');
      expect(await log.runOwner('s1', 'r1')).toEqual({ state: 'owned', owner: 'host-a' });
    });
  });

  describe('leases and command records on the injected clock', () => {
    it('a lease is held until its TTL has passed', async () => {
      const { log, clock } = openWithClock();
      await log.claimRun('s1', 'r1', 'host-a', 100);
      clock.now = 99;
      expect(await log.runOwner('s1', 'r1')).toEqual({ state: 'owned', owner: 'host-a' });
      clock.now = 100;
      expect(await log.runOwner('s1', 'r1')).toEqual({ state: 'unowned' });
    });

    it('a command record lives its TTL, counted again from the settle', async () => {
      const { log, clock } = openWithClock();
      await log.claimCommand('s1', 'k1', 'f1', 100);
      clock.now = 50;
      await log.settleCommand('s1', 'k1', { fingerprint: 'f1', outcome: { status: 'accepted', events: [] } }, 100);
      clock.now = 149;
      expect(await log.claimCommand('s1', 'k1', 'f1', 100)).toMatchObject({ status: 'settled', fingerprint: 'f1' });
      clock.now = 150;
      expect(await log.claimCommand('s1', 'k1', 'f2', 100)).toBeUndefined();
    });

    it('a settle whose pending record expired is kept under the fingerprint it names', async () => {
      const log = open();
      await log.settleCommand('s1', 'k1', { fingerprint: 'f1', outcome: { status: 'accepted', events: [] } }, 1_000);
      expect(await log.claimCommand('s1', 'k1', 'f1', 1_000)).toEqual({
        status: 'settled',
        fingerprint: 'f1',
        outcome: { status: 'accepted', events: [] },
      });
    });
  });

  describe('snapshots', () => {
    it('compares cursors as integers ("10" is newer than "9") and hands out copies', async () => {
      const log = open();
      await log.append('s1', deltas('s1', 12));
      const state = { items: ['a'] };
      await log.saveSnapshot('s1', { state, cursor: '10' });
      await log.saveSnapshot('s1', { state: { items: [] }, cursor: '9' });
      state.items.push('changed later');
      const loaded = await log.loadSnapshot('s1');
      expect(loaded).toEqual({ state: { items: ['a'] }, cursor: '10' });
      (loaded!.state as { items: string[] }).items.push('changed by a reader');
      expect(await log.loadSnapshot('s1')).toEqual({ state: { items: ['a'] }, cursor: '10' });
    });

    it('refuses a malformed snapshot cursor', async () => {
      const log = open();
      expect(await rejectionCode(log.saveSnapshot('s1', { state: {}, cursor: 'x' }))).toBe('invalid_cursor');
    });
  });

  describe('signals', () => {
    it('are delivered after `signal` returns, never inside its caller', async () => {
      const log = open();
      const received: AgentHostSignal[] = [];
      await log.listen('host-a', (signal) => received.push(signal));
      const signal = cancelSignal();
      const sending = log.signal('host-a', signal);
      expect(received).toEqual([]);
      await sending;
      await Promise.resolve();
      expect(received).toEqual([signal]);
    });

    it('a handler that throws does not keep the others from the signal', async () => {
      const log = open();
      const received: string[] = [];
      await log.listen('host-a', () => {
        throw new Error('handler failed');
      });
      await log.listen('host-a', () => received.push('second'));
      await log.signal('host-a', cancelSignal());
      await new Promise((resolve) => setTimeout(resolve, 0));
      expect(received).toEqual(['second']);
    });

    it('a handler stopped before delivery does not get a signal already sent', async () => {
      const log = open();
      const received: AgentHostSignal[] = [];
      const stop = await log.listen('host-a', (signal) => received.push(signal));
      const sending = log.signal('host-a', cancelSignal());
      await stop();
      await sending;
      await new Promise((resolve) => setTimeout(resolve, 0));
      expect(received).toEqual([]);
    });
  });

  describe('waiters leave nothing behind', () => {
    it('follow clears its timer and its abort listener when it resolves', async () => {
      vi.useFakeTimers();
      const log = open();
      const controller = new AbortController();
      const add = vi.spyOn(controller.signal, 'addEventListener');
      const remove = vi.spyOn(controller.signal, 'removeEventListener');
      const following = log.follow('s1', { limit: 10, timeoutMs: 60_000, signal: controller.signal });
      await vi.advanceTimersByTimeAsync(0);
      expect(vi.getTimerCount()).toBe(1);
      const [cursor] = await log.append('s1', deltas('s1', 1));
      expect((await following).map((entry) => entry.cursor)).toEqual([cursor]);
      expect(vi.getTimerCount()).toBe(0);
      expect(add).toHaveBeenCalledWith('abort', expect.any(Function), { once: true });
      expect(remove).toHaveBeenCalledWith('abort', add.mock.calls[0]![1]);
    });

    it('a follow woken by an append that trimmed past its cursor rejects with cursor_expired', async () => {
      const log = open({ maxEntriesPerSession: 2 });
      const [cursor] = await log.append('s1', deltas('s1', 1));
      const following = log.follow('s1', { after: cursor, limit: 10, timeoutMs: 1_000 });
      await log.append('s1', deltas('s1', 3, 1));
      expect(await rejectionCode(following)).toBe('cursor_expired');
    });

    it('close resolves every waiter and clears every timer', async () => {
      vi.useFakeTimers();
      const log = createMemoryEventLog();
      const waits = [
        log.follow('s1', { limit: 10, timeoutMs: 60_000 }),
        log.follow('s2', { limit: 10, timeoutMs: 60_000 }),
        log.awaitCommand('s1', 'k1', { timeoutMs: 60_000 }),
      ];
      await vi.advanceTimersByTimeAsync(0);
      expect(vi.getTimerCount()).toBe(3);
      await log.close();
      expect(await Promise.all(waits)).toEqual([[], [], undefined]);
      expect(vi.getTimerCount()).toBe(0);
    });
  });

  describe('bytes', () => {
    /** Runs each starting with a `promptBytes` prompt, as the big-prompt attack sent them. */
    function bigRuns(sessionId: string, runs: number, promptBytes: number): AgentEvent[] {
      return Array.from({ length: runs }, (_, index) => {
        const events = runEvents(`r${index}`, sessionId);
        return events.create('run.started', { input: { prompt: 'p'.repeat(promptBytes) } });
      });
    }
    const bytesOf = (events: readonly AgentEvent[]) =>
      events.reduce((sum, event) => sum + JSON.stringify(event).length, 0);

    it('60 runs with 900 KB prompts: the session keeps at most maxBytesPerSession, and a reader behind it gets cursor_expired', async () => {
      const log = createMemoryEventLog({ maxBytesPerSession: 4 * 1024 * 1024 });
      opened.push(log);
      const runs = bigRuns('s1', 60, 900_000);
      const cursors: string[] = [];
      for (const event of runs) cursors.push(...(await log.append('s1', [event])));
      const kept = await log.read('s1', { limit: 100 });
      expect(kept.length).toBe(4);
      expect(kept.map((entry) => entry.cursor)).toEqual(cursors.slice(-4));
      expect(log.retainedBytes('s1')).toBe(bytesOf(runs.slice(-4)));
      expect(log.retainedBytes('s1')).toBeLessThanOrEqual(4 * 1024 * 1024);
      expect(log.retainedBytes()).toBe(log.retainedBytes('s1'));
      expect(await rejectionCode(log.read('s1', { after: cursors[0], limit: 10 }))).toBe('cursor_expired');
      expect(await log.read('s1', { after: cursors[55], limit: 10 })).toHaveLength(4);
    });

    it('an entry larger than the bound is kept alone: the newest entry is never trimmed', async () => {
      const log = open({ maxBytesPerSession: 1_000 });
      const [event] = bigRuns('s1', 1, 5_000);
      await log.append('s1', deltas('s1', 3));
      const [cursor] = await log.append('s1', [event!]);
      expect(await log.read('s1', { limit: 10 })).toEqual([{ cursor, event }]);
    });

    it('the whole log keeps at most maxBytes: sessions are dropped, readers behind them get cursor_expired', async () => {
      const log = createMemoryEventLog({ maxBytes: 3_000_000, maxBytesPerSession: 2_000_000 });
      opened.push(log);
      const cursors: string[] = [];
      for (let index = 0; index < 10; index += 1) {
        cursors.push(...(await log.append(`s${index}`, bigRuns(`s${index}`, 1, 900_000))));
      }
      expect(log.retainedBytes()).toBeLessThanOrEqual(3_000_000);
      expect(log.retainedBytes()).toBeGreaterThan(2_000_000);
      expect(await rejectionCode(log.read('s0', { after: cursors[0], limit: 10 }))).toBe('cursor_expired');
      expect(await log.read('s9', { limit: 10 })).toHaveLength(1);
    });

    it('a snapshot larger than half of maxBytesPerSession is refused with too_large; the one before it stays', async () => {
      const log = open({ maxBytesPerSession: 10_000 });
      const [cursor] = await log.append('s1', deltas('s1', 1));
      await log.saveSnapshot('s1', { state: { small: true }, cursor: cursor! });
      expect(await rejectionCode(log.saveSnapshot('s1', { state: { big: 'b'.repeat(6_000) }, cursor: cursor! }))).toBe(
        'too_large',
      );
      expect(await log.loadSnapshot('s1')).toEqual({ state: { small: true }, cursor });
    });

    it('counts snapshots, leases and command records; trims entries to make room for them', async () => {
      const log = open({ maxBytesPerSession: 20_000 });
      const events = deltas('s1', 100);
      await log.append('s1', events);
      const entries = log.retainedBytes('s1');
      expect(entries).toBe(bytesOf(events));
      await log.claimRun('s1', 'r1', 'host-a', 60_000);
      await log.claimCommand('s1', 'k1', 'f1', 60_000);
      expect(log.retainedBytes('s1')).toBeGreaterThan(entries);
      await log.saveSnapshot('s1', { state: { text: 's'.repeat(9_000) }, cursor: '100' });
      expect(log.retainedBytes('s1')).toBeLessThanOrEqual(20_000);
      expect((await log.read('s1', { limit: 1_000 })).length).toBeLessThan(100);
      expect(await log.runOwner('s1', 'r1')).toEqual({ state: 'owned', owner: 'host-a' });
    });

    it('reads in pages of at most maxBytes (at least one entry)', async () => {
      const log = open();
      const runs = bigRuns('s1', 5, 1_000);
      await log.append('s1', runs);
      const size = JSON.stringify(runs[0]).length;
      expect(await log.read('s1', { limit: 100, maxBytes: size * 2 + 10 })).toHaveLength(2);
      expect(await log.read('s1', { limit: 100, maxBytes: 1 })).toHaveLength(1);
      expect(await log.follow('s1', { after: '2', limit: 100, maxBytes: size * 3, timeoutMs: 0 })).toHaveLength(3);
    });
  });

  describe('clients', () => {
    const clientOf = (sessionId: string) => sessionId.split(':')[0]!;

    it("a client with many sessions drops its own, not another client's session, and that session's ended run stays ended", async () => {
      const log = open({ maxSessions: 4, clientOf });
      const [cursor] = await log.append('bob:chat', deltas('bob:chat', 1));
      await log.claimRun('bob:chat', 'r1', 'host-a', 60_000);
      await log.releaseRun('bob:chat', 'r1', 'host-a');
      for (let index = 0; index < 20; index += 1) await log.append(`mallory:${index}`, deltas(`mallory:${index}`, 1));
      expect(await log.read('bob:chat', { after: undefined, limit: 10 })).toHaveLength(1);
      expect(await log.lastCursor('bob:chat')).toBe(cursor);
      expect(await log.claimRun('bob:chat', 'r1', 'host-b', 60_000)).toBe(false);
      expect(await log.runOwner('bob:chat', 'r1')).toEqual({ state: 'ended' });
      // Mallory keeps her three newest sessions.
      expect(await log.lastCursor('mallory:19')).toBeDefined();
      expect(await log.lastCursor('mallory:16')).toBeUndefined();
    });

    it('assignClient gives a session its client once: a session made before it moves to it, a second client changes nothing', async () => {
      // Sessions no one was named for (started by the server, say) share one client here.
      const log = open({ maxSessions: 5, clientOf: () => 'anonymous' });
      // Made before its client is known (a lease first), then given to bob.
      await log.claimRun('bob-chat', 'r1', 'host-a', 60_000);
      await log.assignClient?.('bob-chat', 'bob');
      await log.append('bob-chat', deltas('bob-chat', 1));
      for (const sessionId of ['x-1', 'x-2', 'x-3']) await log.append(sessionId, deltas(sessionId, 1));
      for (let index = 0; index < 20; index += 1) {
        await log.assignClient?.(`m-${index}`, 'mallory');
        // Mallory cannot take bob's session over by naming herself its client.
        await log.assignClient?.('bob-chat', 'mallory');
        await log.append(`m-${index}`, deltas(`m-${index}`, 1));
      }
      // Still counted as anonymous's, bob's session would have gone first (the oldest of the
      // client holding the most); as mallory's, with hers.
      expect(await log.read('bob-chat', { limit: 10 })).toHaveLength(1);
      expect(await log.lastCursor('x-1')).toBeUndefined();
      expect(await log.lastCursor('x-3')).toBeDefined();
      expect(await log.lastCursor('m-19')).toBeDefined();
    });

    it("a client with large sessions drops its own under maxBytes, not another client's", async () => {
      const log = open({ maxBytes: 200_000, clientOf });
      await log.append('bob:chat', deltas('bob:chat', 10));
      const big = runEvents('r1', 'mallory:0').create('run.started', { input: { prompt: 'm'.repeat(50_000) } });
      for (let index = 0; index < 10; index += 1)
        await log.append(`mallory:${index}`, [{ ...big, sessionId: `mallory:${index}` }]);
      expect(log.retainedBytes()).toBeLessThanOrEqual(200_000);
      expect(await log.read('bob:chat', { limit: 100 })).toHaveLength(10);
      expect(await log.lastCursor('mallory:9')).toBeDefined();
    });
  });

  it('refuses options and limits that are not positive integers', async () => {
    expect(() => createMemoryEventLog({ maxEntriesPerSession: 0 })).toThrow(RangeError);
    expect(() => createMemoryEventLog({ maxSessions: 1.5 })).toThrow(RangeError);
    expect(() => createMemoryEventLog({ sessionTtlMs: Number.NaN })).toThrow(RangeError);
    await expect(open().read('s1', { limit: 0 })).rejects.toThrow(RangeError);
  });
});
