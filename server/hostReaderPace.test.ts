// A reader's pace, on both logs: one that keeps reading, however far behind the live edge and
// however slowly, gets every event once and in order; only one that stops reading is dropped.
// The clock of these tests is the reader's: fake timers (setTimeout only) move by 100 ms for
// every frame it reads, as a client on a slow link (160 KB/s here) would see them go by. That
// reader calls the host's handler itself: no socket buffers in between (which hold megabytes
// the host cannot see read), the host's queue is all that holds what it has not read.
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { createLocalAgentProvider } from '../providers/local/createLocalAgentProvider';
import { type ReadFrame, readEvents, readFrames, type ServedHost, serveHost } from '../tests/support/hostClient';
import { describeWithRedis, startRedisServer, type TestRedisServer } from '../tests/support/redisServer';
import type { AgentEventLog } from './AgentEventLog';
import { createAgentHost } from './createAgentHost';
import { createMemoryEventLog } from './createMemoryEventLog';
import { createRedisEventLog } from './redis/createRedisEventLog';

/** Deltas of the fast run: 1,200 of 16 KB, about 19 MB, written as fast as the host takes them. */
const DELTAS = 1_200;
const DELTA = 'w'.repeat(16_000);
/** The fast run's events: run.started, the user's message (started, completed), the answer's, run.completed. */
const FAST_EVENTS = DELTAS + 6;
const SLOW_READER_MS = 3_000;
const FRAME_MS = 100;
/** Far below what the run writes: the reader is hundreds of times the queue and the feed behind. */
const MAX_QUEUED_BYTES = 65_536;
const FEED_CAPACITY = 16;
/** The clock's own setTimeout, taken before any test fakes it. */
const realSetTimeout = globalThis.setTimeout;

const providers = {
  answer: createLocalAgentProvider({ script: { steps: [{ type: 'text', deltas: ['Caught ', 'up.'] }] } }),
  fast: createLocalAgentProvider({
    script: { steps: [{ type: 'text', deltas: Array.from({ length: DELTAS }, () => DELTA) }] },
  }),
};

const terminalOf = (runId: string) => (frame: ReadFrame) =>
  frame.event === undefined &&
  new RegExp(`"type":"run\\.(completed|failed|cancelled)","[^}]*"runId":"${runId}"`).test(frame.data);

/** Lets the host and the sockets do what is due now (I/O callbacks, not timers). */
async function settle(turns = 50): Promise<void> {
  for (let turn = 0; turn < turns; turn += 1) await new Promise((resolve) => setImmediate(resolve));
}

function describeReaderPace(name: string, open: () => Promise<AgentEventLog>) {
  describe(`${name} log`, () => {
    const cleanups: Array<() => Promise<void>> = [];
    afterEach(async () => {
      vi.useRealTimers();
      for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
    });

    /** A host whose session `s` already has one run, and the cursor after it. */
    async function start(sessionId: string) {
      const log = await open();
      const host = createAgentHost({
        providers,
        eventLog: log,
        feedCapacity: FEED_CAPACITY,
        maxQueuedBytes: MAX_QUEUED_BYTES,
        maxCatchUpReaders: 1,
        slowReaderMs: SLOW_READER_MS,
        onError: () => {},
      });
      const served: ServedHost = await serveHost(host.fetch);
      cleanups.push(async () => {
        await served.close();
        await host.close();
        await log.close();
      });
      const base = `${served.url}/sessions/${sessionId}`;
      await host.startRun(sessionId, { provider: 'answer', input: {}, runId: 'r0' });
      const first = await readEvents(`${base}/events?runId=r0`, { stop: (frames) => frames.some(terminalOf('r0')) });
      return { host, base, cursor: first.frames.at(-1)?.id as string };
    }

    /**
     * Opens the session's stream after `cursor` before the fast run starts, and leaves it
     * unread until the run has ended: the reader starts its reading a whole run behind.
     */
    async function behindAWholeRun(host: ReturnType<typeof createAgentHost>, base: string, cursor: string) {
      const path = new URL(base).pathname;
      const response = await host.fetch(
        new Request(`http://host.test${path}/events`, { headers: { 'last-event-id': cursor } }),
      );
      expect(response.status).toBe(200);
      vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
      const sessionId = base.split('/').at(-1) as string;
      await host.startRun(sessionId, { provider: 'fast', input: {}, runId: 'r1' });
      // Waits in real time: vi.waitUntil would move the fake clock on at every poll, and a run
      // slow to write (a loaded machine) would have the unread reader dropped before it reads.
      for (let waited = 0; (await host.getState(sessionId)).state.runs.r1?.status !== 'completed'; waited += 20) {
        if (waited > 60_000) throw new Error('The fast run did not complete within a minute');
        await new Promise((resolve) => realSetTimeout(resolve, 20));
      }
      return readFrames(response);
    }

    it('a reader that keeps reading, a whole fast run behind and at 160 KB/s, gets every event once, in order, and then the live ones', async () => {
      const { host, base, cursor } = await start('p1');
      const frames = await behindAWholeRun(host, base, cursor);
      const received: ReadFrame[] = [];
      for (let next = await frames.next(); !next.done; next = await frames.next()) {
        received.push(next.value);
        vi.advanceTimersByTime(FRAME_MS);
        if (terminalOf('r1')(next.value) || next.value.event !== undefined) break;
        if (received.length > FAST_EVENTS + 10) break;
      }
      expect(received.filter((frame) => frame.event !== undefined)).toEqual([]);
      // Far longer than slowReaderMs went by for this reader while it read, and it was never dropped.
      expect(received.length * FRAME_MS).toBeGreaterThan(30 * SLOW_READER_MS);
      const events = received.map(
        (frame) => JSON.parse(frame.data) as { runId: string; sequence: number; type: string },
      );
      expect(events.map((event) => event.sequence)).toEqual(
        Array.from({ length: FAST_EVENTS }, (_, index) => index + 1),
      );
      expect(events.every((event) => event.runId === 'r1')).toBe(true);
      expect(events.at(-1)?.type).toBe('run.completed');
      expect(new Set(received.map((frame) => frame.id)).size).toBe(FAST_EVENTS);

      // Caught up: it gave back its place among the readers catching up (there is one), and the
      // same stream goes on with the next run, live.
      const readR1 = () =>
        readEvents(`${base}/events?runId=r1`, { stop: (read) => read.some(terminalOf('r1')), timeoutMs: 60_000 });
      // The stream reaches the log's edge at its next read, a moment after its last frame came.
      let other = await readR1();
      for (let attempt = 0; other.status === 503 && attempt < 100; attempt += 1) {
        await settle();
        other = await readR1();
      }
      expect([other.status, other.events.length]).toEqual([200, FAST_EVENTS]);
      await host.startRun('p1', { provider: 'answer', input: {}, runId: 'r2' });
      const live: ReadFrame[] = [];
      for (let next = await frames.next(); !next.done; next = await frames.next()) {
        if (next.value.event !== undefined || next.value.data.includes('"runId":"r2"')) live.push(next.value);
        if (terminalOf('r2')(next.value) || next.value.event !== undefined || live.length > 20) break;
      }
      await frames.return(undefined);
      expect(live.map((frame) => (JSON.parse(frame.data) as { type: string }).type)).toEqual([
        'run.started',
        'message.started',
        'message.completed',
        'message.started',
        'message.delta',
        'message.delta',
        'message.completed',
        'run.completed',
      ]);
    });

    it('a reader that stops reading for slowReaderMs is dropped with its cursor, the last event it was sent', async () => {
      const { host, base, cursor } = await start('d1');
      const frames = await behindAWholeRun(host, base, cursor);
      // It reads 100 frames at once (the reader's clock stands still: however long the log
      // takes to give them on a loaded machine, no time passes for the host's timers)...
      const received: ReadFrame[] = [];
      while (received.length < 100) {
        const next = await frames.next();
        if (next.done) break;
        received.push(next.value);
      }
      // ...then stops reading: the host fills what it may queue, then the reader's clock runs on.
      for (let turn = 0; turn < 20; turn += 1) {
        await settle(200);
        vi.advanceTimersByTime(SLOW_READER_MS);
      }
      for (let next = await frames.next(); !next.done; next = await frames.next()) {
        received.push(next.value);
        if (next.value.event !== undefined || terminalOf('r1')(next.value)) break;
      }
      const last = received.at(-1) as ReadFrame;
      expect(last.event).toBe('dropped');
      const events = received.slice(0, -1);
      expect(JSON.parse(last.data)).toEqual({ cursor: events.at(-1)?.id });
      // Far from all of it, and what came is every event from the first, once and in order.
      expect(events.length).toBeGreaterThanOrEqual(100);
      expect(events.length).toBeLessThan(FAST_EVENTS / 2);
      const sequences = events.map((frame) => (JSON.parse(frame.data) as { sequence: number }).sequence);
      expect(sequences).toEqual(Array.from({ length: events.length }, (_, index) => index + 1));
    });
  });
}

// Large enough for the whole fast run: what a reader behind it reads is still in the log.
const SESSION_BYTES = 64 * 1024 * 1024;

describeReaderPace('memory', async () => createMemoryEventLog({ maxBytesPerSession: SESSION_BYTES }));

describeWithRedis('redis', () => {
  let redis: TestRedisServer;
  let prefixes = 0;
  beforeAll(async () => {
    redis = await startRedisServer();
  });
  afterAll(async () => {
    await redis?.stop();
  });
  // The reader's clock moves setTimeout: a Redis command must not time out by it while the reader reads.
  describeReaderPace('redis', async () =>
    createRedisEventLog({
      url: redis.url,
      keyPrefix: `pace${++prefixes}:`,
      maxBytesPerSession: SESSION_BYTES,
      commandTimeoutMs: 600_000,
    }),
  );
});
