import { createClient, createCluster } from 'redis';
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { createAgentCommandFactory } from '../../protocol/createAgentCommandFactory';
import type { AgentEvent } from '../../protocol/eventSchemas';
import { describeAgentEventLogContract } from '../../tests/support/eventLogContract';
import { runEvents } from '../../tests/support/events';
import { describeWithRedisCluster, startRedisCluster, type TestRedisCluster } from '../../tests/support/redisCluster';
import type { AgentEventLog, AgentHostSignal } from '../AgentEventLog';
import { AgentEventLogError } from '../AgentEventLogError';
import { createRedisEventLog, type RedisEventLogOptions } from './index';

let cluster: TestRedisCluster;
let prefixes = 0;
/** A key prefix no other test of this file uses: each test has its own keyspace. */
const uniquePrefix = () => `cluster${++prefixes}:`;

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

/**
 * Waits until the cluster's state holds (asked every 10 ms); after `timeoutMs` (15 s: generous,
 * so a loaded machine only makes the wait longer, never fails it) it fails the test.
 */
async function until(what: string, check: () => Promise<boolean>, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() >= deadline) throw new Error(`Not within ${timeoutMs} ms: ${what}`);
    await sleep(10);
  }
}

const adminClient = (url: string) => createClient({ url });

describeWithRedisCluster('createRedisEventLog on a Redis Cluster', () => {
  /** A plain connection to each node, by port: what asks one node about itself. */
  const admins = new Map<number, ReturnType<typeof adminClient>>();
  /** The master ports, and which master serves each slot. */
  let masters: number[] = [];
  let replicas: number[] = [];
  const slotOwners: number[] = [];

  beforeAll(async () => {
    cluster = await startRedisCluster();
    for (const node of cluster.nodes) {
      const admin = adminClient(node.url);
      await admin.connect();
      admins.set(node.port, admin);
    }
    const admin = admins.get(cluster.nodes[0]!.port)!;
    const slots = await admin.sendCommand<[number, number, [string, number, ...unknown[]], ...unknown[]][]>([
      'CLUSTER',
      'SLOTS',
    ]);
    for (const [start, end, [, port]] of slots) for (let slot = start; slot <= end; slot += 1) slotOwners[slot] = port;
    masters = [...new Set(slots.map(([, , [, port]]) => port))].sort();
    replicas = cluster.nodes.map((node) => node.port).filter((port) => !masters.includes(port));
  }, 20_000);
  afterAll(async () => {
    await Promise.all([...admins.values()].map((admin) => admin.close()));
    await cluster?.stop();
  });

  const clusterOptions = (name?: string): RedisEventLogOptions['cluster'] => ({
    rootNodes: cluster.rootNodes,
    ...(name === undefined ? {} : { defaults: { name } }),
  });

  describeAgentEventLogContract(
    'redis cluster',
    async () => {
      const options: RedisEventLogOptions = {
        cluster: clusterOptions(),
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
  afterEach(async () => {
    await Promise.all(opened.splice(0).map((log) => log.close()));
  });

  /** A log on the cluster whose every connection is named `name` (CLIENT SETNAME). */
  function open(name: string, options: Omit<RedisEventLogOptions, 'cluster'> = {}) {
    const log = createRedisEventLog({ cluster: clusterOptions(name), keyPrefix: uniquePrefix(), ...options });
    opened.push(log);
    return log;
  }

  const adminOf = (port: number) => admins.get(port)!;
  const masterOf = async (key: string) =>
    slotOwners[Number(await adminOf(masters[0]!).sendCommand(['CLUSTER', 'KEYSLOT', key]))]!;

  /** The connections of each node named `name`, as CLIENT LIST lines. */
  async function connectionsNamed(name: string): Promise<Map<number, string[]>> {
    const counts = new Map<number, string[]>();
    for (const [port, admin] of admins) {
      const list = await admin.sendCommand<string>(['CLIENT', 'LIST']);
      counts.set(
        port,
        list.split('\n').filter((line) => line.includes(` name=${name} `)),
      );
    }
    return counts;
  }

  /** Sharded channels subscribed by connections named `name`, over all nodes. */
  async function shardedSubscriptions(name: string): Promise<number> {
    let total = 0;
    for (const lines of (await connectionsNamed(name)).values()) {
      for (const line of lines) total += Number(/ ssub=(\d+)/.exec(line)?.[1] ?? 0);
    }
    return total;
  }

  /** `INFO commandstats` of a node: calls, rejected and failed calls per command. */
  async function commandStats(port: number): Promise<Map<string, { calls: number; rejected: number; failed: number }>> {
    const info = await adminOf(port).sendCommand<string>(['INFO', 'commandstats']);
    const stats = new Map<string, { calls: number; rejected: number; failed: number }>();
    for (const match of info.matchAll(/cmdstat_([\w|]+):calls=(\d+).*?rejected_calls=(\d+),failed_calls=(\d+)/g)) {
      stats.set(match[1]!, { calls: Number(match[2]), rejected: Number(match[3]), failed: Number(match[4]) });
    }
    return stats;
  }

  const resetStats = () => Promise.all([...admins.values()].map((admin) => admin.sendCommand(['CONFIG', 'RESETSTAT'])));

  /** Session ids whose keys fall on each master, `perMaster` of each. */
  async function sessionsOnEveryMaster(prefix: string, perMaster: number): Promise<Map<number, string[]>> {
    const byMaster = new Map<number, string[]>(masters.map((port) => [port, []]));
    for (let index = 0; [...byMaster.values()].some((ids) => ids.length < perMaster); index += 1) {
      const sessionId = `s${index}`;
      const ids = byMaster.get(await masterOf(`${prefix}{${sessionId}}:events`))!;
      if (ids.length < perMaster) ids.push(sessionId);
    }
    return byMaster;
  }

  it('is a cluster of three masters with one replica each', () => {
    expect(masters).toHaveLength(3);
    expect(replicas).toHaveLength(3);
  });

  it("spreads sessions over the three masters: every key of a session is on its session's slot", async () => {
    const log = open('spread');
    const keyPrefix = `cluster${prefixes}:`;
    const sessions = Array.from({ length: 30 }, (_, index) => `session-${index}`);
    const sessionsOf = new Map<number, number>();
    for (const sessionId of sessions) {
      const [cursor] = await log.append(sessionId, eventsOf(sessionId, 1));
      await log.saveSnapshot(sessionId, { state: { sessionId }, cursor: cursor! });
      await log.claimRun(sessionId, 'r1', 'host-a', 60_000);
      await log.claimCommand(sessionId, 'k1', 'fingerprint', 60_000);
      const master = await masterOf(`${keyPrefix}{${sessionId}}:events`);
      sessionsOf.set(master, (sessionsOf.get(master) ?? 0) + 1);
      for (const name of ['snapshot', 'run:r1', 'command:k1', 'events:appended']) {
        expect(await masterOf(`${keyPrefix}{${sessionId}}:${name}`)).toBe(master);
      }
      // The keys are where the slot says: on that master, and on no other.
      const stored = await adminOf(master).sendCommand<string[]>(['KEYS', `${keyPrefix}{${sessionId}}:*`]);
      expect(stored.filter((key) => !key.includes(':appended:')).sort()).toEqual(
        ['command:k1', 'events', 'run:r1', 'snapshot'].map((name) => `${keyPrefix}{${sessionId}}:${name}`),
      );
    }
    expect([...sessionsOf.keys()].sort()).toEqual(masters);
    for (const count of sessionsOf.values()) expect(count).toBeGreaterThanOrEqual(3);
    for (const sessionId of sessions) {
      expect((await log.read(sessionId, { limit: 10 })).map((entry) => entry.event.sessionId)).toEqual([sessionId]);
      expect(await log.loadSnapshot(sessionId)).toMatchObject({ state: { sessionId } });
    }
  });

  it('300 followers of 60 sessions on all masters wait on one pub/sub connection per master, each woken by its own session', async () => {
    const log = open('followers');
    const keyPrefix = `cluster${prefixes}:`;
    const writer = open('writer', { keyPrefix });
    const byMaster = await sessionsOnEveryMaster(keyPrefix, 20);
    const sessions = [...byMaster.values()].flat();
    const newest = new Map<string, string>();
    for (const sessionId of sessions)
      newest.set(sessionId, (await writer.append(sessionId, eventsOf(sessionId, 1)))[0]!);
    const following = sessions.flatMap((sessionId) =>
      Array.from({ length: 5 }, () =>
        log.follow(sessionId, { after: newest.get(sessionId), limit: 10, timeoutMs: 10_000 }).then((entries) => ({
          sessionId,
          entries,
        })),
      ),
    );
    // Every session subscribed once, however many follow it.
    await until('every session is subscribed', async () => (await shardedSubscriptions('followers')) === 60);
    const connections = await connectionsNamed('followers');
    for (const port of masters) {
      const lines = connections.get(port)!;
      // One for commands, one for pub/sub: whatever the number of sessions and followers.
      expect(lines).toHaveLength(2);
      expect(lines.filter((line) => / flags=P /.test(line))).toHaveLength(1);
      expect(lines.find((line) => / flags=P /.test(line))).toMatch(/ ssub=20 /);
    }
    for (const port of replicas) expect(connections.get(port)).toEqual([]);

    const appended = new Map<string, string[]>();
    await Promise.all(
      sessions.map(async (sessionId) => {
        appended.set(sessionId, [...(await writer.append(sessionId, eventsOf(sessionId, 3).slice(1)))]);
      }),
    );
    for (const { sessionId, entries } of await Promise.all(following)) {
      expect(entries.map((entry) => entry.cursor)).toEqual(appended.get(sessionId));
      expect(entries.every((entry) => entry.event.sessionId === sessionId)).toBe(true);
    }
    const after = await connectionsNamed('followers');
    for (const port of masters) expect(after.get(port)!.length).toBeLessThanOrEqual(2);
  });

  it("wakes followers across shards: each append publishes on its session's shard only, and its followers read from their cursor", async () => {
    const log = open('cross-shard');
    const keyPrefix = `cluster${prefixes}:`;
    const peer = open('cross-shard-peer', { keyPrefix });
    const byMaster = await sessionsOnEveryMaster(keyPrefix, 1);
    const first = new Map<string, readonly string[]>();
    for (const [sessionId] of byMaster.values())
      first.set(sessionId!, await peer.append(sessionId!, eventsOf(sessionId!, 3)));
    await resetStats();
    for (const [master, [sessionId]] of byMaster) {
      const cursors = first.get(sessionId!)!;
      // One follower at the tip, one behind: each gets what follows its own cursor.
      const atTip = log.follow(sessionId!, { after: cursors[2], limit: 10, timeoutMs: 10_000 });
      const behind = log.follow(sessionId!, { after: cursors[0], limit: 10, timeoutMs: 10_000 });
      expect((await behind).map((entry) => entry.cursor)).toEqual(cursors.slice(1));
      await until('the session is subscribed', async () => (await shardedSubscriptions('cross-shard')) >= 1);
      const published = async () => (await commandStats(master)).get('spublish')?.calls ?? 0;
      const before = await published();
      const [next] = await peer.append(sessionId!, eventsOf(sessionId!, 2).slice(1));
      expect((await atTip).map((entry) => entry.cursor)).toEqual([next]);
      expect((await published()) - before).toBe(1);
    }
    // Appends publish on their own master; no node ever got a classic PUBLISH.
    for (const port of masters) {
      const stats = await commandStats(port);
      expect(stats.get('publish')).toBeUndefined();
    }
    for (const port of replicas) expect((await commandStats(port)).get('spublish')).toBeUndefined();
  });

  it('commands and signals between two logs go by sharded pub/sub, on the shard of their session or owner', async () => {
    const a = open('host-a');
    const keyPrefix = `cluster${prefixes}:`;
    const b = open('host-b', { keyPrefix });
    await resetStats();
    const received: AgentHostSignal[] = [];
    const stopListening = await a.listen('instance-a', (signal) => received.push(signal));
    const command = createAgentCommandFactory({ sessionId: 's1', runId: 'r1' }).create('run.cancel', {
      reason: 'the user left',
    });
    await b.signal('instance-a', { type: 'command', command });
    await until('the signal arrives', async () => received.length === 1);
    expect(received[0]).toEqual({ type: 'command', command });

    const sessions = [...(await sessionsOnEveryMaster(keyPrefix, 1)).values()].flat();
    for (const sessionId of sessions) {
      expect(await a.claimCommand(sessionId, 'key-1', 'fingerprint', 30_000)).toBeUndefined();
      const waiting = b.awaitCommand(sessionId, 'key-1', { timeoutMs: 10_000 });
      await until('B listens for the settlement', async () => (await shardedSubscriptions('host-b')) >= 1);
      await a.settleCommand(
        sessionId,
        'key-1',
        { fingerprint: 'fingerprint', outcome: { status: 'accepted', events: [] } },
        30_000,
      );
      expect(await waiting).toEqual({
        status: 'settled',
        fingerprint: 'fingerprint',
        outcome: { status: 'accepted', events: [] },
      });
    }
    await stopListening();
    let sharded = 0;
    for (const port of [...masters, ...replicas]) {
      const stats = await commandStats(port);
      expect(stats.get('publish')).toBeUndefined();
      expect(stats.get('subscribe')).toBeUndefined();
      sharded += stats.get('spublish')?.calls ?? 0;
    }
    // The signal, and the three settlements (published from their scripts).
    expect(sharded).toBe(4);
  });

  it('a follower whose pub/sub connection drops still gets the append made while it was down, and later ones', async () => {
    const log = open('dropped');
    const keyPrefix = `cluster${prefixes}:`;
    const writer = open('dropped-writer', { keyPrefix });
    const [master, [sessionId]] = [...(await sessionsOnEveryMaster(keyPrefix, 1))][0]!;
    const [first] = await writer.append(sessionId!, eventsOf(sessionId!, 1));
    const following = log.follow(sessionId!, { after: first, limit: 10, timeoutMs: 10_000 });
    await until('the session is subscribed', async () => (await shardedSubscriptions('dropped')) === 1);
    const pubSubId = /^id=(\d+)/.exec(
      (await connectionsNamed('dropped')).get(master!)!.find((line) => / flags=P /.test(line))!,
    )![1]!;
    await adminOf(master!).sendCommand(['CLIENT', 'KILL', 'ID', pubSubId]);
    // Appended while the connection is gone: no message reaches the follower; it reads once it is back.
    const [during] = await writer.append(sessionId!, eventsOf(sessionId!, 2).slice(1));
    expect((await following).map((entry) => entry.cursor)).toEqual([during]);
    await until('it is subscribed again', async () => (await shardedSubscriptions('dropped')) === 1);
    const next = log.follow(sessionId!, { after: during, limit: 10, timeoutMs: 10_000 });
    const [later] = await writer.append(sessionId!, eventsOf(sessionId!, 2).slice(1));
    expect((await next).map((entry) => entry.cursor)).toEqual([later]);
  });

  it('every script runs on the cluster on one slot: no call is rejected, none fails but NOSCRIPT', async () => {
    const log = open('scripts', { maxEntriesPerSession: 5, maxBytesPerSession: 4_000, exactTrim: true });
    await resetStats();
    const sessions = [...(await sessionsOnEveryMaster(`cluster${prefixes}:`, 1)).values()].flat();
    for (const sessionId of sessions) {
      const cursors = await log.append(sessionId, eventsOf(sessionId, 8));
      // Reads: whole, in pages of bytes, after a trimmed cursor, past the newest.
      expect(await log.read(sessionId, { after: cursors[4], limit: 10 })).toHaveLength(3);
      expect(await log.read(sessionId, { after: cursors[4], limit: 10, maxBytes: 1 })).toHaveLength(1);
      expect((await rejection(log.read(sessionId, { after: cursors[0], limit: 10 }))).code).toBe('cursor_expired');
      expect(
        (await rejection(log.read(sessionId, { after: `${cursors[7]!.split('-')[0]}-99999`, limit: 10 }))).code,
      ).toBe('invalid_cursor');
      // The byte bound trims by XTRIM MINID.
      await log.append(sessionId, [
        runEvents('r1', sessionId, 1).create('message.delta', { messageId: 'answer', delta: 'x'.repeat(3_000) }),
      ]);
      await log.saveSnapshot(sessionId, { state: { ok: true }, cursor: cursors[7]! });
      expect(await log.claimRun(sessionId, 'r1', 'host-a', 60_000)).toBe(true);
      expect(await log.renewRun(sessionId, 'r1', 'host-a', 60_000)).toBe(true);
      await log.releaseRun(sessionId, 'r1', 'host-a');
      expect(await log.runOwner(sessionId, 'r1')).toEqual({ state: 'ended' });
      expect(await log.claimCommand(sessionId, 'k1', 'fingerprint', 30_000)).toBeUndefined();
      await log.settleCommand(
        sessionId,
        'k1',
        { fingerprint: 'fingerprint', outcome: { status: 'accepted', events: [] } },
        30_000,
      );
      expect((await log.awaitCommand(sessionId, 'k1', { timeoutMs: 1_000 }))?.status).toBe('settled');
    }
    let scripted = 0;
    for (const port of masters) {
      const stats = await commandStats(port);
      const evalsha = stats.get('evalsha') ?? { calls: 0, rejected: 0, failed: 0 };
      const evaluated = stats.get('eval') ?? { calls: 0, rejected: 0, failed: 0 };
      expect(evalsha.rejected + evaluated.rejected + evaluated.failed).toBe(0);
      // A script a node did not know yet answers NOSCRIPT once, and is then sent in full.
      expect(evalsha.failed).toBe(evaluated.calls);
      scripted += evalsha.calls;
    }
    // Seven scripts, eleven calls a session: append (twice), read (four times), save the
    // snapshot, renew, release, claim, settle.
    expect(scripted).toBe(sessions.length * 11);
  });

  it('an append lost in a failover (XDEL of the newest entries on the master) is a gap on every shard, never silence', async () => {
    const prefix = uniquePrefix();
    const writer = open('lost-writer', { keyPrefix: prefix });
    const fresh = open('lost-fresh', { keyPrefix: prefix });
    const sessions = [...(await sessionsOnEveryMaster(prefix, 2)).values()].flat();
    for (const [index, sessionId] of sessions.entries()) {
      const key = `${prefix}{${sessionId}}:events`;
      const cursors = await writer.append(sessionId, eventsOf(sessionId, 5));
      // The old master acknowledged 3 and 4; the promoted replica never had them.
      expect(await adminOf(await masterOf(key)).sendCommand(['XDEL', key, cursors[3]!, cursors[4]!])).toBe(2);
      expect((await rejection(writer.follow(sessionId, { after: cursors[3], limit: 10, timeoutMs: 5_000 }))).code).toBe(
        'cursor_expired',
      );
      // A log that never gave them cannot tell a lost cursor from one past the newest entry, yet.
      expect((await rejection(fresh.read(sessionId, { after: cursors[4], limit: 10 }))).code).toBe('invalid_cursor');
      if (index % 2 === 0) {
        // The log that gave them appends next: its entry follows the lost ones, and wakes the
        // follower at the newest given cursor; readers before the lost ones get the gap.
        const waiting = writer.follow(sessionId, { after: cursors[4], limit: 10, timeoutMs: 10_000 });
        const [next] = await writer.append(sessionId, eventsOf(sessionId, 1));
        expect((await waiting).map((entry) => entry.cursor)).toEqual([next]);
        for (const reader of [writer, fresh]) {
          expect((await reader.read(sessionId, { after: cursors[4], limit: 10 })).map((entry) => entry.cursor)).toEqual(
            [next],
          );
          for (const lost of [2, 3]) {
            expect((await rejection(reader.read(sessionId, { after: cursors[lost], limit: 10 }))).code).toBe(
              'cursor_expired',
            );
          }
        }
      } else {
        // Another log appends next: its entry follows the last one kept; readers at a lost cursor get the gap.
        const [next] = await fresh.append(sessionId, eventsOf(sessionId, 1));
        for (const reader of [writer, fresh]) {
          for (const lost of [3, 4]) {
            expect((await rejection(reader.read(sessionId, { after: cursors[lost], limit: 10 }))).code).toBe(
              'cursor_expired',
            );
          }
          expect((await reader.read(sessionId, { after: cursors[2], limit: 10 })).map((entry) => entry.cursor)).toEqual(
            [next],
          );
        }
      }
    }
  });

  it('the cluster refuses a script given keys of two sessions (CROSSSLOT): one slot per script is what it checks', async () => {
    const client = createCluster({ rootNodes: cluster.rootNodes });
    await client.connect();
    try {
      const keyPrefix = uniquePrefix();
      const byMaster = await sessionsOnEveryMaster(keyPrefix, 1);
      const [first, second] = [...byMaster.values()].flat();
      const keys = [`${keyPrefix}{${first}}:events`, `${keyPrefix}{${second}}:events`];
      await expect(
        client.sendCommand(keys[0], false, ['EVAL', "return redis.call('EXISTS', KEYS[1], KEYS[2])", '2', ...keys]),
      ).rejects.toThrow(/CROSSSLOT/);
    } finally {
      await client.close();
    }
  });

  it('a cluster client given to it is shared: close() takes back its subscriptions and leaves the client open', async () => {
    const client = createCluster({ rootNodes: cluster.rootNodes, defaults: { name: 'shared' } });
    await client.connect();
    try {
      const log = createRedisEventLog({ client, keyPrefix: uniquePrefix() });
      const [cursor] = await log.append('s1', eventsOf('s1', 1));
      const following = log.follow('s1', { after: cursor, limit: 10, timeoutMs: 5_000 });
      const stop = await log.listen('host-a', () => {});
      await until('the log listens and follows', async () => (await shardedSubscriptions('shared')) === 2);
      const [next] = await log.append('s1', eventsOf('s1', 2).slice(1));
      expect((await following).map((entry) => entry.cursor)).toEqual([next]);
      const lingering = log.follow('s1', { after: next, limit: 10, timeoutMs: 5_000 });
      await log.close();
      expect(await lingering).toEqual([]);
      await stop();
      await until('its subscriptions are gone', async () => (await shardedSubscriptions('shared')) === 0);
      expect(client.isOpen).toBe(true);
      expect(await client.sendCommand('s1', false, ['PING'])).toBe('PONG');
    } finally {
      await client.close();
    }
  });

  it('takes one of url, client and cluster', () => {
    expect(() => createRedisEventLog({ url: 'redis://127.0.0.1:1', cluster: { rootNodes: [] } })).toThrow(
      'give one of url, client and cluster, not url and cluster',
    );
  });

  it('refuses a reconnect window that is not a positive integer of milliseconds', () => {
    for (const reconnectWithinMs of [0, -1, 1.5, Number.NaN]) {
      expect(() => createRedisEventLog({ url: 'redis://127.0.0.1:1', reconnectWithinMs })).toThrow(
        `createRedisEventLog: reconnectWithinMs must be a positive integer, got ${reconnectWithinMs}`,
      );
    }
  });
});
