// The Redis Cluster figures of bench/run.ts (scale-out of host processes over one cluster, and
// a failover) and their section of bench/RESULTS.md, apart from what measures them.
import type { FailoverReport } from './redisClusterFailover';
import type { ServerLoadReport } from './serverLoadReport';

export interface RedisClusterReport {
  /** bench/server.ts on the cluster with the same readers, one host process, then two. */
  scaleOut: ServerLoadReport[];
  failover: FailoverReport;
}

const fixed = (value: number, digits = 1) => value.toFixed(digits);
const mb = (bytes: number) => (bytes / 1024 ** 2).toFixed(1);

/** The RESULTS.md section, as lines. */
export function redisClusterSection(report: RedisClusterReport | undefined): string[] {
  if (report === undefined) {
    return ['## Redis Cluster', '', 'Not measured: no `redis-server` 7 and `redis-cli` on the PATH.'];
  }
  const { scaleOut, failover } = report;
  const [first] = scaleOut;
  const lines = ['## Redis Cluster: scale-out of host processes, and a failover', ''];
  if (first !== undefined) {
    lines.push(
      `Scale-out: \`bench/server.ts --modes redis-cluster --cluster-hosts <n>\` with ${first.clients} SSE clients in ${first.clientProcesses} client processes on one run of ${first.eventsPerClient.toLocaleString('en')} events (${((first.burstSize * 1000) / first.burstMs).toLocaleString('en')} deltas/s), over a cluster of three masters with one replica each, the client processes spread over the host processes as in the load section (the same client processes either way: only the hosts change). All on the machine's ${first.cores} cores: the hosts, the client processes and six redis-servers.`,
      '',
      '| host processes | events delivered | wall s | events/s delivered | latency p50 ms | p99 ms | host RSS MB (all hosts), peak | CPU s: hosts / clients / Redis | CPU busy: machine | Redis connections |',
      '|---|---|---|---|---|---|---|---|---|---|',
    );
    for (const row of scaleOut) {
      lines.push(
        `| ${row.hostProcesses} | ${row.totalEvents.toLocaleString('en')} | ${fixed(row.wallMs / 1000, 2)} | ${Math.round(row.eventsPerSecond).toLocaleString('en')} | ${fixed(row.latency.p50)} | ${fixed(row.latency.p99)} | ${mb(row.host.peak.rss)} | ${fixed(row.host.cpuMs / 1000, 2)} / ${fixed(row.clientsCpuMs / 1000, 2)} / ${row.redisCpuMs === undefined ? '-' : fixed(row.redisCpuMs / 1000, 2)} | ${row.machineBusy === undefined ? '-' : `${fixed(row.machineBusy * 100, 0)} %`} | ${row.redisConnections ?? '-'} |`,
      );
    }
    if (scaleOut.every((row) => (row.machineBusy ?? 0) > 0.9)) {
      lines.push(
        '',
        `The machine was busy throughout (${scaleOut.map((row) => `${fixed((row.machineBusy ?? 0) * 100, 0)} %`).join(', ')}): a second host process adds work (it reads the run from the cluster and writes its own clients' streams) but no cores, so these rows measure the cost of a host process, not what a second machine adds.`,
      );
    }
    lines.push('');
  }
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
  const rates = report.scaleOut.map(
    (row) =>
      `${row.hostProcesses} host${row.hostProcesses === 1 ? '' : 's'} ${Math.round(row.eventsPerSecond).toLocaleString('en')}`,
  );
  const { failover } = report;
  return `- Redis Cluster: ${report.scaleOut[0]?.clients ?? 0} readers, events/s delivered ${rates.join(' → ')}; failover: first event ${Math.round(failover.killToFirstEventMs).toLocaleString('en')} ms after the kill, ${failover.interruptedRunCompleted ? 'the interrupted run completed' : 'the interrupted run did not complete'}, ${failover.lost} lost, ${failover.twice} twice.`;
}
