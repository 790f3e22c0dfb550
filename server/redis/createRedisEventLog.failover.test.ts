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

  it('after the replica takes over, the host appends and serves again: readers resume from their cursor, nothing lost, nothing twice', async () => {
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
    });
    const host = createAgentHost({
      eventLog: log,
      heartbeatMs: 200,
      runLeaseMs: 1_500,
      onError: () => {},
      providers: {
        long: createLocalAgentProvider({
          script: { steps: [{ type: 'text', deltas: Array.from({ length: 150 }, (_, i) => `w${i} `) }], delayMs: 20 },
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
      const deadline = Date.now() + 25_000;
      const victimReaders = Array.from({ length: READERS_PER_SESSION }, () =>
        follow(`${base(victim)}/events`, ended('r2'), deadline),
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

      // The host runs again on the victim's slot once its replica is master: a new run starts.
      let started = 0;
      const refusedRuns: number[] = [];
      while (started !== 202) {
        if (Date.now() - killedAt > FAILOVER_BOUND_MS)
          throw new Error(`No run started after the kill: ${refusedRuns.join(', ')}`);
        started = (
          await postJson(`${base(victim)}/runs`, { provider: 'short', input: {}, runId: 'r2' }).catch(() => ({
            status: 0,
          }))
        ).status;
        if (started !== 202) {
          refusedRuns.push(started);
          await sleep(100);
        }
      }
      const readings = await Promise.all(victimReaders);
      const bystanders = await Promise.all(bystanderReaders);
      const entries = await log.read(victim, { limit: 10_000 });
      const inLog = new Set(entries.map((entry) => entry.cursor));
      // The first event appended after the kill (the new run's) reached a reader within the bound.
      const firstAfterKill = Math.min(
        ...readings.map((reading) => reading.delivered.find((entry) => entry.event.runId === 'r2')?.at ?? Infinity),
      );
      expect(firstAfterKill - killedAt).toBeLessThan(FAILOVER_BOUND_MS);
      expect(refusedRuns.every((status) => status === 503 || status === 0)).toBe(true);
      expect(entries.filter((entry) => entry.event.runId === 'r2').at(-1)?.event.type).toBe('run.completed');
      for (const reading of readings) {
        const cursors = reading.delivered.map((entry) => entry.cursor);
        expect(new Set(cursors).size).toBe(cursors.length);
        expect(ended('r2')(reading.delivered.map((entry) => entry.event))).toBe(true);
        // Every entry of the log once, in order; an entry delivered that the log no longer has
        // is an append the old master acknowledged but had not replicated (the log chains past it).
        if (reading.gaps.length === 0) {
          expect(cursors.filter((cursor) => inLog.has(cursor))).toEqual(entries.map((entry) => entry.cursor));
        }
      }
      for (const reading of bystanders) {
        expect(reading.gaps).toEqual([]);
        expect(ended('r1')(reading.delivered.map((entry) => entry.event))).toBe(true);
      }
    } finally {
      await served.close();
      await host.close();
      await log.close();
    }
  }, 40_000);
});
