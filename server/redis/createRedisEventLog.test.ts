import { setMaxListeners } from 'node:events';
import { createClient } from 'redis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { AgentEvent } from '../../protocol/eventSchemas';
import { describeAgentEventLogContract } from '../../tests/support/eventLogContract';
import { runEvents } from '../../tests/support/events';
import { readEvents, serveHost } from '../../tests/support/hostClient';
import { describeWithRedis, startRedisServer, type TestRedisServer } from '../../tests/support/redisServer';
import type { AgentEventLog } from '../AgentEventLog';
import { AgentEventLogError } from '../AgentEventLogError';
import { createAgentHost } from '../createAgentHost';
import { createRedisEventLog, type RedisEventLogOptions } from './index';
import { compareCursors as compareIds } from './redisCursors';

let redis: TestRedisServer;
let prefixes = 0;
/** A key prefix no other test of this file uses: each test has its own keyspace. */
const uniquePrefix = () => `test${++prefixes}:`;

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** `count` message deltas of one run (the first is `run.started`). */
function eventsOf(sessionId: string, count: number): AgentEvent[] {
  const events = runEvents('r1', sessionId);
  return Array.from({ length: count }, (_, index) =>
    index === 0
      ? events.create('run.started', {})
      : events.create('message.delta', { messageId: 'answer', delta: `part ${index}` }),
  );
}

async function rejection(promise: Promise<unknown>): Promise<AgentEventLogError> {
  try {
    await promise;
  } catch (error) {
    if (AgentEventLogError.isInstance(error)) return error;
    throw error;
  }
  throw new Error('it resolved');
}

describeWithRedis('createRedisEventLog', () => {
  beforeAll(async () => {
    redis = await startRedisServer();
  });
  afterAll(async () => {
    await redis?.stop();
  });

  describeAgentEventLogContract(
    'redis',
    async () => {
      const options: RedisEventLogOptions = {
        url: redis.url,
        keyPrefix: uniquePrefix(),
        maxEntriesPerSession: 20,
        maxBytesPerSession: 40_000,
        exactTrim: true,
      };
      const log = createRedisEventLog(options);
      const peers: AgentEventLog[] = [];
      return {
        log,
        peer: async () => {
          const peer = createRedisEventLog(options);
          peers.push(peer);
          return peer;
        },
        cleanup: async () => {
          await Promise.all([log, ...peers].map((opened) => opened.close()));
        },
      };
    },
    { maxEntriesPerSession: 20, maxBytesPerSession: 40_000 },
  );

  const opened: AgentEventLog[] = [];
  let adminClient: ReturnType<typeof createClient>;

  beforeAll(async () => {
    adminClient = createClient({ url: redis.url });
    await adminClient.connect();
  });
  afterAll(async () => {
    await adminClient?.close();
  });
  afterEach(async () => {
    await Promise.all(opened.splice(0).map((log) => log.close()));
  });

  function open(options: Omit<RedisEventLogOptions, 'url' | 'keyPrefix'> = {}) {
    const keyPrefix = uniquePrefix();
    const log = createRedisEventLog({ url: redis.url, keyPrefix, ...options });
    opened.push(log);
    return { log, keyPrefix };
  }

  async function connectionCount(): Promise<number> {
    const list = await adminClient.sendCommand<string>(['CLIENT', 'LIST']);
    return list.split('\n').filter((line) => line.startsWith('id=')).length;
  }

  /** Connections whose CLIENT SETNAME is `name`. */
  async function connectionsNamed(name: string): Promise<number> {
    const list = await adminClient.sendCommand<string>(['CLIENT', 'LIST']);
    return list.split('\n').filter((line) => line.includes(` name=${name} `)).length;
  }

  /** Waits until a follow connection is blocked in its XREAD (flag b): a follower is waiting. */
  async function untilFollowerBlocks(): Promise<void> {
    const blocked = (line: string) => line.includes(' name=agent-machines-follow ') && / flags=\w*b/.test(line);
    while (!(await adminClient.sendCommand<string>(['CLIENT', 'LIST'])).split('\n').some(blocked)) await sleep(2);
  }

  it('approximate trimming (the default) keeps at least maxEntriesPerSession; a reader behind the trim gets cursor_expired', async () => {
    const { log, keyPrefix } = open({ maxEntriesPerSession: 10 });
    const events = eventsOf('s1', 400);
    const cursors = [...(await log.append('s1', events.slice(0, 200))), ...(await log.append('s1', events.slice(200)))];
    const retained = await log.read('s1', { limit: 1_000 });
    expect(retained.length).toBeGreaterThanOrEqual(10);
    expect(retained.length).toBeLessThan(400);
    expect(retained.map((entry) => entry.cursor)).toEqual(cursors.slice(400 - retained.length));
    expect(await adminClient.xLen(`${keyPrefix}{s1}:events`)).toBe(retained.length);
    expect((await rejection(log.read('s1', { after: cursors[0], limit: 10 }))).code).toBe('cursor_expired');
    // After the last trimmed entry, nothing was lost: the read goes on.
    const lastTrimmed = cursors[400 - retained.length - 1];
    expect(await log.read('s1', { after: lastTrimmed, limit: 2 })).toEqual(retained.slice(0, 2));
  });

  it('tells a trimmed gap from a contiguous read exactly, within one batch and across batches', async () => {
    const { log } = open({ maxEntriesPerSession: 3, exactTrim: true });
    const events = eventsOf('s1', 6);
    const cursors: string[] = [];
    for (const event of events.slice(0, 3)) cursors.push(...(await log.append('s1', [event])));
    cursors.push(...(await log.append('s1', events.slice(3))));
    // Kept: 3, 4, 5. Trimmed: 0, 1, 2.
    for (const index of [0, 1]) {
      expect((await rejection(log.read('s1', { after: cursors[index], limit: 10 }))).code).toBe('cursor_expired');
    }
    expect((await log.read('s1', { after: cursors[2], limit: 10 })).map((entry) => entry.cursor)).toEqual(
      cursors.slice(3),
    );
    expect((await log.read('s1', { after: cursors[3], limit: 1 })).map((entry) => entry.cursor)).toEqual([cursors[4]]);
    expect(await log.read('s1', { after: cursors[5], limit: 10 })).toEqual([]);
  });

  it('a session that expired and started again: its old cursors are cursor_expired, the new ones read on', async () => {
    const { log, keyPrefix } = open();
    const [old] = await log.append('s1', eventsOf('s1', 1));
    await adminClient.del(`${keyPrefix}{s1}:events`);
    await sleep(2);
    const fresh = await log.append('s1', eventsOf('s1', 2));
    expect((await rejection(log.read('s1', { after: old, limit: 10 }))).code).toBe('cursor_expired');
    expect((await log.read('s1', { after: fresh[0], limit: 10 })).map((entry) => entry.cursor)).toEqual([fresh[1]]);
  });

  describe('an append lost in a failover (acknowledged, not replicated: XDEL of the newest entries here) is a gap, never silence', () => {
    async function withLostTail(log: AgentEventLog, keyPrefix: string) {
      const cursors = await log.append('s1', eventsOf('s1', 5));
      // The old master acknowledged 3 and 4; the promoted replica never had them.
      await adminClient.xDel(`${keyPrefix}{s1}:events`, [cursors[3]!, cursors[4]!]);
      return cursors;
    }

    it('a reader at a lost cursor gets cursor_expired, before and after the next append; one before it reads on', async () => {
      const { log, keyPrefix } = open();
      const cursors = await withLostTail(log, keyPrefix);
      // At the newest cursor the log gave: nothing after it yet (its next append follows it).
      expect(await log.read('s1', { after: cursors[4], limit: 10 })).toEqual([]);
      expect((await rejection(log.read('s1', { after: cursors[3], limit: 10 }))).code).toBe('cursor_expired');
      expect((await rejection(log.follow('s1', { after: cursors[3], limit: 10, timeoutMs: 5_000 }))).message).toContain(
        'lost',
      );
      // Another host's log never gave them: past the newest is all it can tell, until an append.
      const other = createRedisEventLog({ url: redis.url, keyPrefix });
      opened.push(other);
      expect((await rejection(other.read('s1', { after: cursors[4], limit: 10 }))).code).toBe('invalid_cursor');
      const [next] = await other.append('s1', eventsOf('s1', 1));
      // The new entry follows cursors[2]: a reader at 3 or 4 is not in the chain.
      for (const log_ of [log, other]) {
        for (const index of [3, 4]) {
          expect((await rejection(log_.read('s1', { after: cursors[index], limit: 10 }))).code).toBe('cursor_expired');
        }
        expect((await log_.read('s1', { after: cursors[2], limit: 10 })).map((entry) => entry.cursor)).toEqual([next]);
      }
    });

    it('the log that gave the lost entries chains its next append to them: readers before them get cursor_expired, one at the newest reads on', async () => {
      const { log, keyPrefix } = open();
      const cursors = await withLostTail(log, keyPrefix);
      const reader = createRedisEventLog({ url: redis.url, keyPrefix });
      opened.push(reader);
      // A follower at the newest given cursor waits; the append after the failover wakes it.
      const waiting = log.follow('s1', { after: cursors[4], limit: 10, timeoutMs: 10_000 });
      const [next] = await log.append('s1', eventsOf('s1', 1));
      expect((await waiting).map((entry) => entry.cursor)).toEqual([next]);
      expect(compareIds(next!, cursors[4]!)).toBeGreaterThan(0);
      expect((await reader.read('s1', { after: cursors[4], limit: 10 })).map((entry) => entry.cursor)).toEqual([next]);
      // Readers at 2 or 3 would miss 3 or 4: a gap, for read and follow, on every log.
      for (const log_ of [log, reader]) {
        for (const index of [2, 3]) {
          expect((await rejection(log_.read('s1', { after: cursors[index], limit: 10 }))).code).toBe('cursor_expired');
          expect(
            (await rejection(log_.follow('s1', { after: cursors[index], limit: 10, timeoutMs: 5_000 }))).code,
          ).toBe('cursor_expired');
        }
        expect((await log_.read('s1', { after: cursors[1], limit: 1 })).map((entry) => entry.cursor)).toEqual([
          cursors[2],
        ]);
      }
    });

    it('a host answers a reader resuming at a lost cursor with 410 cursor_expired, and one at the newest with what follows', async () => {
      const { log, keyPrefix } = open();
      const cursors = await withLostTail(log, keyPrefix);
      const host = createAgentHost({ eventLog: log, providers: {}, onError: () => {} });
      const served = await serveHost(host.fetch);
      try {
        const events = (cursor: string) =>
          fetch(`${served.url}/sessions/s1/events`, { headers: { 'last-event-id': cursor } });
        const lost = await events(cursors[3]!);
        expect(lost.status).toBe(410);
        expect(((await lost.json()) as { error: { code: string } }).error.code).toBe('cursor_expired');
        const [next] = await log.append('s1', eventsOf('s1', 1));
        const newest = await readEvents(`${served.url}/sessions/s1/events`, {
          headers: { 'last-event-id': cursors[4]! },
          stop: (frames) => frames.some((frame) => frame.id === next),
        });
        expect(newest.frames.filter((frame) => frame.event === undefined).map((frame) => frame.id)).toEqual([next]);
      } finally {
        await served.close();
        await host.close();
      }
    });

    it('a deleted entry in the middle is a gap for the reader before it only', async () => {
      const { log, keyPrefix } = open();
      const cursors = await log.append('s1', eventsOf('s1', 4));
      await adminClient.xDel(`${keyPrefix}{s1}:events`, [cursors[2]!]);
      expect((await rejection(log.read('s1', { after: cursors[1], limit: 10 }))).code).toBe('cursor_expired');
      expect((await log.read('s1', { after: cursors[2], limit: 10 })).map((entry) => entry.cursor)).toEqual([
        cursors[3],
      ]);
    });
  });

  it('cursors are stream ids: other spellings of the same id read the same; ids out of range are invalid_cursor', async () => {
    const { log } = open();
    const cursors = await log.append('s1', eventsOf('s1', 3));
    const [milliseconds, sequence] = cursors[0]!.split('-');
    expect(await log.read('s1', { after: `0${milliseconds}-0${sequence}`, limit: 10 })).toEqual(
      await log.read('s1', { after: cursors[0], limit: 10 }),
    );
    for (const after of ['0-0', '18446744073709551616-0', '18446744073709551615-18446744073709551615', '1-2-3']) {
      expect((await rejection(log.read('s1', { after, limit: 10 }))).code, after).toBe('invalid_cursor');
    }
    // Past the newest entry (of its millisecond: the three may straddle one on a loaded machine).
    const [newestMilliseconds] = cursors[2]!.split('-');
    expect((await rejection(log.read('s1', { after: `${newestMilliseconds}-99999999999`, limit: 10 }))).code).toBe(
      'invalid_cursor',
    );
  });

  it("every key of a session carries the session's hash tag and expires: appends and renewals refresh it", async () => {
    const { log, keyPrefix } = open({ sessionTtlSeconds: 100 });
    const [cursor] = await log.append('s:1', eventsOf('s:1', 1));
    await log.saveSnapshot('s:1', { state: { ok: true }, cursor: cursor! });
    await log.claimRun('s:1', 'r1', 'host-a', 60_000);
    await log.claimRun('s:1', 'r2', 'host-a', 60_000);
    await log.releaseRun('s:1', 'r2', 'host-a');
    await log.claimCommand('s:1', 'k1', 'fingerprint', 30_000);
    const allKeys = (await adminClient.keys(`${keyPrefix}*`)).sort();
    // Each append batch's ids, kept a minute so a batch sent again after a dropped connection is not appended twice.
    const batchKeys = allKeys.filter((key) => key.startsWith(`${keyPrefix}{s%3A1}:appended:`));
    expect(batchKeys).toHaveLength(1);
    expect(await adminClient.pTTL(batchKeys[0]!)).toBeLessThanOrEqual(60_000);
    const keys = allKeys.filter((key) => !batchKeys.includes(key));
    expect(keys).toEqual(
      ['command:k1', 'events', 'run:r1', 'run:r2', 'snapshot'].map((name) => `${keyPrefix}{s%3A1}:${name}`),
    );
    const ttl = (name: string) => adminClient.pTTL(`${keyPrefix}{s%3A1}:${name}`);
    for (const name of ['events', 'snapshot', 'run:r2']) {
      expect(await ttl(name)).toBeGreaterThan(95_000);
      expect(await ttl(name)).toBeLessThanOrEqual(100_000);
    }
    expect(await ttl('run:r1')).toBeGreaterThan(55_000);
    expect(await ttl('run:r1')).toBeLessThanOrEqual(60_000);
    expect(await ttl('command:k1')).toBeGreaterThan(25_000);
    expect(await ttl('command:k1')).toBeLessThanOrEqual(30_000);
    for (const name of ['events', 'snapshot']) await adminClient.expire(`${keyPrefix}{s%3A1}:${name}`, 10);
    await log.append('s:1', eventsOf('s:1', 1));
    expect(await ttl('snapshot')).toBeGreaterThan(95_000);
    for (const name of ['events', 'snapshot']) await adminClient.expire(`${keyPrefix}{s%3A1}:${name}`, 10);
    expect(await log.renewRun('s:1', 'r1', 'host-a', 60_000)).toBe(true);
    expect(await ttl('events')).toBeGreaterThan(95_000);
    expect(await ttl('snapshot')).toBeGreaterThan(95_000);
  });

  it('200 followers of one session share one blocking connection, and each gets the append', async () => {
    const { log } = open();
    const [newest] = await log.append('s1', eventsOf('s1', 1));
    const connectionsBefore = await connectionCount();
    const following = Array.from({ length: 200 }, () =>
      log.follow('s1', { after: newest, limit: 10, timeoutMs: 5_000 }),
    );
    // Every follower has read and waits once the blocking connection is open.
    for (let waited = 0; waited < 2_000 && (await connectionsNamed('agent-machines-follow')) === 0; waited += 20) {
      await sleep(20);
    }
    await sleep(50);
    expect(await connectionsNamed('agent-machines-follow')).toBe(1);
    expect((await connectionCount()) - connectionsBefore).toBe(1);
    const events = eventsOf('s1', 3).slice(1);
    const cursors = await log.append('s1', events);
    const results = await Promise.all(following);
    for (const entries of results) expect(entries.map((entry) => entry.cursor)).toEqual(cursors);
    expect(await connectionsNamed('agent-machines-follow')).toBe(1);
  });

  it('followers reading in loops while appends land on many sessions see every entry once, in order', async () => {
    const { log } = open({ maxBlockingConnections: 3 });
    const sessions = Array.from({ length: 8 }, (_, index) => `s${index}`);
    const stop = new AbortController();
    // Every loop waits on this one signal: 24 listeners at once, each removed as its wait ends.
    setMaxListeners(sessions.length * 3, stop.signal);
    const seen = new Map<string, string[][]>(sessions.map((sessionId) => [sessionId, [[], [], []]]));
    const followLoop = async (sessionId: string, into: string[]) => {
      let after: string | undefined;
      while (!stop.signal.aborted) {
        const entries = await log.follow(sessionId, { after, limit: 4, timeoutMs: 2_000, signal: stop.signal });
        for (const entry of entries) into.push(entry.cursor);
        after = entries.at(-1)?.cursor ?? after;
      }
    };
    const loops = sessions.flatMap((sessionId) => seen.get(sessionId)!.map((into) => followLoop(sessionId, into)));
    const appended = new Map<string, string[]>(sessions.map((sessionId) => [sessionId, []]));
    for (let round = 0; round < 40; round += 1) {
      const sessionId = sessions[(round * 5) % sessions.length]!;
      const cursors = await log.append(sessionId, eventsOf(sessionId, 1 + (round % 3)));
      appended.get(sessionId)!.push(...cursors);
      if (round % 4 === 0) await sleep(5);
    }
    const deadline = Date.now() + 3_000;
    const caughtUp = () =>
      sessions.every((sessionId) =>
        seen.get(sessionId)!.every((cursors) => cursors.length === appended.get(sessionId)!.length),
      );
    while (!caughtUp() && Date.now() < deadline) await sleep(10);
    stop.abort();
    await Promise.all(loops);
    for (const sessionId of sessions) {
      for (const cursors of seen.get(sessionId)!) expect(cursors).toEqual(appended.get(sessionId));
    }
    expect(await connectionsNamed('agent-machines-follow')).toBeLessThanOrEqual(3);
  });

  it('close drops its blocking and pub/sub connections', async () => {
    const { log } = open();
    const [cursor] = await log.append('s1', eventsOf('s1', 1));
    const following = log.follow('s1', { after: cursor, limit: 10, timeoutMs: 2_000 });
    const stopListening = await log.listen('host-a', () => {});
    await sleep(50);
    expect(await connectionsNamed('agent-machines-follow')).toBe(1);
    expect(await connectionsNamed('agent-machines-subscriber')).toBe(1);
    await log.close();
    expect(await following).toEqual([]);
    await stopListening();
    const deadline = Date.now() + 1_000;
    while (
      (await connectionsNamed('agent-machines-follow')) + (await connectionsNamed('agent-machines-subscriber')) >
      0
    ) {
      expect(Date.now()).toBeLessThan(deadline);
      await sleep(10);
    }
  });

  it('followers of a session at different cursors each get what follows their own cursor', async () => {
    const { log } = open();
    const first = await log.append('s1', eventsOf('s1', 2));
    const behind = log.follow('s1', { after: first[0], limit: 10, timeoutMs: 2_000 });
    const atTip = log.follow('s1', { after: first[1], limit: 10, timeoutMs: 2_000 });
    const fromStart = log.follow('s2', { limit: 1, timeoutMs: 2_000 });
    expect((await behind).map((entry) => entry.cursor)).toEqual([first[1]]);
    await sleep(50);
    const next = await log.append('s1', eventsOf('s1', 2));
    const s2 = await log.append('s2', eventsOf('s2', 3));
    expect((await atTip).map((entry) => entry.cursor)).toEqual(next);
    expect((await fromStart).map((entry) => entry.cursor)).toEqual([s2[0]]);
  });

  it('followers woken by appends of large entries get pages within maxBytes (one entry at least), and every entry once, in order', async () => {
    const { log } = open();
    const [first] = await log.append('s1', eventsOf('s1', 1));
    const maxBytes = 64 * 1024;
    // 16 KB events: a page of 1 000 would be 16 MB.
    const events = runEvents('r1', 's1', 1);
    const bigEvents = (count: number, bytes: number) =>
      Array.from({ length: count }, () =>
        events.create('message.delta', { messageId: 'answer', delta: 'x'.repeat(bytes) }),
      );
    const sizes = new Map<string, number>();
    const appended: string[] = [];
    const append = async (batch: AgentEvent[]) => {
      const cursors = await log.append('s1', batch);
      for (const [index, cursor] of cursors.entries()) sizes.set(cursor, JSON.stringify(batch[index]).length);
      appended.push(...cursors);
    };
    const bytesOf = (entries: readonly { cursor: string }[]) =>
      entries.reduce((sum, entry) => sum + (sizes.get(entry.cursor) ?? Number.NaN), 0);

    const received: string[] = [];
    let after = first;
    for (let round = 0; round < 3; round += 1) {
      // Two followers wait after the same cursor, one of them without a byte bound.
      const bounded = log.follow('s1', { after, limit: 1_000, maxBytes, timeoutMs: 5_000 });
      const unbounded = log.follow('s1', { after, limit: 1_000, timeoutMs: 5_000 });
      while ((await connectionsNamed('agent-machines-follow')) === 0) await sleep(5);
      await append(bigEvents(20, 16_000));
      const page = await bounded;
      expect(page.length).toBeGreaterThan(1);
      expect(bytesOf(page)).toBeLessThanOrEqual(maxBytes);
      expect((await unbounded).map((entry) => entry.cursor).slice(0, page.length)).toEqual(
        page.map((entry) => entry.cursor),
      );
      // The rest, read on by a follower page after page.
      received.push(...page.map((entry) => entry.cursor));
      after = page.at(-1)!.cursor;
      while (after !== appended.at(-1)) {
        const next = await log.follow('s1', { after, limit: 1_000, maxBytes, timeoutMs: 5_000 });
        expect(bytesOf(next)).toBeLessThanOrEqual(maxBytes);
        received.push(...next.map((entry) => entry.cursor));
        after = next.at(-1)!.cursor;
      }
    }
    expect(received).toEqual(appended);

    // An entry larger than the bound comes alone, to a waiting follower too.
    const waiting = log.follow('s1', { after, limit: 1_000, maxBytes, timeoutMs: 30_000 });
    await untilFollowerBlocks();
    await append(bigEvents(3, 100_000));
    expect((await waiting).map((entry) => entry.cursor)).toEqual(appended.slice(-3, -2));
  });

  it('more sessions than maxBlockingConnections share the connections, and each is woken promptly', async () => {
    const { log } = open({ maxBlockingConnections: 2 });
    const sessions = ['a', 'b', 'c', 'd', 'e', 'f'];
    const newest = new Map<string, string>();
    for (const sessionId of sessions) newest.set(sessionId, (await log.append(sessionId, eventsOf(sessionId, 1)))[0]!);
    const following = sessions.map((sessionId) =>
      log.follow(sessionId, { after: newest.get(sessionId), limit: 10, timeoutMs: 5_000 }),
    );
    await sleep(50);
    expect(await connectionsNamed('agent-machines-follow')).toBe(2);
    for (const [index, sessionId] of sessions.entries()) {
      const started = Date.now();
      const cursors = await log.append(sessionId, eventsOf(sessionId, 2).slice(1));
      expect((await following[index]!).map((entry) => entry.cursor)).toEqual(cursors);
      // Well inside the 1 s block window: the XREAD in flight was interrupted for it.
      expect(Date.now() - started).toBeLessThan(800);
    }
  });

  it('a session that starts being followed while the connection blocks on others is watched at once', async () => {
    const { log } = open({ maxBlockingConnections: 1 });
    const [a] = await log.append('a', eventsOf('a', 1));
    const [b] = await log.append('b', eventsOf('b', 1));
    const followingA = log.follow('a', { after: a, limit: 10, timeoutMs: 3_000 });
    await sleep(100);
    const followingB = log.follow('b', { after: b, limit: 10, timeoutMs: 3_000 });
    await sleep(20);
    const started = Date.now();
    const cursors = await log.append('b', eventsOf('b', 2).slice(1));
    expect((await followingB).map((entry) => entry.cursor)).toEqual(cursors);
    expect(Date.now() - started).toBeLessThan(800);
    await log.append('a', eventsOf('a', 2).slice(1));
    expect(await followingA).toHaveLength(1);
  });

  it('a follower that follows again from what it was given, before the next append, finds its session still watched', async () => {
    const { log } = open({ maxBlockingConnections: 1 });
    const unblocks = async () => {
      const stats = await adminClient.sendCommand<string>(['INFO', 'commandstats']);
      return Number(/cmdstat_client\|unblock:calls=(\d+)/.exec(stats)?.[1] ?? 0);
    };
    const [other] = await log.append('other', eventsOf('other', 1));
    const followingOther = log.follow('other', { after: other, limit: 10, timeoutMs: 3_000 });
    let [after] = await log.append('s1', eventsOf('s1', 1));
    const followOnce = async () => {
      const following = log.follow('s1', { after, limit: 10, timeoutMs: 2_000 });
      // The follower is waiting before the next append comes (an append racing its read may
      // find its session let go, and cost one UNBLOCK).
      await sleep(10);
      const [appended] = await log.append('s1', eventsOf('s1', 2).slice(1));
      expect((await following).map((entry) => entry.cursor)).toEqual([appended]);
      after = appended;
    };
    // The first follow of s1 joins a connection blocking on `other` only: that one interrupts.
    await sleep(50);
    await followOnce();
    await sleep(150);
    const before = await unblocks();
    for (let round = 0; round < 10; round += 1) await followOnce();
    // A session let go after each follow would cost an UNBLOCK every round (10); on a loaded
    // machine an append can still race one follower's read past the 10 ms pause (one UNBLOCK).
    expect((await unblocks()) - before).toBeLessThanOrEqual(2);
    await log.append('other', eventsOf('other', 2).slice(1));
    expect(await followingOther).toHaveLength(1);
  });

  it('a corrupted entry or record rejects with unavailable naming its key, and does not throw elsewhere', async () => {
    const { log, keyPrefix } = open();
    await log.append('s1', eventsOf('s1', 1));
    const eventsKey = `${keyPrefix}{s1}:events`;
    await adminClient.xAdd(eventsKey, '*', { prev: '0-1', event: '{"not":"an event"}' });
    const error = await rejection(log.read('s1', { limit: 10 }));
    expect(error.code).toBe('unavailable');
    expect(error.message).toContain(eventsKey);
    await adminClient.set(`${keyPrefix}{s1}:command:k1`, 'not json');
    const recordError = await rejection(log.claimCommand('s1', 'k1', 'fingerprint', 1_000));
    expect(recordError.code).toBe('unavailable');
    expect(recordError.message).toContain(`${keyPrefix}{s1}:command:k1`);
  });

  it('a client given to it is shared, not closed: close() leaves it open', async () => {
    const client = createClient({ url: redis.url, RESP: 3 });
    await client.connect();
    const log = createRedisEventLog({ client, keyPrefix: uniquePrefix() });
    const [cursor] = await log.append('s1', eventsOf('s1', 1));
    const following = log.follow('s1', { after: cursor, limit: 10, timeoutMs: 2_000 });
    await sleep(20);
    const [next] = await log.append('s1', eventsOf('s1', 2).slice(1));
    expect((await following).map((entry) => entry.cursor)).toEqual([next]);
    const stop = await log.listen('host-a', () => {});
    await stop();
    await log.close();
    expect(client.isOpen).toBe(true);
    expect(await client.ping()).toBe('PONG');
    await client.close();
  });

  it('Redis going away rejects pending and later calls with unavailable, within a bound, instead of hanging', async () => {
    const doomed = await startRedisServer();
    // Calls that running twice cannot harm wait this long for Redis to come back, each.
    const log = createRedisEventLog({ url: doomed.url, keyPrefix: uniquePrefix(), reconnectWithinMs: 1_000 });
    opened.push(log);
    try {
      const [cursor] = await log.append('s1', eventsOf('s1', 1));
      const following = rejection(log.follow('s1', { after: cursor, limit: 10, timeoutMs: 10_000 }));
      await sleep(50);
      const started = Date.now();
      await doomed.stop();
      expect((await following).code).toBe('unavailable');
      expect((await rejection(log.read('s1', { limit: 10 }))).code).toBe('unavailable');
      expect((await rejection(log.append('s1', eventsOf('s1', 1)))).code).toBe('unavailable');
      expect((await rejection(log.listen('host-a', () => {}))).code).toBe('unavailable');
      expect(Date.now() - started).toBeLessThan(8_000);
      const closing = Date.now();
      await log.close();
      expect(Date.now() - closing).toBeLessThan(1_000);
    } finally {
      await doomed.stop();
    }
  });

  it('a CLIENT KILL of its connection does not fail its calls: they run again once it reconnects, an append only once', async () => {
    const { log } = open();
    const [first] = await log.append('s1', eventsOf('s1', 1));
    await log.claimRun('s1', 'r1', 'host-a', 60_000);
    for (const kill of [
      ['CLIENT', 'KILL', 'TYPE', 'normal'],
      ['CLIENT', 'KILL', 'ID'],
    ]) {
      if (kill[2] === 'ID') {
        const list = await adminClient.sendCommand<string>(['CLIENT', 'LIST', 'TYPE', 'normal']);
        const ids = list
          .split('\n')
          .filter((line) => line.startsWith('id=') && !line.includes(' name=agent-machines-'))
          .map((line) => /^id=(\d+)/.exec(line)![1]!);
        const own = String(await adminClient.sendCommand(['CLIENT', 'ID']));
        kill.push(...ids.filter((id) => id !== own).slice(0, 1));
      }
      // Calls in flight when the connection drops, and calls sent while it reconnects.
      const inFlight = [log.append('s1', eventsOf('s1', 2).slice(1)), log.renewRun('s1', 'r1', 'host-a', 60_000)];
      await adminClient.sendCommand(kill);
      const during = [log.read('s1', { after: first, limit: 100 }), log.runOwner('s1', 'r1')];
      const [appended, renewed] = await Promise.all(inFlight);
      expect((appended as readonly string[]).length).toBe(1);
      expect(renewed).toBe(true);
      const [read, owner] = await Promise.all(during);
      expect(Array.isArray(read)).toBe(true);
      expect(owner).toEqual({ state: 'owned', owner: 'host-a' });
    }
    // Each append is in the log once.
    const entries = await log.read('s1', { limit: 100 });
    expect(entries).toHaveLength(3);
    expect(new Set(entries.map((entry) => entry.cursor)).size).toBe(3);
  });

  it('a Redis that does not answer (CLIENT PAUSE) fails calls with unavailable after commandTimeoutMs, not never', async () => {
    const { log } = open({ commandTimeoutMs: 200 });
    await log.append('s1', eventsOf('s1', 1));
    await adminClient.sendCommand(['CLIENT', 'PAUSE', '1500', 'ALL']);
    try {
      const started = Date.now();
      const errors = await Promise.all([
        rejection(log.read('s1', { limit: 10 })),
        rejection(log.append('s1', eventsOf('s1', 2).slice(1))),
        rejection(log.runOwner('s1', 'r1')),
      ]);
      expect(errors.map((error) => error.code)).toEqual(['unavailable', 'unavailable', 'unavailable']);
      expect(errors[0]!.message).toMatch(/no answer within 200 ms/);
      expect(Date.now() - started).toBeLessThan(1_200);
    } finally {
      await adminClient.sendCommand(['CLIENT', 'UNPAUSE']);
    }
  });

  it('a log created while Redis is down rejects with unavailable after the connect bound', async () => {
    const log = createRedisEventLog({ url: 'redis://127.0.0.1:1', keyPrefix: uniquePrefix() });
    opened.push(log);
    const error = await rejection(log.lastCursor('s1'));
    expect(error.code).toBe('unavailable');
  }, 10_000);
});
