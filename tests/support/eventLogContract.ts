import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createAgentCommandFactory } from '../../protocol/createAgentCommandFactory';
import type { AgentEvent } from '../../protocol/eventSchemas';
import type {
  AgentCommandOutcome,
  AgentEventLog,
  AgentEventLogEntry,
  AgentHostSignal,
} from '../../server/AgentEventLog';
import { AgentEventLogError, type AgentEventLogErrorCode } from '../../server/AgentEventLogError';
import { runEvents } from './events';

/** One implementation under test, over fresh (or at least test-private) storage. */
export interface AgentEventLogUnderTest {
  log: AgentEventLog;
  /** A second log object over the same storage, as a second host instance would have. */
  peer: () => Promise<AgentEventLog>;
  /** Closes `log` and every peer made (`log` may already be closed), and frees the storage. */
  cleanup: () => Promise<void>;
}

export interface AgentEventLogContractOptions {
  /** The implementation's bound, so trimming can be tested; without it trimming is not. */
  maxEntriesPerSession: number;
  /** The implementation's byte bound per session (entries' JSON and snapshot), so it can be tested. */
  maxBytesPerSession?: number;
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * How long a follow or awaitCommand that an append, an abort or a close must end is given:
 * far more than it needs. "At once" is then less than half of it, a bound no machine's load
 * reaches, while a call that waited for its timeout still fails it.
 */
const WAIT_MS = 20_000;
const AT_ONCE_MS = WAIT_MS / 2;

/** Waits until `check()` holds, polling; fails after `timeoutMs`. */
async function until(check: () => boolean, timeoutMs = 1_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await sleep(5);
  }
}

/** The AgentEventLogError `promise` rejects with (and fails if it resolves or rejects otherwise). */
async function rejection(promise: Promise<unknown>): Promise<AgentEventLogErrorCode> {
  try {
    await promise;
  } catch (error) {
    if (AgentEventLogError.isInstance(error)) return error.code;
    throw error;
  }
  throw new Error('it resolved');
}

/** Tracks whether a promise has settled yet, to check that a wait really waits. */
function watch<T>(promise: Promise<T>): { promise: Promise<T>; settled: () => boolean } {
  let settled = false;
  const tracked = promise.finally(() => {
    settled = true;
  });
  return { promise: tracked, settled: () => settled };
}

let uniqueIds = 0;
const runPrefix = Math.random().toString(36).slice(2, 8);
/** Ids no other test (nor an earlier run over the same storage) uses. */
function uniqueId(kind: string): string {
  uniqueIds += 1;
  return `${kind}-${runPrefix}-${uniqueIds}`;
}

/** `count` events of one run: `run.started`, then message deltas. */
function eventsOf(sessionId: string, count: number, runId = 'r1'): AgentEvent[] {
  const events = runEvents(runId, sessionId);
  return Array.from({ length: count }, (_, index) =>
    index === 0
      ? events.create('run.started', {})
      : events.create('message.delta', { messageId: 'answer', delta: `part ${index}` }),
  );
}

/** `count` runs, each one `run.started` event carrying a prompt of `promptBytes` characters. */
function bigEventsOf(sessionId: string, count: number, promptBytes: number): AgentEvent[] {
  return Array.from({ length: count }, (_, index) =>
    runEvents(`r${index}`, sessionId).create('run.started', { input: { prompt: 'p'.repeat(promptBytes) } }),
  );
}

const bytesOf = (entries: readonly AgentEventLogEntry[]) =>
  entries.reduce((sum, entry) => sum + JSON.stringify(entry.event).length, 0);

function entriesOf(cursors: readonly string[], events: readonly AgentEvent[]): AgentEventLogEntry[] {
  return events.map((event, index) => ({ cursor: cursors[index]!, event }));
}

const everything = 1_000_000;

function cancelSignal(): AgentHostSignal {
  const commands = createAgentCommandFactory({ sessionId: uniqueId('s'), runId: 'r1' });
  return { type: 'command', command: commands.create('run.cancel', { reason: 'the user left' }) };
}

/**
 * The rules every `AgentEventLog` keeps, as a vitest suite: what `AgentEventLog`'s JSDoc
 * says, tested through the interface only, between a log and a peer over the same storage.
 * Each test gets its own `setup()` (and `cleanup()` after it) and its own session ids; each
 * takes well under a second on a quiet machine (leases and command records use TTLs of 150-300 ms).
 *
 * @example
 * describeAgentEventLogContract('memory', async () => {
 *   const log = createMemoryEventLog({ maxEntriesPerSession: 20 });
 *   return { log, peer: async () => log, cleanup: () => log.close() };
 * }, { maxEntriesPerSession: 20 });
 */
export function describeAgentEventLogContract(
  name: string,
  setup: () => Promise<AgentEventLogUnderTest>,
  options?: AgentEventLogContractOptions,
): void {
  describe(`${name}: event log contract`, { timeout: 30_000 }, () => {
    let underTest: AgentEventLogUnderTest | undefined;
    let log: AgentEventLog;
    const peer = () => underTest!.peer();

    beforeEach(async () => {
      underTest = await setup();
      log = underTest.log;
    });
    afterEach(async () => {
      await underTest?.cleanup();
      underTest = undefined;
    });

    describe('append and read', () => {
      it('append resolves one cursor per event; read gives the events back, in order, with those cursors', async () => {
        const sessionId = uniqueId('s');
        const events = eventsOf(sessionId, 5);
        const first = await log.append(sessionId, events.slice(0, 3));
        const second = await log.append(sessionId, events.slice(3));
        expect(first).toHaveLength(3);
        expect(second).toHaveLength(2);
        const cursors = [...first, ...second];
        expect(new Set(cursors).size).toBe(5);
        expect(await log.read(sessionId, { limit: everything })).toEqual(entriesOf(cursors, events));
      });

      it('append of no events resolves [] and adds nothing', async () => {
        const sessionId = uniqueId('s');
        expect(await log.append(sessionId, [])).toEqual([]);
        expect(await log.lastCursor(sessionId)).toBeUndefined();
        expect(await log.read(sessionId, { limit: 10 })).toEqual([]);
      });

      it('read after a cursor gives the entries after it, oldest first: cursors increase in append order', async () => {
        const sessionId = uniqueId('s');
        const events = eventsOf(sessionId, 6);
        const cursors = [
          ...(await log.append(sessionId, events.slice(0, 2))),
          ...(await log.append(sessionId, events.slice(2))),
        ];
        const all = entriesOf(cursors, events);
        for (const [index, cursor] of cursors.entries()) {
          expect(await log.read(sessionId, { after: cursor, limit: everything })).toEqual(all.slice(index + 1));
        }
      });

      it('read gives at most `limit` entries; paging by the last cursor read reads each entry once', async () => {
        const sessionId = uniqueId('s');
        const events = eventsOf(sessionId, 7);
        const cursors = await log.append(sessionId, events);
        expect(await log.read(sessionId, { limit: 3 })).toEqual(entriesOf(cursors, events).slice(0, 3));
        const pages: AgentEventLogEntry[][] = [];
        let after: string | undefined;
        for (;;) {
          const page = await log.read(sessionId, { after, limit: 2 });
          if (page.length === 0) break;
          expect(page.length).toBeLessThanOrEqual(2);
          pages.push([...page]);
          after = page.at(-1)!.cursor;
        }
        expect(pages.map((page) => page.length)).toEqual([2, 2, 2, 1]);
        expect(pages.flat()).toEqual(entriesOf(cursors, events));
      });

      it('a session the log never saw reads [] (without a cursor) and has no last cursor', async () => {
        const sessionId = uniqueId('never');
        expect(await log.read(sessionId, { limit: 10 })).toEqual([]);
        expect(await log.lastCursor(sessionId)).toBeUndefined();
      });

      it('sessions are apart: each reads only its own entries and has its own last cursor', async () => {
        const [a, b] = [uniqueId('a'), uniqueId('b')];
        const [eventsA, eventsB] = [eventsOf(a, 3), eventsOf(b, 2)];
        const cursorsA = [...(await log.append(a, eventsA.slice(0, 1)))];
        const cursorsB = [...(await log.append(b, eventsB))];
        cursorsA.push(...(await log.append(a, eventsA.slice(1))));
        expect(await log.read(a, { limit: everything })).toEqual(entriesOf(cursorsA, eventsA));
        expect(await log.read(b, { limit: everything })).toEqual(entriesOf(cursorsB, eventsB));
        expect(await log.lastCursor(a)).toBe(cursorsA[2]);
        expect(await log.lastCursor(b)).toBe(cursorsB[1]);
      });

      it('a peer reads what the log appended, and the log what the peer appended', async () => {
        const other = await peer();
        const sessionId = uniqueId('s');
        const events = eventsOf(sessionId, 4);
        const cursors = [
          ...(await log.append(sessionId, events.slice(0, 2))),
          ...(await other.append(sessionId, events.slice(2))),
        ];
        expect(await other.read(sessionId, { limit: everything })).toEqual(entriesOf(cursors, events));
        expect(await log.read(sessionId, { after: cursors[1], limit: everything })).toEqual(
          entriesOf(cursors, events).slice(2),
        );
        expect(await other.lastCursor(sessionId)).toBe(cursors[3]);
      });
    });

    describe('cursors the log refuses', () => {
      it('a malformed cursor is invalid_cursor, for read and follow', async () => {
        const sessionId = uniqueId('s');
        await log.append(sessionId, eventsOf(sessionId, 2));
        for (const after of ['', 'not-a-cursor', 'abc', '-5', ' 1']) {
          expect(await rejection(log.read(sessionId, { after, limit: 10 })), after).toBe('invalid_cursor');
          expect(await rejection(log.follow(sessionId, { after, limit: 10, timeoutMs: 50 })), after).toBe(
            'invalid_cursor',
          );
        }
      });

      it("a cursor past the session's newest entry is invalid_cursor; the newest itself reads []", async () => {
        const [older, newer] = [uniqueId('older'), uniqueId('newer')];
        const [newest] = await log.append(older, eventsOf(older, 1));
        // Given later, to another session: past anything `older` has.
        const later = (await log.append(newer, eventsOf(newer, 3))).at(-1)!;
        expect(await rejection(log.read(older, { after: later, limit: 10 }))).toBe('invalid_cursor');
        expect(await rejection(log.follow(older, { after: later, limit: 10, timeoutMs: 50 }))).toBe('invalid_cursor');
        expect(await log.read(older, { after: newest, limit: 10 })).toEqual([]);
      });

      it('a cursor for a session the log has no entries for is cursor_expired (it may have expired)', async () => {
        const known = uniqueId('known');
        const [cursor] = await log.append(known, eventsOf(known, 1));
        const unknown = uniqueId('unknown');
        expect(await rejection(log.read(unknown, { after: cursor, limit: 10 }))).toBe('cursor_expired');
        expect(await rejection(log.follow(unknown, { after: cursor, limit: 10, timeoutMs: 50 }))).toBe(
          'cursor_expired',
        );
      });
    });

    describe('pages in bytes', () => {
      it('read and follow with maxBytes stop before the entry that would pass it, with one entry at least; paging reads each once', async () => {
        const sessionId = uniqueId('s');
        const events = bigEventsOf(sessionId, 7, 1_000);
        const cursors = await log.append(sessionId, events);
        const size = JSON.stringify(events[0]).length;
        const pages: AgentEventLogEntry[][] = [];
        let after: string | undefined;
        for (;;) {
          const page = [...(await log.read(sessionId, { after, limit: 100, maxBytes: size * 3 + 10 }))];
          if (page.length === 0) break;
          pages.push(page);
          after = page.at(-1)!.cursor;
        }
        expect(pages.map((page) => page.length)).toEqual([3, 3, 1]);
        expect(pages.flat()).toEqual(entriesOf(cursors, events));
        expect(await log.read(sessionId, { limit: 100, maxBytes: 1 })).toEqual(entriesOf(cursors, events).slice(0, 1));
        expect(
          await log.follow(sessionId, { after: cursors[1], limit: 100, maxBytes: size * 2, timeoutMs: 0 }),
        ).toEqual(entriesOf(cursors, events).slice(2, 4));
      });
    });

    if (options?.maxBytesPerSession !== undefined) {
      const { maxBytesPerSession: maxBytes } = options;

      describe(`the bound: ${maxBytes} bytes per session`, () => {
        it('trims the oldest entries past maxBytesPerSession; a reader behind them gets cursor_expired', async () => {
          const sessionId = uniqueId('s');
          const events = bigEventsOf(sessionId, 10, Math.floor(maxBytes / 5));
          const cursors: string[] = [];
          for (const event of events) cursors.push(...(await log.append(sessionId, [event])));
          const kept = await log.read(sessionId, { limit: everything });
          expect(kept.length).toBeGreaterThan(1);
          expect(kept.length).toBeLessThan(5);
          expect(bytesOf(kept)).toBeLessThanOrEqual(maxBytes);
          expect(kept).toEqual(entriesOf(cursors, events).slice(10 - kept.length));
          expect(await rejection(log.read(sessionId, { after: cursors[0], limit: 10 }))).toBe('cursor_expired');
          expect(await log.read(sessionId, { after: cursors[9 - kept.length], limit: everything })).toEqual(kept);
        });

        it('counts the snapshot: entries make room for it', async () => {
          const sessionId = uniqueId('s');
          const events = bigEventsOf(sessionId, 4, Math.floor(maxBytes / 5));
          const cursors = await log.append(sessionId, events.slice(0, 3));
          expect(await log.read(sessionId, { limit: everything })).toHaveLength(3);
          await log.saveSnapshot(sessionId, {
            state: { text: 's'.repeat(Math.floor(maxBytes * 0.45)) },
            cursor: cursors[2]!,
          });
          await log.append(sessionId, events.slice(3));
          const kept = await log.read(sessionId, { limit: everything });
          expect(bytesOf(kept) + maxBytes * 0.45).toBeLessThanOrEqual(maxBytes);
          expect(kept.at(-1)?.event).toEqual(events[3]);
        });

        it('the newest entry stays even when it alone is larger than the bound', async () => {
          const sessionId = uniqueId('s');
          const events = bigEventsOf(sessionId, 2, maxBytes * 2);
          const cursors = await log.append(sessionId, events);
          expect(await log.read(sessionId, { limit: everything })).toEqual(entriesOf(cursors, events).slice(1));
        });

        it('a snapshot larger than half of maxBytesPerSession is refused with too_large; the one before it stays', async () => {
          const sessionId = uniqueId('s');
          const [cursor] = await log.append(sessionId, eventsOf(sessionId, 1));
          await log.saveSnapshot(sessionId, { state: { small: true }, cursor: cursor! });
          const big = { state: { text: 'b'.repeat(Math.ceil(maxBytes / 2)) }, cursor: cursor! };
          expect(await rejection(log.saveSnapshot(sessionId, big))).toBe('too_large');
          expect(await log.loadSnapshot(sessionId)).toEqual({ state: { small: true }, cursor });
        });
      });
    }

    if (options) {
      const { maxEntriesPerSession: max } = options;

      describe(`the bound: ${max} entries per session`, () => {
        it('keeps the newest maxEntriesPerSession entries of a session', async () => {
          const sessionId = uniqueId('s');
          const events = eventsOf(sessionId, max + 5);
          const cursors = await log.append(sessionId, events);
          expect(await log.read(sessionId, { limit: everything })).toEqual(entriesOf(cursors, events).slice(5));
          expect(await log.lastCursor(sessionId)).toBe(cursors.at(-1));
        });

        it('reading after a cursor whose next entry was trimmed is cursor_expired; after the last trimmed one reads on', async () => {
          const sessionId = uniqueId('s');
          const events = eventsOf(sessionId, max + 5);
          const cursors = [
            ...(await log.append(sessionId, events.slice(0, 5))),
            ...(await log.append(sessionId, events.slice(5))),
          ];
          for (const index of [0, 3]) {
            expect(await rejection(log.read(sessionId, { after: cursors[index], limit: 10 }))).toBe('cursor_expired');
          }
          expect(await rejection(log.follow(sessionId, { after: cursors[0], limit: 10, timeoutMs: 50 }))).toBe(
            'cursor_expired',
          );
          expect(await log.read(sessionId, { after: cursors[4], limit: everything })).toEqual(
            entriesOf(cursors, events).slice(5),
          );
        });
      });
    }

    describe('follow', () => {
      it('resolves at once with the entries already there', async () => {
        const sessionId = uniqueId('s');
        const events = eventsOf(sessionId, 3);
        const cursors = await log.append(sessionId, events);
        const started = Date.now();
        const entries = await log.follow(sessionId, { after: cursors[0], limit: 10, timeoutMs: WAIT_MS });
        expect(entries).toEqual(entriesOf(cursors, events).slice(1));
        expect(Date.now() - started).toBeLessThan(AT_ONCE_MS);
      });

      it('waits for an append by a peer, then gives the new entries', async () => {
        const other = await peer();
        const sessionId = uniqueId('s');
        const events = eventsOf(sessionId, 4);
        const [, newest] = await log.append(sessionId, events.slice(0, 2));
        const following = watch(log.follow(sessionId, { after: newest, limit: 10, timeoutMs: WAIT_MS }));
        await sleep(50);
        expect(following.settled()).toBe(false);
        const cursors = await other.append(sessionId, events.slice(2));
        expect(await following.promise).toEqual(entriesOf(cursors, events.slice(2)));
      });

      it('on a session with no entries yet, is woken by its first append', async () => {
        const other = await peer();
        const sessionId = uniqueId('s');
        const events = eventsOf(sessionId, 2);
        const following = watch(other.follow(sessionId, { limit: 10, timeoutMs: WAIT_MS }));
        await sleep(50);
        expect(following.settled()).toBe(false);
        const cursors = await log.append(sessionId, events);
        expect(await following.promise).toEqual(entriesOf(cursors, events));
      });

      it('gives at most `limit` of the entries an append brings', async () => {
        const sessionId = uniqueId('s');
        const events = eventsOf(sessionId, 5);
        const following = log.follow(sessionId, { limit: 2, timeoutMs: WAIT_MS });
        await sleep(20);
        const cursors = await log.append(sessionId, events);
        expect(await following).toEqual(entriesOf(cursors, events).slice(0, 2));
      });

      it('resolves [] after timeoutMs when nothing is appended to its session (appends elsewhere do not count)', async () => {
        const [sessionId, elsewhere] = [uniqueId('s'), uniqueId('elsewhere')];
        const [newest] = await log.append(sessionId, eventsOf(sessionId, 1));
        const started = Date.now();
        const following = log.follow(sessionId, { after: newest, limit: 10, timeoutMs: 150 });
        await sleep(20);
        await log.append(elsewhere, eventsOf(elsewhere, 1));
        expect(await following).toEqual([]);
        const elapsed = Date.now() - started;
        expect(elapsed).toBeGreaterThanOrEqual(140);
        expect(elapsed).toBeLessThan(AT_ONCE_MS);
      });

      it('resolves [] as soon as its signal aborts, and at once when it already has', async () => {
        const sessionId = uniqueId('s');
        const controller = new AbortController();
        const started = Date.now();
        const following = log.follow(sessionId, { limit: 10, timeoutMs: WAIT_MS, signal: controller.signal });
        await sleep(30);
        controller.abort();
        expect(await following).toEqual([]);
        expect(Date.now() - started).toBeLessThan(AT_ONCE_MS);
        expect(await log.follow(sessionId, { limit: 10, timeoutMs: WAIT_MS, signal: AbortSignal.abort() })).toEqual([]);
        expect(Date.now() - started).toBeLessThan(AT_ONCE_MS);
      });
    });

    describe('snapshots', () => {
      it('loadSnapshot is undefined for a session without one', async () => {
        expect(await log.loadSnapshot(uniqueId('s'))).toBeUndefined();
      });

      it('keeps the snapshot with the newest cursor: an older one is ignored, a newer one replaces it', async () => {
        const other = await peer();
        const sessionId = uniqueId('s');
        const cursors = await log.append(sessionId, eventsOf(sessionId, 12));
        const at = (index: number) => ({ state: { events: index + 1, items: [{ id: 'a' }] }, cursor: cursors[index]! });
        await log.saveSnapshot(sessionId, at(9));
        await other.saveSnapshot(sessionId, at(2));
        expect(await other.loadSnapshot(sessionId)).toEqual(at(9));
        await other.saveSnapshot(sessionId, at(11));
        expect(await log.loadSnapshot(sessionId)).toEqual(at(11));
      });
    });

    describe('run leases', () => {
      it('a run no one claimed is unowned', async () => {
        expect(await log.runOwner(uniqueId('s'), 'r1')).toEqual({ state: 'unowned' });
      });

      it('one owner at a time: no one else (nor the holder again) takes a held lease', async () => {
        const other = await peer();
        const sessionId = uniqueId('s');
        expect(await log.claimRun(sessionId, 'r1', 'host-a', 1_000)).toBe(true);
        expect(await other.claimRun(sessionId, 'r1', 'host-b', 1_000)).toBe(false);
        expect(await log.claimRun(sessionId, 'r1', 'host-a', 1_000)).toBe(false);
        expect(await other.runOwner(sessionId, 'r1')).toEqual({ state: 'owned', owner: 'host-a' });
      });

      it('leases are per session and per run', async () => {
        const [s1, s2] = [uniqueId('s'), uniqueId('s')];
        expect(await log.claimRun(s1, 'r1', 'host-a', 1_000)).toBe(true);
        expect(await log.claimRun(s2, 'r1', 'host-b', 1_000)).toBe(true);
        expect(await log.claimRun(s1, 'r2', 'host-b', 1_000)).toBe(true);
        expect(await log.runOwner(s2, 'r1')).toEqual({ state: 'owned', owner: 'host-b' });
        expect(await log.runOwner(s1, 'r2')).toEqual({ state: 'owned', owner: 'host-b' });
      });

      it('renewRun is true for the holder only, and a renewed lease outlives its first TTL', async () => {
        const other = await peer();
        const sessionId = uniqueId('s');
        // The first lease is short, the renewed one long: once the first TTL has surely passed
        // (waited for by the clock, whatever the machine's load), only the renewal holds it.
        const firstTtlMs = 1_500;
        const claimedBy = Date.now() + firstTtlMs;
        expect(await log.claimRun(sessionId, 'r1', 'host-a', firstTtlMs)).toBe(true);
        expect(await other.renewRun(sessionId, 'r1', 'host-b', 60_000)).toBe(false);
        expect(await other.renewRun(sessionId, 'r1', 'host-a', 60_000)).toBe(true);
        await sleep(Math.max(0, claimedBy - Date.now()) + 100);
        expect(await other.runOwner(sessionId, 'r1')).toEqual({ state: 'owned', owner: 'host-a' });
        expect(await other.claimRun(sessionId, 'r1', 'host-b', 60_000)).toBe(false);
      });

      it('releaseRun by another owner does nothing; by the holder it ends the run for good', async () => {
        const other = await peer();
        const sessionId = uniqueId('s');
        await log.claimRun(sessionId, 'r1', 'host-a', 1_000);
        await other.releaseRun(sessionId, 'r1', 'host-b');
        expect(await log.runOwner(sessionId, 'r1')).toEqual({ state: 'owned', owner: 'host-a' });
        await log.releaseRun(sessionId, 'r1', 'host-a');
        expect(await other.runOwner(sessionId, 'r1')).toEqual({ state: 'ended' });
        expect(await other.claimRun(sessionId, 'r1', 'host-b', 1_000)).toBe(false);
        expect(await log.claimRun(sessionId, 'r1', 'host-a', 1_000)).toBe(false);
        expect(await log.renewRun(sessionId, 'r1', 'host-a', 1_000)).toBe(false);
        await log.releaseRun(sessionId, 'r1', 'host-a');
        expect(await log.runOwner(sessionId, 'r1')).toEqual({ state: 'ended' });
      });

      it('an expired lease is unowned: its old owner can neither renew nor release it, another owner can claim it', async () => {
        const other = await peer();
        const sessionId = uniqueId('s');
        expect(await log.claimRun(sessionId, 'r1', 'host-a', 150)).toBe(true);
        await sleep(250);
        expect(await other.runOwner(sessionId, 'r1')).toEqual({ state: 'unowned' });
        expect(await log.renewRun(sessionId, 'r1', 'host-a', 1_000)).toBe(false);
        await log.releaseRun(sessionId, 'r1', 'host-a');
        expect(await log.runOwner(sessionId, 'r1')).toEqual({ state: 'unowned' });
        expect(await other.claimRun(sessionId, 'r1', 'host-b', 1_000)).toBe(true);
        expect(await log.runOwner(sessionId, 'r1')).toEqual({ state: 'owned', owner: 'host-b' });
      });
    });

    describe('command idempotency records', () => {
      const accepted = (sessionId: string): AgentCommandOutcome => ({
        status: 'accepted',
        events: eventsOf(sessionId, 2, 'r-command'),
      });

      it('the first claimCommand takes the key (undefined); later claims get the pending record', async () => {
        const other = await peer();
        const sessionId = uniqueId('s');
        expect(await log.claimCommand(sessionId, 'k1', 'fingerprint-1', 1_000)).toBeUndefined();
        expect(await other.claimCommand(sessionId, 'k1', 'fingerprint-2', 1_000)).toEqual({
          status: 'pending',
          fingerprint: 'fingerprint-1',
        });
        expect(await log.claimCommand(sessionId, 'k1', 'fingerprint-1', 1_000)).toEqual({
          status: 'pending',
          fingerprint: 'fingerprint-1',
        });
      });

      it('keys are per session', async () => {
        const [s1, s2] = [uniqueId('s'), uniqueId('s')];
        expect(await log.claimCommand(s1, 'k1', 'fingerprint-1', 1_000)).toBeUndefined();
        expect(await log.claimCommand(s2, 'k1', 'fingerprint-2', 1_000)).toBeUndefined();
      });

      it('settleCommand records the outcome: claims and awaitCommand (at once) give the settled record', async () => {
        const other = await peer();
        const sessionId = uniqueId('s');
        const outcome = accepted(sessionId);
        await log.claimCommand(sessionId, 'k1', 'fingerprint-1', 1_000);
        await log.settleCommand(sessionId, 'k1', { fingerprint: 'fingerprint-1', outcome }, 1_000);
        const settled = { status: 'settled', fingerprint: 'fingerprint-1', outcome };
        expect(await other.claimCommand(sessionId, 'k1', 'fingerprint-1', 1_000)).toEqual(settled);
        const started = Date.now();
        expect(await other.awaitCommand(sessionId, 'k1', { timeoutMs: WAIT_MS })).toEqual(settled);
        expect(Date.now() - started).toBeLessThan(AT_ONCE_MS);
      });

      it('a failed outcome is kept as given', async () => {
        const sessionId = uniqueId('s');
        const outcome: AgentCommandOutcome = {
          status: 'failed',
          error: { message: 'The tool call is not waiting for a result', code: 'tool_not_pending', retryable: false },
        };
        await log.claimCommand(sessionId, 'k1', 'fingerprint-1', 1_000);
        await log.settleCommand(sessionId, 'k1', { fingerprint: 'fingerprint-1', outcome }, 1_000);
        expect(await log.claimCommand(sessionId, 'k1', 'fingerprint-1', 1_000)).toEqual({
          status: 'settled',
          fingerprint: 'fingerprint-1',
          outcome,
        });
      });

      it('awaitCommand waits for the settle by another instance', async () => {
        const other = await peer();
        const sessionId = uniqueId('s');
        const outcome = accepted(sessionId);
        await log.claimCommand(sessionId, 'k1', 'fingerprint-1', 1_000);
        const waiting = watch(other.awaitCommand(sessionId, 'k1', { timeoutMs: WAIT_MS }));
        await sleep(50);
        expect(waiting.settled()).toBe(false);
        await log.settleCommand(sessionId, 'k1', { fingerprint: 'fingerprint-1', outcome }, 1_000);
        expect(await waiting.promise).toEqual({ status: 'settled', fingerprint: 'fingerprint-1', outcome });
      });

      it('settleCommand keeps the first outcome: a later settle changes nothing and resolves the first', async () => {
        const other = await peer();
        const sessionId = uniqueId('s');
        const first = accepted(sessionId);
        const second = { status: 'failed' as const, error: { code: 'run_ended', message: 'late' } };
        await log.claimCommand(sessionId, 'k1', 'fingerprint-1', 1_000);
        expect(
          await log.settleCommand(sessionId, 'k1', { fingerprint: 'fingerprint-1', outcome: first }, 1_000),
        ).toEqual(first);
        expect(
          await other.settleCommand(sessionId, 'k1', { fingerprint: 'fingerprint-1', outcome: second }, 1_000),
        ).toEqual(first);
        expect(await other.awaitCommand(sessionId, 'k1', { timeoutMs: 0 })).toEqual({
          status: 'settled',
          fingerprint: 'fingerprint-1',
          outcome: first,
        });
      });

      it('awaitCommand resolves undefined after timeoutMs while the command is pending', async () => {
        const sessionId = uniqueId('s');
        await log.claimCommand(sessionId, 'k1', 'fingerprint-1', 1_000);
        const started = Date.now();
        expect(await log.awaitCommand(sessionId, 'k1', { timeoutMs: 150 })).toBeUndefined();
        const elapsed = Date.now() - started;
        expect(elapsed).toBeGreaterThanOrEqual(140);
        expect(elapsed).toBeLessThan(AT_ONCE_MS);
      });

      it('awaitCommand resolves undefined as soon as its signal aborts, and at once when it already has', async () => {
        const sessionId = uniqueId('s');
        await log.claimCommand(sessionId, 'k1', 'fingerprint-1', 1_000);
        const controller = new AbortController();
        const started = Date.now();
        const waiting = log.awaitCommand(sessionId, 'k1', { timeoutMs: WAIT_MS, signal: controller.signal });
        await sleep(30);
        controller.abort();
        expect(await waiting).toBeUndefined();
        expect(
          await log.awaitCommand(sessionId, 'k1', { timeoutMs: WAIT_MS, signal: AbortSignal.abort() }),
        ).toBeUndefined();
        expect(Date.now() - started).toBeLessThan(AT_ONCE_MS);
      });

      it('a record lives ttlMs: after it, the key can be claimed again', async () => {
        const sessionId = uniqueId('s');
        expect(await log.claimCommand(sessionId, 'k1', 'fingerprint-1', 150)).toBeUndefined();
        await sleep(250);
        expect(await log.claimCommand(sessionId, 'k1', 'fingerprint-2', 1_000)).toBeUndefined();
        expect(await log.claimCommand(sessionId, 'k1', 'fingerprint-3', 1_000)).toEqual({
          status: 'pending',
          fingerprint: 'fingerprint-2',
        });
      });
    });

    describe('signals', () => {
      it('a signal reaches the listeners of its owner, on another instance, and no one else', async () => {
        const other = await peer();
        const [owner, bystander] = [uniqueId('host'), uniqueId('host')];
        const received: AgentHostSignal[] = [];
        const overheard: AgentHostSignal[] = [];
        const stops = [
          await other.listen(owner, (signal) => received.push(signal)),
          await log.listen(bystander, (signal) => overheard.push(signal)),
        ];
        const signal = cancelSignal();
        await log.signal(owner, signal);
        await until(() => received.length > 0);
        await sleep(50);
        expect(received).toEqual([signal]);
        expect(overheard).toEqual([]);
        for (const stop of stops) await stop();
      });

      it('a stopped listener gets no more signals; the others still do', async () => {
        const other = await peer();
        const owner = uniqueId('host');
        const stopped: AgentHostSignal[] = [];
        const kept: AgentHostSignal[] = [];
        const stop = await other.listen(owner, (signal) => stopped.push(signal));
        const stopKept = await other.listen(owner, (signal) => kept.push(signal));
        const [first, second] = [cancelSignal(), cancelSignal()];
        await log.signal(owner, first);
        await until(() => stopped.length === 1 && kept.length === 1);
        await stop();
        await log.signal(owner, second);
        await until(() => kept.length === 2);
        await sleep(50);
        expect(kept).toEqual([first, second]);
        expect(stopped).toEqual([first]);
        await stopKept();
      });

      it('a signal to an owner no one listens to is dropped', async () => {
        const owner = uniqueId('host');
        await expect(log.signal(owner, cancelSignal())).resolves.toBeUndefined();
        const received: AgentHostSignal[] = [];
        const stop = await log.listen(owner, (signal) => received.push(signal));
        await sleep(50);
        expect(received).toEqual([]);
        await stop();
      });
    });

    describe('close', () => {
      it('resolves pending follow with [] and awaitCommand with undefined; later calls reject with closed', async () => {
        const sessionId = uniqueId('s');
        const [cursor] = await log.append(sessionId, eventsOf(sessionId, 1));
        await log.claimCommand(sessionId, 'k1', 'fingerprint-1', 1_000);
        const started = Date.now();
        const following = log.follow(sessionId, { after: cursor, limit: 10, timeoutMs: WAIT_MS });
        const waiting = log.awaitCommand(sessionId, 'k1', { timeoutMs: WAIT_MS });
        await sleep(20);
        await log.close();
        expect(await following).toEqual([]);
        expect(await waiting).toBeUndefined();
        expect(Date.now() - started).toBeLessThan(AT_ONCE_MS);

        const calls: Array<[string, () => Promise<unknown>]> = [
          ['append', () => log.append(sessionId, eventsOf(sessionId, 1))],
          ['read', () => log.read(sessionId, { limit: 10 })],
          ['follow', () => log.follow(sessionId, { limit: 10, timeoutMs: 50 })],
          ['lastCursor', () => log.lastCursor(sessionId)],
          ['saveSnapshot', () => log.saveSnapshot(sessionId, { state: {}, cursor: cursor! })],
          ['loadSnapshot', () => log.loadSnapshot(sessionId)],
          ['claimRun', () => log.claimRun(sessionId, 'r1', 'host-a', 1_000)],
          ['renewRun', () => log.renewRun(sessionId, 'r1', 'host-a', 1_000)],
          ['releaseRun', () => log.releaseRun(sessionId, 'r1', 'host-a')],
          ['runOwner', () => log.runOwner(sessionId, 'r1')],
          ['claimCommand', () => log.claimCommand(sessionId, 'k2', 'fingerprint-1', 1_000)],
          [
            'settleCommand',
            () =>
              log.settleCommand(
                sessionId,
                'k1',
                { fingerprint: 'f', outcome: { status: 'accepted', events: [] } },
                1_000,
              ),
          ],
          ['awaitCommand', () => log.awaitCommand(sessionId, 'k1', { timeoutMs: 50 })],
          ['signal', () => log.signal('host-a', cancelSignal())],
          ['listen', () => log.listen('host-a', () => {})],
        ];
        for (const [method, call] of calls) expect(await rejection(call()), method).toBe('closed');
      });

      it('closing twice is harmless', async () => {
        await log.close();
        await expect(log.close()).resolves.toBeUndefined();
      });
    });
  });
}
