import { describe, expect, it } from 'vitest';
import type { AgentState } from '../machines/agentState';
import { createAgentStore } from '../machines/createAgentStore';
import type { AgentEvent } from '../protocol/eventSchemas';
import { sampleCommand } from '../tests/support/checkpoints';
import { runEvents } from '../tests/support/events';
import type { AgentEventLog, AgentEventLogReadOptions } from './AgentEventLog';
import { createMemoryEventLog, type MemoryEventLog } from './createMemoryEventLog';
import { SessionStates } from './SessionStates';

/** A run of `sessionId` whose one message holds `deltas` deltas of `deltaBytes` characters each. */
function bigRun(sessionId: string, deltas: number, deltaBytes: number): AgentEvent[] {
  const events = runEvents('r1', sessionId);
  return [
    events.create('run.started', {}),
    events.create('message.started', { messageId: 'm1', role: 'assistant' }),
    ...Array.from({ length: deltas }, (_, index) =>
      events.create('message.delta', { messageId: 'm1', delta: String(index % 10).repeat(deltaBytes) }),
    ),
    events.create('message.completed', { messageId: 'm1' }),
    events.create('run.completed', {}),
  ];
}

/** What a store that applied every event of the session, in order, holds. */
function replayOf(events: readonly AgentEvent[]): AgentState {
  const store = createAgentStore();
  store.batch(events);
  const state = store.getSnapshot();
  store.destroy();
  return state;
}

function statesOf(
  log: MemoryEventLog,
  options: { maxCachedStateBytes: number; maxCachedSessions?: number; snapshotEvery?: number },
) {
  const lost: string[] = [];
  const states = new SessionStates(log, {
    maxCachedSessions: options.maxCachedSessions ?? 1_000,
    maxCachedStateBytes: options.maxCachedStateBytes,
    snapshotEvery: options.snapshotEvery ?? 1_000,
    onLost: (sessionId) => lost.push(sessionId),
  });
  return { states, lost };
}

describe('SessionStates: cached states are bounded in bytes', () => {
  it('sessions whose states total more than maxCachedStateBytes leave at most that cached, least recently used going first', async () => {
    const log = createMemoryEventLog();
    const maxCachedStateBytes = 100_000;
    const { states } = statesOf(log, { maxCachedStateBytes });
    const sessions = ['a', 'b', 'c', 'd', 'e'];
    const eventsOf = new Map(sessions.map((sessionId) => [sessionId, bigRun(sessionId, 4, 10_000)]));
    for (const sessionId of sessions) await log.append(sessionId, eventsOf.get(sessionId)!);

    for (const sessionId of sessions) {
      await states.sync(sessionId);
      expect(states.cachedStateBytes()).toBeLessThanOrEqual(maxCachedStateBytes);
    }
    // About 40 KB each: two fit, the most recent ones.
    expect(sessions.map((sessionId) => states.cachedStateBytes(sessionId) > 0)).toEqual([
      false,
      false,
      false,
      true,
      true,
    ]);
    expect(states.cachedStateBytes()).toBe(states.cachedStateBytes('d') + states.cachedStateBytes('e'));
    expect(states.cachedStateBytes()).toBeGreaterThan(80_000);

    // An evicted session is read again from the log, and is what a replay of it is.
    for (const sessionId of sessions) {
      expect((await states.sync(sessionId)).state).toEqual(replayOf(eventsOf.get(sessionId)!));
      expect(states.cachedStateBytes()).toBeLessThanOrEqual(maxCachedStateBytes);
    }
    states.destroy();
    await log.close();
  });

  it('an evicted session whose first events the log trimmed starts again from its snapshot, and is whole', async () => {
    // The log keeps 6 entries a session; snapshots every 4 events carry what it trims.
    const log = createMemoryEventLog({ maxEntriesPerSession: 6 });
    const { states, lost } = statesOf(log, { maxCachedStateBytes: 30_000, snapshotEvery: 4 });
    const events = bigRun('kept', 12, 1_000);
    for (const event of events) {
      await log.append('kept', [event]);
      await states.sync('kept');
    }
    expect(await log.read('kept', { limit: 100 })).toHaveLength(6);
    // Another session's state passes the bound on its own: 'kept' is evicted for it.
    await log.append('other', bigRun('other', 4, 10_000));
    await states.sync('other');
    expect(states.cachedStateBytes('kept')).toBe(0);

    expect((await states.sync('kept')).state).toEqual(replayOf(events));
    expect(lost).toEqual([]);
    states.destroy();
    await log.close();
  });

  it('a session being read is not evicted: its reader gets its state and can still check commands on it', async () => {
    const log = createMemoryEventLog();
    // The log answers reads of 'waiting' only once the gate opens.
    let open = () => {};
    const gate = new Promise<void>((resolve) => {
      open = resolve;
    });
    const gated: AgentEventLog = new Proxy(log, {
      get(target, property, receiver) {
        if (property === 'read') {
          return async (sessionId: string, options: AgentEventLogReadOptions) => {
            if (sessionId === 'waiting') await gate;
            return target.read(sessionId, options);
          };
        }
        const value = Reflect.get(target, property, receiver);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    const states = new SessionStates(gated, {
      maxCachedSessions: 1_000,
      maxCachedStateBytes: 50_000,
      snapshotEvery: 1_000,
      onLost: () => {},
    });
    const events = runEvents('r1', 'waiting');
    const waiting = [
      events.create('run.started', {}),
      events.create('approval.requested', { approvalId: 'a1' }),
      events.create('run.completed', { pendingApprovalIds: ['a1'] }),
    ];
    await log.append('waiting', waiting);
    await log.append('big', bigRun('big', 6, 10_000));
    const approve = sampleCommand({ sessionId: 'waiting' });
    const allowed = states.can('waiting', approve);
    // The big session passes the bound on its own while 'waiting' is being read.
    const big = await states.sync('big');
    expect(big.state).toEqual(replayOf(bigRun('big', 6, 10_000)));
    expect(states.cachedStateBytes('big')).toBe(0);
    open();
    expect(await allowed).toBe(true);
    expect((await states.sync('waiting')).state).toEqual(replayOf(waiting));
    expect(states.cachedStateBytes()).toBeLessThanOrEqual(50_000);
    states.destroy();
    await log.close();
  });

  it('refuses a bound that is not a positive integer', () => {
    const log = createMemoryEventLog();
    for (const maxCachedStateBytes of [0, -1, 1.5, Number.NaN]) {
      expect(() => statesOf(log, { maxCachedStateBytes })).toThrow(RangeError);
    }
  });
});
