// The agent host under load: one run of about 5,000 events followed live by 200 SSE clients
// on one host, with a memory log and with a Redis log, and on two hosts over a Redis Cluster
// (three masters, three replicas), the clients spread over both. A host runs in a process of its own
// (bench/serverHost.ts), so its memory is its own; the clients run in one or more other
// processes (bench/serverClientProcess.ts). Every event must arrive once and in order at every
// client, and every full client's final state equal the host's state of the session, or the
// bench throws. Light clients (`--reader light`) check the order and the count on the bytes
// and keep no state, so that many of them cost less than the hosts they read from.
//
// Alone: node --expose-gc --import tsx bench/server.ts [--clients 200] [--events 5000]
//   [--burst-size 10] [--burst-ms 10 (0: unpaced)] [--client-processes 1] [--reader full|light]
//   [--modes memory,redis,redis-cluster] [--cluster-hosts 2] [--json] [--host-cpu-prof <dir>]
//   [--client-cpu-prof <dir>]
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import { isDeepStrictEqual } from 'node:util';
import { redisClusterAvailable, startRedisCluster, type TestRedisCluster } from '../tests/support/redisCluster';
import { redisServerAvailable, startRedisServer, type TestRedisServer } from '../tests/support/redisServer';
import { machineCpuTimes, startCpuTimeline } from './cpuTimeline';
import { openRedisSampler, type RedisSampler } from './redisSampler';
import type { ClientProcessMessage, ClientProcessRequest, LoadClientSummary } from './serverClientProcess';
import type { HostMessage, HostRequest } from './serverHost';
import {
  FRAME_EVENTS,
  type LoadReader,
  type ServerLoadMode,
  type ServerLoadReport,
  serverLoadSection,
  serverLoadTarget,
  WARMUP,
} from './serverLoadReport';
import { type BenchProcess, forkBenchScript } from './serverProcesses';

export type { ServerLoadMode, ServerLoadReport } from './serverLoadReport';

export interface ServerLoadOptions {
  /** SSE clients following the run. Default 200. */
  clients?: number;
  /** Events of the run, its start and end included. Default 5,000. */
  events?: number;
  /** Text deltas the provider emits at once. Default 10. */
  burstSize?: number;
  /** Milliseconds from one burst to the next. Default 10: 1,000 deltas a second. 0: unpaced, a burst as soon as the host takes it. */
  burstMs?: number;
  /** Processes the clients are spread over. Default 1. */
  clientProcesses?: number;
  /** Full clients (a store each, their states checked) or light ones (order and count checked on the bytes). Default full. */
  reader?: LoadReader;
  /** Default: all three, Redis only where `redis-server` is on the PATH, the cluster where `redis-cli` is too. */
  modes?: readonly ServerLoadMode[];
  /** Host processes over the Redis Cluster, the clients spread over them. Default 2. */
  clusterHosts?: number;
  /** Write a V8 CPU profile of each host process into this directory. */
  hostCpuProfileDir?: string;
  /** Write a V8 CPU profile of each client process into this directory. */
  clientCpuProfileDir?: string;
}

const CLIENT_TIMEOUT_MS = 120_000;
const REDIS_SAMPLE_MS = 100;
const gc = (globalThis as { gc?: () => void }).gc ?? (() => {});

type HostProcess = BenchProcess<HostRequest, HostMessage>;
type ClientProcess = BenchProcess<ClientProcessRequest, ClientProcessMessage>;

async function postRun(url: string, sessionId: string, body: unknown): Promise<void> {
  const response = await fetch(`${url}/sessions/${sessionId}/runs`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  if (response.status !== 202) throw new Error(`POST /runs answered ${response.status}: ${await response.text()}`);
}

async function hostState(url: string, sessionId: string): Promise<unknown> {
  const response = await fetch(`${url}/sessions/${sessionId}/state`);
  if (!response.ok) throw new Error(`GET /state answered ${response.status}`);
  return ((await response.json()) as { state: unknown }).state;
}

/** What the client processes saw of one run, all together. */
interface FollowedRun {
  clients: LoadClientSummary[];
  latencies: Float64Array;
  cpuMs: number;
  failures: string[];
}

/** A failed client process's message as a rejection, else its answer. */
async function answerOf<Type extends ClientProcessMessage['type']>(
  clientProcess: ClientProcess,
  type: Type,
): Promise<Extract<ClientProcessMessage, { type: Type }>> {
  const failed = clientProcess.next('failed').then((message) => {
    throw new Error(`A client process failed: ${message.message}`);
  });
  return Promise.race([clientProcess.next(type), failed]);
}

/**
 * Connects `clients` SSE clients, spread over the client processes, to a fresh session, and
 * only once every one is connected starts the run: each reads it whole, live. Checks that each
 * client got every event once and in order, and each full client's final state against the host's.
 */
async function followRun(
  urls: readonly string[],
  sessionId: string,
  provider: string,
  clients: number,
  events: number,
  reader: LoadReader,
  processes: readonly ClientProcess[],
): Promise<FollowedRun> {
  const runId = `${sessionId}-run`;
  const url = urls[0] as string;
  // Client process i reads from host i modulo the hosts: the run is started on the first.
  const optionsOf = (index: number) => ({
    url: urls[index % urls.length] as string,
    sessionId,
    runId,
    expectedEvents: events,
    timeoutMs: CLIENT_TIMEOUT_MS,
  });
  const shares = processes.map((_, index) => Math.floor((clients + index) / processes.length));
  const followed = processes.map((clientProcess) => answerOf(clientProcess, 'followed'));
  // Awaited below; a process that fails while the others connect is reported through `connected`.
  for (const answer of followed) answer.catch(() => {});
  const connected = processes.map((clientProcess) => answerOf(clientProcess, 'connected'));
  processes.forEach((clientProcess, index) => {
    clientProcess.send({ type: 'follow', clients: shares[index] as number, reader, options: optionsOf(index) });
  });
  await Promise.all(connected);
  await postRun(url, sessionId, { provider, runId, input: { prompt: 'Write a long answer.' } });
  const answers = await Promise.all(followed);
  // Through JSON, as the host's state came: what a store holds as `undefined` is absent there.
  const expected = await hostState(url, sessionId);
  const failures: string[] = [];
  const summaries: LoadClientSummary[] = [];
  answers.forEach((answer, processIndex) => {
    const label = (index: number) => `client ${index} of process ${processIndex}`;
    answer.clients.forEach((client, index) => {
      if (client.problems.length > 0) failures.push(`${label(index)}: ${client.problems.slice(0, 3).join('; ')}`);
      if (client.events !== events) failures.push(`${label(index)}: ${client.events} events, the run has ${events}`);
    });
    if (reader === 'full' && !isDeepStrictEqual(JSON.parse(JSON.stringify(answer.state)), expected)) {
      failures.push(`${label(0)}: its final state differs from the host's`);
    }
    for (const index of answer.differing) failures.push(`${label(index)}: its final state differs from client 0's`);
    summaries.push(...answer.clients);
  });
  const latencies = new Float64Array(answers.reduce((sum, answer) => sum + answer.latencies.length, 0));
  let offset = 0;
  for (const answer of answers) {
    latencies.set(answer.latencies, offset);
    offset += answer.latencies.length;
  }
  const cpuMs = answers.reduce((sum, answer) => sum + answer.cpuMs, 0);
  return { clients: summaries, latencies, cpuMs, failures };
}

function percentile(sorted: Float64Array, fraction: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil(fraction * sorted.length) - 1)] as number;
}

type ResolvedOptions = Required<
  Omit<ServerLoadOptions, 'hostCpuProfileDir' | 'clientCpuProfileDir' | 'clusterHosts'>
> & {
  hostCpuProfileDir: string | undefined;
  clientCpuProfileDir: string | undefined;
};

/** Node's flags that write a V8 CPU profile of the process into `directory`, when one is given. */
const cpuProfileFlags = (directory: string | undefined) =>
  directory === undefined ? [] : ['--cpu-prof', '--cpu-prof-dir', directory];

async function measureMode(
  mode: ServerLoadMode,
  options: ResolvedOptions,
  hostCount: number,
): Promise<ServerLoadReport> {
  let redis: TestRedisServer | undefined;
  let cluster: TestRedisCluster | undefined;
  let sampler: RedisSampler | undefined;
  const hosts: HostProcess[] = [];
  const clientProcesses: ClientProcess[] = [];
  // Every host has a client process of its own at least.
  const clientProcessCount = Math.max(options.clientProcesses, hostCount);
  try {
    const env: Record<string, string> = {
      LOAD_DELTAS: String(options.events - FRAME_EVENTS),
      LOAD_WARMUP_DELTAS: String(WARMUP.deltas),
      LOAD_BURST_SIZE: String(options.burstSize),
      LOAD_BURST_MS: String(options.burstMs),
    };
    if (mode === 'redis') {
      redis = await startRedisServer();
      sampler = await openRedisSampler([redis.url]);
      env.LOAD_REDIS_URL = redis.url;
    }
    if (mode === 'redis-cluster') {
      cluster = await startRedisCluster();
      sampler = await openRedisSampler(cluster.nodes.map((node) => node.url));
      env.LOAD_REDIS_CLUSTER_NODES = cluster.rootNodes.map((node) => node.url).join(',');
    }
    for (let index = 0; index < hostCount; index += 1) {
      hosts.push(
        forkBenchScript<HostRequest, HostMessage>('serverHost.ts', {
          env,
          execArgv: cpuProfileFlags(options.hostCpuProfileDir),
        }),
      );
    }
    for (let index = 0; index < clientProcessCount; index += 1) {
      clientProcesses.push(
        forkBenchScript<ClientProcessRequest, ClientProcessMessage>('serverClientProcess.ts', {
          execArgv: cpuProfileFlags(options.clientCpuProfileDir),
        }),
      );
    }
    const [ready] = await Promise.all([
      Promise.all(hosts.map((host) => host.next('ready'))),
      ...clientProcesses.map((clientProcess) => clientProcess.next('ready')),
    ]);
    const urls = ready.map((message) => message.url);
    // A short run first, so the host and the clients are measured warm, not compiling.
    const warmup = await followRun(
      urls,
      'warmup',
      'warmup',
      WARMUP.clients,
      WARMUP.deltas + FRAME_EVENTS,
      options.reader,
      clientProcesses,
    );
    if (warmup.failures.length > 0) throw new Error(`Warm-up (${mode}): ${warmup.failures.slice(0, 10).join('\n')}`);

    await Promise.all(
      hosts.map((host) => {
        const baselineTaken = host.next('baseline');
        host.send({ type: 'baseline' });
        return baselineTaken;
      }),
    );
    const redisCpuBefore = await sampler?.cpuMs();
    let redisConnections = 0;
    const sampleRedis = () =>
      sampler
        ?.connections()
        .then((count) => {
          redisConnections = Math.max(redisConnections, count);
        })
        .catch(() => {});
    const watchRedis = sampler && setInterval(sampleRedis, REDIS_SAMPLE_MS);
    const machineBefore = machineCpuTimes();
    const pidsOf = (processes: readonly { pid: number | undefined }[]) =>
      processes.flatMap((process) => (process.pid === undefined ? [] : [process.pid]));
    const timeline = startCpuTimeline([pidsOf(hosts), pidsOf(clientProcesses)]);
    const run = await followRun(urls, 'load', 'load', options.clients, options.events, options.reader, clientProcesses);
    const machineAfter = machineCpuTimes();
    const cpuTimeline = timeline?.stop();
    clearInterval(watchRedis);
    const reports = await Promise.all(
      hosts.map((host) => {
        const reported = host.next('report');
        host.send({ type: 'report' });
        return reported;
      }),
    );
    // The hosts together: their memory added up, their CPU time too.
    const total = (of: (report: (typeof reports)[number]) => number) =>
      reports.reduce((sum, report) => sum + of(report), 0);
    const report = {
      baseline: { rss: total((one) => one.baseline.rss), heapUsed: total((one) => one.baseline.heapUsed) },
      peak: { rss: total((one) => one.peak.rss), heapUsed: total((one) => one.peak.heapUsed) },
      cpuMs: total((one) => one.cpuMs),
    };
    const redisCpuAfter = await sampler?.cpuMs();
    await sampleRedis();
    if (run.failures.length > 0) {
      throw new Error(
        `Server load (${mode}): ${run.failures.length} failures:\n${run.failures.slice(0, 10).join('\n')}`,
      );
    }

    const first = run.clients[0] as LoadClientSummary;
    const wallEnd = Math.max(...run.clients.map((client) => client.terminalReceivedAt));
    const wallMs = wallEnd - first.firstEventAt;
    const wallCpu = cpuTimeline?.over(first.firstEventAt, wallEnd);
    const latencies = run.latencies.sort();
    return {
      mode,
      cores: os.cpus().length,
      hostProcesses: hostCount,
      clients: options.clients,
      clientProcesses: clientProcessCount,
      reader: options.reader,
      eventsPerClient: options.events,
      totalEvents: latencies.length,
      burstSize: options.burstSize,
      burstMs: options.burstMs,
      runMs: first.terminalEventAt - first.firstEventAt,
      wallMs,
      eventsPerSecond: latencies.length / (wallMs / 1000),
      latency: {
        p50: percentile(latencies, 0.5),
        p99: percentile(latencies, 0.99),
        max: latencies[latencies.length - 1] as number,
      },
      host: { baseline: report.baseline, peak: report.peak, cpuMs: report.cpuMs },
      clientsCpuMs: run.cpuMs,
      reconnects: run.clients.reduce((sum, client) => sum + client.reconnects, 0),
      readsPerClient: run.clients.reduce((sum, client) => sum + client.reads, 0) / run.clients.length,
      ...(wallCpu === undefined
        ? {}
        : {
            wallCpu: {
              hostsMs: wallCpu.groupsMs[0] as number,
              clientsMs: wallCpu.groupsMs[1] as number,
              machineBusy: wallCpu.machineBusy,
            },
          }),
      ...(machineBefore === undefined || machineAfter === undefined
        ? {}
        : {
            machineBusy:
              1 - (machineAfter.idle - machineBefore.idle) / Math.max(1, machineAfter.total - machineBefore.total),
          }),
      ...(redisCpuBefore === undefined || redisCpuAfter === undefined
        ? {}
        : { redisConnections, redisCpuMs: redisCpuAfter - redisCpuBefore }),
    };
  } finally {
    await Promise.all(clientProcesses.map((clientProcess) => clientProcess.close({ type: 'close' })));
    await Promise.all(hosts.map((host) => host.close({ type: 'close' })));
    await sampler?.close();
    await redis?.stop();
    await cluster?.stop();
  }
}

/** Runs the load in each mode, one after the other, each on processes (and a redis-server) of its own. */
export async function measureServerLoad(options: ServerLoadOptions = {}): Promise<ServerLoadReport[]> {
  const resolved: ResolvedOptions = {
    clients: options.clients ?? 200,
    events: options.events ?? 5_000,
    burstSize: options.burstSize ?? 10,
    burstMs: options.burstMs ?? 10,
    clientProcesses: options.clientProcesses ?? 1,
    reader: options.reader ?? 'full',
    modes:
      options.modes ??
      (redisClusterAvailable()
        ? ['memory', 'redis', 'redis-cluster']
        : redisServerAvailable()
          ? ['memory', 'redis']
          : ['memory']),
    hostCpuProfileDir: options.hostCpuProfileDir,
    clientCpuProfileDir: options.clientCpuProfileDir,
  };
  if (resolved.events <= FRAME_EVENTS) throw new RangeError(`events must be above ${FRAME_EVENTS}`);
  if (!(resolved.burstMs >= 0)) throw new RangeError('burstMs must be 0 (unpaced) or more');
  if (resolved.reader !== 'full' && resolved.reader !== 'light') throw new RangeError('reader must be full or light');
  if (!(resolved.clientProcesses >= 1 && resolved.clientProcesses <= Math.min(resolved.clients, WARMUP.clients))) {
    throw new RangeError(`clientProcesses must be from 1 to the clients (and ${WARMUP.clients} at most)`);
  }
  const reports: ServerLoadReport[] = [];
  for (const mode of resolved.modes) {
    reports.push(await measureMode(mode, resolved, mode === 'redis-cluster' ? (options.clusterHosts ?? 2) : 1));
    gc();
  }
  return reports;
}

function argument(name: string): string | undefined {
  const index = process.argv.indexOf(`--${name}`);
  return index === -1 ? undefined : process.argv[index + 1];
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const options: ServerLoadOptions = {};
  for (const [key, name] of [
    ['clients', 'clients'],
    ['events', 'events'],
    ['burstSize', 'burst-size'],
    ['burstMs', 'burst-ms'],
    ['clientProcesses', 'client-processes'],
    ['clusterHosts', 'cluster-hosts'],
  ] as const) {
    const value = argument(name);
    if (value !== undefined) options[key] = Number(value);
  }
  const modes = argument('modes');
  if (modes !== undefined) options.modes = modes.split(',') as ServerLoadMode[];
  const reader = argument('reader');
  if (reader !== undefined) options.reader = reader as LoadReader;
  const profileDir = argument('host-cpu-prof');
  if (profileDir !== undefined) options.hostCpuProfileDir = profileDir;
  const clientProfileDir = argument('client-cpu-prof');
  if (clientProfileDir !== undefined) options.clientCpuProfileDir = clientProfileDir;
  const reports = await measureServerLoad(options);
  if (process.argv.includes('--json')) process.stdout.write(JSON.stringify(reports));
  else console.log([...serverLoadSection(reports), '', serverLoadTarget(reports)].join('\n'));
  process.exit(0);
}
