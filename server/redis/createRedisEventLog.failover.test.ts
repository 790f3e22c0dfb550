import { createClient } from 'redis';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { AgentEvent } from '../../protocol/eventSchemas';
import { createLocalAgentProvider } from '../../providers/local/createLocalAgentProvider';
import { postJson, serveHost } from '../../tests/support/hostClient';
import { describeWithRedisCluster, startRedisCluster, type TestRedisCluster } from '../../tests/support/redisCluster';
import { followResuming as follow } from '../../tests/support/resumingReader';
import { createAgentHost } from '../createAgentHost';
import { createRedisEventLog } from './createRedisEventLog';

const NODE_TIMEOUT_MS = 1_000;
/** A failover takes the node timeout, an election and the clients' rediscovery: bounded here. */
const FAILOVER_BOUND_MS = 15_000;
const READERS_PER_SESSION = 4;
const DELTAS = Array.from({ length: 150 }, (_, i) => `w${i} `);

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

const ended = (runId: string) => (events: AgentEvent[]) =>
  events.some((event) => event.runId === runId && /^run\.(completed|failed|cancelled)$/.test(event.type));

describeWithRedisCluster('a host on a Redis Cluster whose master is killed (SIGKILL) while runs stream', () => {
  let cluster: TestRedisCluster;
  beforeAll(async () => {
    cluster = await startRedisCluster({ nodeTimeoutMs: NODE_TIMEOUT_MS });
  }, 20_000);
  afterAll(async () => {
    await cluster?.stop();
  });

  it('the run streaming on the killed master goes on once its replica takes over: readers resume from their cursor, nothing lost, nothing twice', async () => {
    const admin = createClient({ url: cluster.nodes[0]!.url });
    await admin.connect();
    const slots = await admin.sendCommand<[number, number, [string, number, string], ...[string, number, string][]][]>([
      'CLUSTER',
      'SLOTS',
    ]);
    const masterOf = async (key: string) => {
      const slot = Number(await admin.sendCommand(['CLUSTER', 'KEYSLOT', key]));
      return slots.find(([start, end]) => slot >= start && slot <= end)![2][1];
    };
    const prefix = 'failover:';
    // A session on the master to be killed, and one on another master.
    const victimPort = slots[0]![2][1];
    let victim: string | undefined;
    let bystander: string | undefined;
    for (let index = 0; victim === undefined || bystander === undefined; index += 1) {
      const port = await masterOf(`${prefix}{s${index}}:events`);
      if (port === victimPort) victim ??= `s${index}`;
      else bystander ??= `s${index}`;
    }
    await admin.close();

    const log = createRedisEventLog({
      cluster: { rootNodes: cluster.rootNodes },
      keyPrefix: prefix,
      commandTimeoutMs: 1_000,
      // Appends and renewals are sent again through the failover, so the runs go on.
      reconnectWithinMs: FAILOVER_BOUND_MS,
    });
    // Nothing fails: no append, no renewal, no read of the runs.
    const hostErrors: unknown[] = [];
    const host = createAgentHost({
      eventLog: log,
      heartbeatMs: 200,
      // Longer than the failover: no other instance could take the run over meanwhile.
      runLeaseMs: 2 * FAILOVER_BOUND_MS,
      onError: (error) => hostErrors.push(error),
      providers: {
        long: createLocalAgentProvider({
          script: { steps: [{ type: 'text', deltas: DELTAS }], delayMs: 20 },
        }),
        short: createLocalAgentProvider({ script: { steps: [{ type: 'text', deltas: ['after ', 'failover'] }] } }),
      },
    });
    const served = await serveHost(host.fetch);
    try {
      const base = (sessionId: string) => `${served.url}/sessions/${sessionId}`;
      for (const sessionId of [victim, bystander]) {
        expect((await postJson(`${base(sessionId)}/runs`, { provider: 'long', input: {}, runId: 'r1' })).status).toBe(
          202,
        );
      }
      const deadline = Date.now() + 30_000;
      const victimReaders = Array.from({ length: READERS_PER_SESSION }, () =>
        follow(`${base(victim)}/events`, ended('r1'), deadline),
      );
      const bystanderReaders = Array.from({ length: READERS_PER_SESSION }, () =>
        follow(`${base(bystander)}/events`, ended('r1'), deadline),
      );
      // Kill the master once the victim's run has streamed a while.
      for (
        let waited = 0;
        (await log.lastCursor(victim)) === undefined || (await log.read(victim, { limit: 30 })).length < 30;
        waited += 1
      ) {
        if (waited > 500) throw new Error('The run did not stream');
        await sleep(10);
      }
      const victimNode = cluster.nodes.find((node) => node.port === victimPort)!;
      const killedAt = Date.now();
      process.kill(victimNode.pid, 'SIGKILL');

      const readings = await Promise.all(victimReaders);
      const bystanders = await Promise.all(bystanderReaders);
      const entries = await log.read(victim, { limit: 10_000 });
      const inLog = new Set(entries.map((entry) => entry.cursor));
      // The run that streamed on the killed master went on on its replica, to its end, each
      // delta once (an append the old master acknowledged but never replicated is the one loss
      // Redis allows: then a reader behind it gets the gap, never silence).
      const texts = entries.filter((entry) => entry.event.type === 'message.delta');
      expect(entries.at(-1)?.event).toMatchObject({ type: 'run.completed', runId: 'r1' });
      const lost = readings.some((reading) => reading.gaps.length > 0);
      if (!lost) {
        expect(texts.map((entry) => (entry.event.payload as { delta: string }).delta)).toEqual(DELTAS);
      }
      // The first event appended after the kill reached a reader within the bound (a cursor is
      // `<ms>-<seq>`, the time Redis on this machine appended the entry).
      const firstAfterKill = Math.min(
        ...readings.map(
          (reading) => reading.delivered.find((entry) => Number(entry.cursor.split('-')[0]) > killedAt)?.at ?? Infinity,
        ),
      );
      expect(firstAfterKill - killedAt).toBeLessThan(FAILOVER_BOUND_MS);
      for (const reading of readings) {
        const cursors = reading.delivered.map((entry) => entry.cursor);
        expect(new Set(cursors).size).toBe(cursors.length);
        expect(reading.refused.every((status) => status === 503)).toBe(true);
        if (reading.gaps.length === 0) {
          // Every entry of the log once, in order, through to the run's end.
          expect(ended('r1')(reading.delivered.map((entry) => entry.event))).toBe(true);
          expect(cursors.filter((cursor) => inLog.has(cursor))).toEqual(entries.map((entry) => entry.cursor));
        }
      }
      for (const reading of bystanders) {
        expect(reading.gaps).toEqual([]);
        expect(ended('r1')(reading.delivered.map((entry) => entry.event))).toBe(true);
      }
      expect(hostErrors).toEqual([]);
      // And the host starts runs on the replica's slots as before.
      expect((await postJson(`${base(victim)}/runs`, { provider: 'short', input: {}, runId: 'r2' })).status).toBe(202);
      const after = await follow(`${base(victim)}/events`, ended('r2'), Date.now() + 15_000);
      expect(after.delivered.at(-1)?.event).toMatchObject({ type: 'run.completed', runId: 'r2' });
    } finally {
      await served.close();
      await host.close();
      await log.close();
    }
  }, 40_000);
});
