// The Redis Cluster figures of bench/run.ts (scale-out of host processes over one cluster, and
// a failover) and their section of bench/RESULTS.md, apart from what measures them.
import type { FailoverReport } from './redisClusterFailover';
import { FRAME_EVENTS, LIGHT_READER, paceOf, type ServerLoadReport } from './serverLoadReport';

/**
 * The scale-out measurement: the same readers over one host process, then two, in rounds that
 * take turns, each a run of bench/server.ts on a cluster of its own. Light readers and an
 * unpaced run, so that the hosts' work bounds the wall time, not the readers' or the pace.
 */
export const SCALE_OUT = {
  clients: 400,
  clientProcesses: 2,
  reader: 'light',
  burstMs: 0,
  hosts: [1, 2],
  rounds: 3,
} as const;

/** The arguments of bench/server.ts for one scale-out row. */
export function scaleOutArguments(hosts: number): string[] {
  return [
    '--json',
    '--modes',
    'redis-cluster',
    '--clients',
    String(SCALE_OUT.clients),
    '--client-processes',
    String(SCALE_OUT.clientProcesses),
    '--reader',
    SCALE_OUT.reader,
    '--burst-ms',
    String(SCALE_OUT.burstMs),
    '--cluster-hosts',
    String(hosts),
  ];
}

export interface RedisClusterReport {
  /** bench/server.ts on the cluster with the same readers, round by round: one host process, then two. */
  scaleOut: ServerLoadReport[];
  failover: FailoverReport;
}

const fixed = (value: number, digits = 1) => value.toFixed(digits);
const mb = (bytes: number) => (bytes / 1024 ** 2).toFixed(1);
const count = (value: number) => Math.round(value).toLocaleString('en');

function median(values: readonly number[]): number {
  const sorted = [...values].sort((left, right) => left - right);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1
    ? (sorted[middle] as number)
    : ((sorted[middle - 1] as number) + (sorted[middle] as number)) / 2;
}

/** The rows of each host count, in the order they ran. */
function rowsByHosts(scaleOut: readonly ServerLoadReport[]): Map<number, ServerLoadReport[]> {
  const byHosts = new Map<number, ServerLoadReport[]>();
  for (const row of scaleOut) byHosts.set(row.hostProcesses, [...(byHosts.get(row.hostProcesses) ?? []), row]);
  return byHosts;
}

/** Events/s delivered with each host count, the median of its rounds: `1 host 412,000 → 2 hosts 530,000`. */
function medianRates(scaleOut: readonly ServerLoadReport[]): string {
  return [...rowsByHosts(scaleOut)]
    .map(
      ([hosts, rows]) =>
        `${hosts} host${hosts === 1 ? '' : 's'} ${count(median(rows.map((row) => row.eventsPerSecond)))}`,
    )
    .join(' → ');
}

/** Cores busy over the wall: the hosts', the readers', the machine's (every process); `-` where not sampled. */
function wallCores(row: ServerLoadReport): string {
  if (row.wallCpu === undefined) return '-';
  const { hostsMs, clientsMs, machineBusy } = row.wallCpu;
  return `${fixed(hostsMs / row.wallMs, 2)} / ${fixed(clientsMs / row.wallMs, 2)} / ${fixed(machineBusy * row.cores, 2)}`;
}

/** The scale-out part of the section, as lines. */
function scaleOutLines(scaleOut: readonly ServerLoadReport[]): string[] {
  const [first] = scaleOut;
  if (first === undefined) return [];
  const byHosts = rowsByHosts(scaleOut);
  const rounds = Math.max(...[...byHosts.values()].map((rows) => rows.length));
  const lines = [
    `Scale-out: \`bench/server.ts --modes redis-cluster --reader ${first.reader} --burst-ms ${first.burstMs} --cluster-hosts <n>\` with ${first.clients} SSE readers in ${first.clientProcesses} client processes on one run of ${first.eventsPerClient.toLocaleString('en')} events, over a cluster of three masters with one replica each; the client processes are spread over the host processes as in the load section (the same client processes either way: only the hosts change), the run is started on the first host and every other host reads it from the cluster. What makes the hosts the bottleneck: the run's ${(first.eventsPerClient - FRAME_EVENTS).toLocaleString('en')} deltas come ${paceOf(first)}, so the wall time is how long the hosts take to deliver ${first.totalEvents.toLocaleString('en')} events, not the run's pace; and ${first.reader === 'light' ? `each reader is a light one: ${LIGHT_READER}` : 'each reader parses every event into a store of its own, as in the load section.'} Each host's feed holds the whole run (\`feedCapacity\`), so a reader behind the live edge reads from its host's feed, as a reader at the edge does, not from Redis on its own. ${rounds} rounds, each of the host counts in turn, each row on a fresh cluster and fresh processes. All on the machine's ${first.cores} cores: the hosts, the client processes and six redis-servers. CPU s: each process's user and system time over the span it measured (a host's from before the readers connect to after the run, the readers' from connecting to their last terminal event, Redis's \`INFO cpu\` around the run, every node). Cores busy over the wall: the same processes' CPU time (\`/proc/<pid>/stat\`, every thread) and the machine's time not idle (\`/proc/stat\`, every process, Redis and anything else on the machine), sampled every 50 ms and read over the wall alone, in cores of the ${first.cores}: a host's JavaScript runs on one thread, so a host can keep one core busy at most, its garbage collector's helper threads aside; where the machine is busier than hosts and readers, Redis and other processes took the rest.`,
    '',
    '| round | host processes | events delivered | run s | wall s | events/s delivered | latency p50 ms | p99 ms | host RSS MB (all hosts), peak | CPU s: hosts / readers / Redis | cores busy over the wall: hosts / readers / machine | Redis connections |',
    '|---|---|---|---|---|---|---|---|---|---|---|---|',
  ];
  const roundsSoFar = new Map<number, number>();
  for (const row of scaleOut) {
    const round = (roundsSoFar.get(row.hostProcesses) ?? 0) + 1;
    roundsSoFar.set(row.hostProcesses, round);
    lines.push(
      `| ${round} | ${row.hostProcesses} | ${row.totalEvents.toLocaleString('en')} | ${fixed(row.runMs / 1000, 2)} | ${fixed(row.wallMs / 1000, 2)} | ${count(row.eventsPerSecond)} | ${fixed(row.latency.p50)} | ${fixed(row.latency.p99)} | ${mb(row.host.peak.rss)} | ${fixed(row.host.cpuMs / 1000, 2)} / ${fixed(row.clientsCpuMs / 1000, 2)} / ${row.redisCpuMs === undefined ? '-' : fixed(row.redisCpuMs / 1000, 2)} | ${wallCores(row)} | ${row.redisConnections ?? '-'} |`,
    );
  }
  const [one, two] = [byHosts.get(1) ?? [], byHosts.get(2) ?? []];
  const ratios = one
    .slice(0, two.length)
    .map((row, index) => fixed((two[index] as ServerLoadReport).eventsPerSecond / row.eventsPerSecond, 2));
  lines.push(
    '',
    `Events/s delivered, the median of the rounds: ${medianRates(scaleOut)}${ratios.length === 0 ? '' : `; 2 hosts over 1, round by round: ${ratios.map((ratio) => `${ratio}×`).join(', ')}`}. Host CPU per event delivered (µs): ${scaleOut.map((row) => fixed((row.host.cpuMs * 1000) / row.totalEvents, 2)).join(', ')}; readers': ${scaleOut.map((row) => fixed((row.clientsCpuMs * 1000) / row.totalEvents, 2)).join(', ')} (the rows in order).`,
    '',
  );
  return lines;
}

/** The RESULTS.md section, as lines. */
export function redisClusterSection(report: RedisClusterReport | undefined): string[] {
  if (report === undefined) {
    return ['## Redis Cluster', '', 'Not measured: no `redis-server` 7 and `redis-cli` on the PATH.'];
  }
  const { scaleOut, failover } = report;
  const lines = ['## Redis Cluster: scale-out of host processes, and a failover', '', ...scaleOutLines(scaleOut)];
  lines.push(
    `Failover: \`bench/redisClusterFailover.ts\`: a host over the cluster (\`cluster-node-timeout\` ${failover.nodeTimeoutMs.toLocaleString('en')} ms), ${failover.readers} readers of one session following \`/sessions/:id/events\` and resuming with \`last-event-id\`; a run streams on it; SIGKILL of the master of its slot after 30 events. The log sends its appends and lease renewals again until the replica is promoted and the client has the new topology (\`reconnectWithinMs\`), so the run goes on to its end; readers cut off meanwhile resume from their cursor. Every reader's events are checked against the log read afterwards.`,
    '',
    '| kill → replica promoted ms | kill → first event appended after it delivered ms | the interrupted run completed | events lost | delivered twice | readers given a gap (410) | delivered, not in the log |',
    '|---|---|---|---|---|---|---|',
    `| ${Math.round(failover.killToPromotedMs).toLocaleString('en')} | ${Math.round(failover.killToFirstEventMs).toLocaleString('en')} | ${failover.interruptedRunCompleted ? 'yes' : 'no'} | ${failover.lost} | ${failover.twice} | ${failover.gaps} | ${failover.deliveredNotInLog} |`,
  );
  return lines;
}

/** The line of the "Targets" section. */
export function redisClusterTarget(report: RedisClusterReport | undefined): string {
  if (report === undefined) return '- Redis Cluster: not measured.';
  const { failover } = report;
  const [first] = report.scaleOut;
  const scaleOut =
    first === undefined
      ? 'scale-out not measured'
      : `${first.clients} ${first.reader} readers of an unpaced run, events/s delivered (median of the rounds) ${medianRates(report.scaleOut)}`;
  return `- Redis Cluster: ${scaleOut}; failover: first event ${count(failover.killToFirstEventMs)} ms after the kill, ${failover.interruptedRunCompleted ? 'the interrupted run completed' : 'the interrupted run did not complete'}, ${failover.lost} lost, ${failover.twice} twice.`;
}
