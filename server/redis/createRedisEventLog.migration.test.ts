import { createClient } from 'redis';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { AgentEvent } from '../../protocol/eventSchemas';
import { runEvents } from '../../tests/support/events';
import { describeWithRedisCluster, startRedisCluster, type TestRedisCluster } from '../../tests/support/redisCluster';
import type { AgentEventLogEntry } from '../AgentEventLog';
import { createRedisEventLog } from './createRedisEventLog';

const EVENTS = 300;
const FOLLOWERS = 4;

const adminClient = (url: string) => createClient({ url });
type Admin = ReturnType<typeof adminClient>;

describeWithRedisCluster("a session's slot migrated to another master while it streams", () => {
  let cluster: TestRedisCluster;
  const admins = new Map<number, Admin>();
  beforeAll(async () => {
    cluster = await startRedisCluster();
    for (const node of cluster.nodes) {
      const admin = adminClient(node.url);
      await admin.connect();
      admins.set(node.port, admin);
    }
  }, 20_000);
  afterAll(async () => {
    await Promise.all([...admins.values()].map((admin) => admin.close()));
    await cluster?.stop();
  });

  /** Moves `slot` from `source` to `target` as `redis-cli --cluster reshard` does, and says which keys it moved. */
  async function migrate(slot: number, source: number, target: number): Promise<number> {
    const from = admins.get(source)!;
    const to = admins.get(target)!;
    const sourceId = await from.sendCommand<string>(['CLUSTER', 'MYID']);
    const targetId = await to.sendCommand<string>(['CLUSTER', 'MYID']);
    await to.sendCommand(['CLUSTER', 'SETSLOT', String(slot), 'IMPORTING', sourceId]);
    await from.sendCommand(['CLUSTER', 'SETSLOT', String(slot), 'MIGRATING', targetId]);
    let moved = 0;
    for (;;) {
      const keys = await from.sendCommand<string[]>(['CLUSTER', 'GETKEYSINSLOT', String(slot), '50']);
      if (keys.length === 0) break;
      await from.sendCommand(['MIGRATE', '127.0.0.1', String(target), '', '0', '5000', 'KEYS', ...keys]);
      moved += keys.length;
    }
    // The new owner first, then the old one, then every other node.
    await to.sendCommand(['CLUSTER', 'SETSLOT', String(slot), 'NODE', targetId]);
    await from.sendCommand(['CLUSTER', 'SETSLOT', String(slot), 'NODE', targetId]);
    for (const [port, admin] of admins) {
      if (port === source || port === target) continue;
      if ((await admin.sendCommand<string>(['ROLE']))[0] !== 'master') continue;
      await admin.sendCommand(['CLUSTER', 'SETSLOT', String(slot), 'NODE', targetId]);
    }
    return moved;
  }

  it('appends follow MOVED, ASK and TRYAGAIN; followers on another log get every entry once, in order, woken on the new master', async () => {
    const first = admins.get(cluster.nodes[0]!.port)!;
    const slots = await first.sendCommand<[number, number, [string, number, string]][]>(['CLUSTER', 'SLOTS']);
    const prefix = 'migrate:';
    const sessionId = 's1';
    const key = `${prefix}{${sessionId}}:events`;
    const slot = Number(await first.sendCommand(['CLUSTER', 'KEYSLOT', key]));
    const source = slots.find(([start, end]) => slot >= start && slot <= end)![2][1];
    const target = slots.map(([, , [, port]]) => port).find((port) => port !== source)!;

    const writer = createRedisEventLog({ cluster: { rootNodes: cluster.rootNodes }, keyPrefix: prefix });
    const reader = createRedisEventLog({
      cluster: { rootNodes: cluster.rootNodes, defaults: { name: 'migrate-reader' } },
      keyPrefix: prefix,
    });
    try {
      const events = runEvents('r1', sessionId);
      const appended: AgentEvent[] = [];
      const eventOf = (index: number): AgentEvent => {
        const event =
          index === 0
            ? events.create('run.started', {})
            : events.create('message.delta', { messageId: 'answer', delta: `part ${index}` });
        appended.push(event);
        return event;
      };
      const [start] = await writer.append(sessionId, [eventOf(0)]);
      const deadline = Date.now() + 20_000;
      // Each follower follows from the first entry until it has them all (or the deadline).
      const followers = Array.from({ length: FOLLOWERS }, async () => {
        const got: AgentEventLogEntry[] = [];
        let after = start;
        while (got.length < EVENTS - 1 && Date.now() < deadline) {
          const page = await reader.follow(sessionId, { after, limit: 50, timeoutMs: 5_000 });
          got.push(...page);
          after = page.at(-1)?.cursor ?? after;
        }
        return got;
      });
      const cursors = [start!];
      let moved: Promise<number> | undefined;
      let migrated = false;
      let appendsWhileMigrating = 0;
      for (let index = 1; index < EVENTS; index += 1) {
        cursors.push(...(await writer.append(sessionId, [eventOf(index)])));
        if (moved !== undefined && !migrated) appendsWhileMigrating += 1;
        if (index === EVENTS / 3) {
          moved = migrate(slot, source, target);
          void moved.then(() => {
            migrated = true;
          });
        }
      }
      // The stream, and the batch key of each append: moved by MIGRATE while appends went on.
      expect(await moved).toBeGreaterThan(EVENTS / 3);
      expect(appendsWhileMigrating).toBeGreaterThan(0);
      // The session is on the new master now, and the reader's sharded subscription with it.
      expect(await admins.get(target)!.sendCommand(['EXISTS', key])).toBe(1);
      expect(await admins.get(source)!.sendCommand(['CLUSTER', 'COUNTKEYSINSLOT', String(slot)])).toBe(0);
      const got = await Promise.all(followers);
      for (const entries of got) {
        expect(entries.map((entry) => entry.cursor)).toEqual(cursors.slice(1));
      }
      expect(got[0]!.map((entry) => entry.event)).toEqual(appended.slice(1));
      // A follower waiting now is woken on the new master by the next append.
      const waiting = reader.follow(sessionId, { after: cursors.at(-1), limit: 10, timeoutMs: 10_000 });
      const startedAt = Date.now();
      const [last] = await writer.append(sessionId, [eventOf(EVENTS)]);
      expect((await waiting).map((entry) => entry.cursor)).toEqual([last]);
      expect(Date.now() - startedAt).toBeLessThan(1_000);
      const list = await admins.get(target)!.sendCommand<string>(['CLIENT', 'LIST']);
      expect(list.split('\n').some((line) => line.includes(' name=migrate-reader ') && / ssub=[1-9]/.test(line))).toBe(
        true,
      );
    } finally {
      await Promise.all([writer.close(), reader.close()]);
    }
  }, 40_000);
});
