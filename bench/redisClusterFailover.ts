// A master of a Redis Cluster killed (SIGKILL) while a run streams to readers on a host over
// the cluster: how long until the host appends and delivers again, and what the readers got.
// The host runs in this process (createAgentHost, node:http on loopback); the cluster is three
// masters with one replica each, `cluster-node-timeout` 1,000 ms.
//
// Alone: node --import tsx bench/redisClusterFailover.ts [--readers 50] [--json]
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { createClient } from 'redis';
import type { AgentEvent } from '../protocol/eventSchemas';
import { createLocalAgentProvider } from '../providers/local/createLocalAgentProvider';
import { createAgentHost } from '../server/createAgentHost';
import { toNodeHandler } from '../server/node';
import { createRedisEventLog } from '../server/redis/createRedisEventLog';
import { askRedisNode, startRedisCluster } from '../tests/support/redisCluster';
import { followResuming } from '../tests/support/resumingReader';

export const FAILOVER_NODE_TIMEOUT_MS = 1_000;
const FAILOVER_BOUND_MS = 30_000;

/** What a failover cost the readers of the session whose master was killed. */
export interface FailoverReport {
  readers: number;
  nodeTimeoutMs: number;
  /** The kill to the replica's answering `ROLE` as a master (polled every 20 ms). */
  killToPromotedMs: number;
  /** The kill to the first reader's receipt of an event appended after it (its cursor's time, Redis's clock on this machine). */
  killToFirstEventMs: number;
  /** Whether the run that streamed on the killed master went on to `run.completed` on its replica. */
  interruptedRunCompleted: boolean;
  /** Entries of the log a reader did not get, though it reported no gap, over all readers. */
  lost: number;
  /** Events a reader got twice, over all readers. */
  twice: number;
  /** Readers whose host answered 410 (the log's gap: acknowledged appends the failover lost). */
  gaps: number;
  /** Events delivered that the log no longer has (acknowledged by the old master, never replicated). */
  deliveredNotInLog: number;
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

const ended = (runId: string) => (events: AgentEvent[]) =>
  events.some((event) => event.runId === runId && /^run\.(completed|failed|cancelled)$/.test(event.type));

/** Runs the failover once and reports it; throws when the host does not serve again within 30 s. */
export async function measureFailover(readers = 50): Promise<FailoverReport> {
  const cluster = await startRedisCluster({ nodeTimeoutMs: FAILOVER_NODE_TIMEOUT_MS });
  const log = createRedisEventLog({
    cluster: { rootNodes: cluster.rootNodes },
    keyPrefix: 'failover:',
    commandTimeoutMs: 1_000,
    // Appends and lease renewals are sent again through the failover: the run goes on.
    reconnectWithinMs: FAILOVER_BOUND_MS,
  });
  const host = createAgentHost({
    eventLog: log,
    heartbeatMs: 200,
    runLeaseMs: 2 * FAILOVER_BOUND_MS,
    onError: () => {},
    providers: {
      long: createLocalAgentProvider({
        script: { steps: [{ type: 'text', deltas: Array.from({ length: 200 }, (_, i) => `w${i} `) }], delayMs: 20 },
      }),
    },
  });
  const server = createServer(toNodeHandler(host.fetch));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  try {
    const admin = createClient({ url: cluster.nodes[0]!.url });
    await admin.connect();
    let victimPort = 0;
    let sessionId = '';
    try {
      const slots = await admin.sendCommand<[number, number, [string, number]][]>(['CLUSTER', 'SLOTS']);
      victimPort = slots[0]![2][1];
      for (let index = 0; sessionId === ''; index += 1) {
        const slot = Number(await admin.sendCommand(['CLUSTER', 'KEYSLOT', `failover:{s${index}}:events`]));
        const owner = slots.find(([start, end]) => slot >= start && slot <= end)![2][1];
        if (owner === victimPort) sessionId = `s${index}`;
      }
    } finally {
      await admin.close();
    }
    // The victim's replica: the node whose master it is.
    let replicaPort = 0;
    for (const node of cluster.nodes) {
      if ((await askRedisNode(node.port, 'INFO replication'))?.includes(`master_port:${victimPort}\r\n`)) {
        replicaPort = node.port;
      }
    }
    if (replicaPort === 0) throw new Error(`No replica of ${victimPort}`);
    const base = `${url}/sessions/${sessionId}`;
    const post = async (body: unknown) =>
      (
        await fetch(`${base}/runs`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(body),
        }).catch(() => undefined)
      )?.status ?? 0;
    if ((await post({ provider: 'long', input: {}, runId: 'r1' })) !== 202) throw new Error('The run did not start');
    const deadline = Date.now() + FAILOVER_BOUND_MS;
    const following = Array.from({ length: readers }, () => followResuming(`${base}/events`, ended('r1'), deadline));
    while ((await log.read(sessionId, { limit: 30 })).length < 30) {
      if (Date.now() > deadline) throw new Error('The run did not stream');
      await sleep(10);
    }
    const killedAt = Date.now();
    process.kill(cluster.nodes.find((node) => node.port === victimPort)!.pid, 'SIGKILL');
    const promoted = (async () => {
      while (!(await askRedisNode(replicaPort, 'INFO replication'))?.includes('role:master')) {
        if (Date.now() > deadline) throw new Error('The replica was not promoted');
        await sleep(20);
      }
      return Date.now() - killedAt;
    })();
    const killToPromotedMs = await promoted;
    const readings = await Promise.all(following);
    const entries = await log.read(sessionId, { limit: 100_000 });
    const inLog = new Set(entries.map((entry) => entry.cursor));
    let lost = 0;
    let twice = 0;
    let deliveredNotInLog = 0;
    for (const reading of readings) {
      const cursors = reading.delivered.map((entry) => entry.cursor);
      twice += cursors.length - new Set(cursors).size;
      deliveredNotInLog += cursors.filter((cursor) => !inLog.has(cursor)).length;
      if (reading.gaps.length === 0) {
        const got = new Set(cursors);
        lost += entries.filter((entry) => !got.has(entry.cursor)).length;
      }
    }
    // A cursor is `<ms>-<seq>`, the time Redis (on this machine) appended the entry.
    const appendedAfterKill = (cursor: string) => Number(cursor.split('-')[0]) > killedAt;
    const firsts = readings.map(
      (reading) => reading.delivered.find((entry) => appendedAfterKill(entry.cursor))?.at ?? Number.POSITIVE_INFINITY,
    );
    return {
      readers,
      nodeTimeoutMs: FAILOVER_NODE_TIMEOUT_MS,
      killToPromotedMs,
      killToFirstEventMs: Math.min(...firsts) - killedAt,
      interruptedRunCompleted: entries.at(-1)?.event.type === 'run.completed',
      lost,
      twice,
      gaps: readings.filter((reading) => reading.gaps.length > 0).length,
      deliveredNotInLog,
    };
  } finally {
    server.closeAllConnections();
    server.close();
    await host.close();
    await log.close();
    await cluster.stop();
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const index = process.argv.indexOf('--readers');
  const report = await measureFailover(index === -1 ? 50 : Number(process.argv[index + 1]));
  process.stdout.write(`${JSON.stringify(report)}\n`);
  process.exit(0);
}
