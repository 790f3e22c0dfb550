// The figures of bench/server.ts and their section of bench/RESULTS.md, apart from the
// bench itself so that bench/run.ts formats them without loading what measures them.
import type { HostMemorySample } from './serverHost';

export type ServerLoadMode = 'memory' | 'redis' | 'redis-cluster';

/**
 * What a client does with its stream: `full` parses every event and dispatches it into its own
 * `createAgentStore()` (its final state checked against the host's); `light` checks each
 * frame's cursor and the count on the bytes, parsing only the run's first and terminal events.
 */
export type LoadReader = 'full' | 'light';

/** Events besides the deltas: run.started, the prompt's started and completed, the answer's, run.completed. */
export const FRAME_EVENTS = 6;
/** The run before the measured one, so that the host and the clients are measured warm. */
export const WARMUP = { clients: 20, deltas: 500 };

/** One mode's figures. Times in ms, memory in bytes. */
export interface ServerLoadReport {
  mode: ServerLoadMode;
  /** Host processes the clients were spread over (the run on the first): 1 but on a cluster. */
  hostProcesses: number;
  /** The machine's cores, which the host, the clients and Redis share. */
  cores: number;
  clients: number;
  clientProcesses: number;
  reader: LoadReader;
  eventsPerClient: number;
  totalEvents: number;
  burstSize: number;
  /** 0: unpaced. */
  burstMs: number;
  /** The run's first event to its terminal event, by their timestamps. */
  runMs: number;
  /** The run's first event to the last client's receipt of the terminal event. */
  wallMs: number;
  eventsPerSecond: number;
  latency: { p50: number; p99: number; max: number };
  host: { baseline: HostMemorySample; peak: HostMemorySample; cpuMs: number };
  /** CPU time of the client processes, from their connecting to their last terminal event. */
  clientsCpuMs: number;
  /** Streams the clients had to resume (the host dropped a slow reader). */
  reconnects: number;
  /** Reads of its stream per client, on average: the fewer, the more frames the host wrote at once. */
  readsPerClient: number;
  /**
   * CPU over the wall alone (Linux, sampled every 50 ms from /proc): the host processes' and the
   * client processes' CPU time, and the machine's busy share of its cores, every process counted.
   */
  wallCpu?: { hostsMs: number; clientsMs: number; machineBusy: number };
  /** The share of the machine's CPU time not idle while the clients followed the run, every process counted (Linux). */
  machineBusy?: number;
  /** Connections to Redis at the most, sampled every 100 ms (the sampler's own not counted). */
  redisConnections?: number;
  /** CPU time of redis-server over the run (`INFO cpu`). */
  redisCpuMs?: number;
}

const mb = (bytes: number) => (bytes / 1024 ** 2).toFixed(1);
const fixed = (value: number, digits = 1) => value.toFixed(digits);

/** How the run's deltas come: `10 at once every 10 ms (1,000 deltas/s, paced against the run's start)`. */
export function paceOf(report: ServerLoadReport): string {
  if (report.burstMs === 0) {
    return `${report.burstSize} at once, each burst as soon as the host took the last (unpaced: a macrotask between bursts)`;
  }
  const rate = (report.burstSize * 1000) / report.burstMs;
  return `${report.burstSize} at once every ${report.burstMs} ms (${rate.toLocaleString('en')} deltas/s, paced against the run's start)`;
}

/** What a light reader does with its stream (bench/serverLightClients.ts). */
export const LIGHT_READER =
  "it sends its `GET` over a plain TCP connection and reads the response (HTTP/1.1, chunked) into one reused buffer, not through `fetch`; on the bytes, it finds the frames (`Buffer.indexOf`), checks that every frame's `id:` cursor is above the one before, takes each event's `timestamp` for its latency, parses only the run's `run.started` and terminal event (their run checked), and counts the events: every reader must have the run's count, in order, ending with its terminal event (checked: the bench throws otherwise). It keeps no state.";

/** What each client does with the stream, and what the bench checks of it. */
export function readerOf(report: ServerLoadReport): string {
  if (report.reader === 'light') return `Each client is a light reader: ${LIGHT_READER}`;
  return "Each client parses the SSE (eventsource-parser) and dispatches every event into its own `createAgentStore()`; every client's state at the end equals the host's `GET /state`, and every event arrived once and in order (checked: the bench throws otherwise).";
}

/** Host, clients and Redis CPU time over the wall, as a share of the machine's cores. */
function benchBusy(report: ServerLoadReport): number {
  const cpuMs = report.host.cpuMs + report.clientsCpuMs + (report.redisCpuMs ?? 0);
  return cpuMs / (report.wallMs * report.cores);
}

/** The log of a row, and its host processes when more than one. */
const logLabel = (report: ServerLoadReport) =>
  report.hostProcesses === 1 ? report.mode : `${report.mode}, ${report.hostProcesses} hosts`;

/** The RESULTS.md section of these reports, as lines. */
export function serverLoadSection(reports: readonly ServerLoadReport[]): string[] {
  const [first] = reports;
  if (first === undefined) return [];
  const processes = first.clientProcesses === 1 ? 'one process' : `${first.clientProcesses} processes`;
  const lines = [
    `## Agent host under load: ${first.clients} SSE clients on one run`,
    '',
    `\`bench/server.ts\`: one host (\`createAgentHost\`, \`toNodeHandler\`) in a process of its own; ${first.clients} clients in ${processes} of their own, each a plain \`fetch\` of \`GET /sessions/:id/events\` on a fresh session, all connected before \`POST /runs\` starts the run. The run is the local provider playing one assistant message of ${(first.eventsPerClient - FRAME_EVENTS).toLocaleString('en')} text deltas of 21 characters, ${paceOf(first)}, ${first.eventsPerClient.toLocaleString('en')} events in all. ${readerOf(first)} Latency: the client's receive time minus the event's \`timestamp\`, both \`performance.timeOrigin + performance.now()\`. Run: the run's first event to its last, by their timestamps; wall: the first event to the last client's terminal event; events/s = events delivered / wall. Host memory: \`process.memoryUsage()\` of the host process sampled every 50 ms, the baseline after a warm-up run (${WARMUP.clients} clients, ${WARMUP.deltas} deltas) and a collection, before the clients connect. CPU: the host's (baseline to report), the client processes' (connect to last terminal event) and redis-server's (\`INFO cpu\`); CPU busy: the bench's, that sum over the wall, of the machine's ${first.cores} cores, which the host, the clients and Redis share; the machine's, its time not idle over the same run (\`/proc/stat\`), every process counted: where the machine is busier than the bench, other processes took the difference. One measured run per log: on a shared machine latencies vary by several times from run to run.`,
    '',
    '| log | events delivered | run s | wall s | events/s delivered | latency p50 ms | p99 ms | max ms | host RSS MB, baseline → peak | host heap MB, baseline → peak | CPU s: host / clients / Redis | CPU busy: bench / machine | Redis connections |',
    '|---|---|---|---|---|---|---|---|---|---|---|---|---|',
  ];
  for (const report of reports) {
    const { host, latency } = report;
    lines.push(
      `| ${logLabel(report)} | ${report.totalEvents.toLocaleString('en')} | ${fixed(report.runMs / 1000, 2)} | ${fixed(report.wallMs / 1000, 2)} | ${Math.round(report.eventsPerSecond).toLocaleString('en')} | ${fixed(latency.p50)} | ${fixed(latency.p99)} | ${fixed(latency.max)} | ${mb(host.baseline.rss)} → ${mb(host.peak.rss)} | ${mb(host.baseline.heapUsed)} → ${mb(host.peak.heapUsed)} | ${fixed(host.cpuMs / 1000, 2)} / ${fixed(report.clientsCpuMs / 1000, 2)} / ${report.redisCpuMs === undefined ? '-' : fixed(report.redisCpuMs / 1000, 2)} | ${fixed(benchBusy(report) * 100, 0)} % / ${report.machineBusy === undefined ? '-' : `${fixed(report.machineBusy * 100, 0)} %`} | ${report.redisConnections ?? '-'} |`,
    );
  }
  if (!reports.some((report) => report.mode === 'redis')) {
    lines.push('', 'Redis log: not measured (no `redis-server` on the PATH).');
  }
  if (reports.some((report) => report.mode === 'redis-cluster')) {
    lines.push(
      '',
      'redis-cluster: a Redis Cluster of three masters with one replica each (`startRedisCluster`, six `redis-server` processes on the same cores), `createRedisEventLog({ cluster })` in each host process; the client processes are spread over the hosts (process i reads from host i modulo the hosts), the run is started on the first host, the others read it from the cluster. Host RSS and CPU: the hosts added up; Redis connections and CPU: every node, replicas included.',
    );
  } else {
    lines.push('', 'Redis Cluster log: not measured (no `redis-server` 7 and `redis-cli` on the PATH).');
  }
  const reconnects = reports.filter((report) => report.reconnects > 0);
  if (reconnects.length > 0) {
    lines.push(
      '',
      `Streams resumed after the host dropped a slow reader: ${reconnects.map((report) => `${report.reconnects} (${report.mode})`).join(', ')}.`,
    );
  }
  return lines;
}

/** The line of the "Targets" section: the issue's load criterion, and the figures behind it. */
export function serverLoadTarget(reports: readonly ServerLoadReport[]): string {
  const [first] = reports;
  if (first === undefined) return '- Load: not measured.';
  const figures = reports.map(
    (report) =>
      `${logLabel(report)} ${Math.round(report.eventsPerSecond).toLocaleString('en')} events/s delivered, p99 ${fixed(report.latency.p99, 0)} ms, host peak RSS ${mb(report.host.peak.rss)} MB`,
  );
  return `- ${first.clients} concurrent SSE clients on one host, every client's final state equal to the run's: yes, ${figures.join('; ')}.`;
}
