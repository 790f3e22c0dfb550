import { afterEach, describe, expect, it } from 'vitest';
import type { AgentEvent } from '../protocol/eventSchemas';
import { runEvents } from '../tests/support/events';
import type { AgentEventLog } from './AgentEventLog';
import { createMemoryEventLog } from './createMemoryEventLog';
import { SessionFeed } from './SessionFeed';

/** A memory log that counts the reads that reach it. */
function countingLog() {
  const log = createMemoryEventLog();
  const calls = { read: 0, follow: 0 };
  const counted: AgentEventLog = {
    ...log,
    read: (sessionId, options) => {
      calls.read += 1;
      return log.read(sessionId, options);
    },
    follow: (sessionId, options) => {
      calls.follow += 1;
      return log.follow(sessionId, options);
    },
  };
  return { log: counted, calls, close: () => log.close() };
}

function deltas(count: number, from = 0): AgentEvent[] {
  const events = runEvents('r1', 's1', from);
  return Array.from({ length: count }, (_, index) =>
    events.create('message.delta', { messageId: 'm1', delta: `d${from + index}` }),
  );
}

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

describe('SessionFeed', () => {
  it('serves many readers at the live edge from one read of the log, each frame encoded once', async () => {
    const { log, calls, close } = countingLog();
    closers.push(close);
    const [edge] = await log.append('s1', deltas(1));
    const feed = new SessionFeed(log, 's1', { capacity: 100, pageSize: 50, followMs: 1_000 });
    const readers = Array.from({ length: 50 }, () => {
      feed.acquire();
      return feed.read(edge, 50, 2_000);
    });
    await new Promise((resolve) => setTimeout(resolve, 20));
    const before = { ...calls };
    await log.append('s1', deltas(10, 1));
    const pages = await Promise.all(readers);
    expect(pages.map((page) => page.length)).toEqual(Array(50).fill(10));
    expect(pages[0]?.map((entry) => entry.cursor)).toEqual(Array.from({ length: 10 }, (_, i) => String(i + 2)));
    // The same frame objects for every reader: encoded once.
    expect(new Set(pages.map((page) => page[0])).size).toBe(1);
    expect(pages[0]?.[0]?.frame).toBe(`id: 2\ndata: ${JSON.stringify(deltas(10, 1)[0])}\n\n`);
    // After they all waited: no reader read the log itself; the feed's one follow woke them all.
    expect(calls.read - before.read).toBe(0);
    expect(calls.follow - before.follow).toBeLessThanOrEqual(2);
    for (let index = 0; index < 50; index += 1) feed.release();
  });

  it('a reader behind the window reads the log itself, and joins the window once it catches up', async () => {
    const { log, calls, close } = countingLog();
    closers.push(close);
    const cursors = await log.append('s1', deltas(5));
    const feed = new SessionFeed(log, 's1', { capacity: 4, pageSize: 2, followMs: 1_000 });
    feed.acquire();
    // Someone at the edge starts the feed there; ten more events fill and roll its window of four.
    const waiting = feed.read(cursors[4], 2, 1_000);
    await new Promise((resolve) => setTimeout(resolve, 10));
    await log.append('s1', deltas(10, 5));
    await waiting;
    await new Promise((resolve) => setTimeout(resolve, 20));
    const readsBefore = calls.read;
    // A reader at the session's third event: behind the window, so from the log.
    const behind = await feed.read(cursors[2], 2, 0);
    expect(behind.map((entry) => entry.cursor)).toEqual(['4', '5']);
    expect(calls.read).toBe(readsBefore + 1);
    // At the window's last four events: from the feed, no read of the log.
    const near = await feed.read('12', 2, 0);
    expect(near.map((entry) => entry.cursor)).toEqual(['13', '14']);
    expect(calls.read).toBe(readsBefore + 1);
    feed.release();
  });

  it('stops reading the log and drops its window when the last reader leaves', async () => {
    const { log, calls, close } = countingLog();
    closers.push(close);
    const [edge] = await log.append('s1', deltas(1));
    let unused = 0;
    const feed = new SessionFeed(log, 's1', { capacity: 10, pageSize: 10, followMs: 50 }, () => {
      unused += 1;
    });
    feed.acquire();
    await feed.read(edge, 10, 60);
    feed.release();
    expect(unused).toBe(1);
    const follows = calls.follow;
    await new Promise((resolve) => setTimeout(resolve, 150));
    expect(calls.follow).toBeLessThanOrEqual(follows + 1);
  });

  it('rejects a cursor outside its window as the log does', async () => {
    const { log, close } = countingLog();
    closers.push(close);
    await log.append('s1', deltas(2));
    const feed = new SessionFeed(log, 's1', { capacity: 10, pageSize: 10, followMs: 50 });
    feed.acquire();
    await expect(feed.read('not-a-cursor', 10, 0)).rejects.toMatchObject({ code: 'invalid_cursor' });
    feed.release();
  });
});
