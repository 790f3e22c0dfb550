// One agent host in a process of its own, for bench/server.ts: the clients' parsing and
// stores run in the bench's process, so this process's memory is the host's alone. Forked
// with an IPC channel; says `ready` with its URL once it listens, then answers `baseline`
// (collect, sample, start watching), `report` (the peak since the baseline and the CPU time
// used) and `close`.
// Environment: LOAD_DELTAS, LOAD_WARMUP_DELTAS, LOAD_BURST_SIZE, LOAD_BURST_MS, and LOAD_REDIS_URL for a Redis
// log or LOAD_REDIS_CLUSTER_NODES (node URLs, comma-separated) for a Redis Cluster log.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setImmediate, setTimeout as sleep } from 'node:timers/promises';
import { createLocalAgentProvider } from '../providers/local/createLocalAgentProvider';
import type { LocalAgentChunk } from '../providers/local/localAgentChunks';
import type { AgentEventLog } from '../server/AgentEventLog';
import { createAgentHost } from '../server/createAgentHost';
import { createMemoryEventLog } from '../server/createMemoryEventLog';
import { toNodeHandler } from '../server/node';
import { createRedisEventLog } from '../server/redis/createRedisEventLog';

/** Resident set and V8 heap in use, in bytes. */
export interface HostMemorySample {
  rss: number;
  heapUsed: number;
}

/** What the bench asks the host process. */
export type HostRequest = { type: 'baseline' } | { type: 'report' } | { type: 'close' };

/** What the host process answers. */
export type HostMessage =
  | { type: 'ready'; url: string }
  | { type: 'baseline'; memory: HostMemorySample }
  | {
      type: 'report';
      baseline: HostMemorySample;
      peak: HostMemorySample;
      /** User + system CPU time since the baseline, in ms. */
      cpuMs: number;
      /** Memory samples taken since the baseline. */
      samples: number;
    };

/** The text of delta `index`: 21 characters, a few tokens. */
function deltaText(index: number): string {
  return `Token ${String(index).padStart(5, '0')} of the text `.slice(0, 21);
}

const SAMPLE_MS = 50;
const HEARTBEAT_MS = 15_000;
const env = process.env;
const deltas = Number(env.LOAD_DELTAS ?? 4_994);
const warmupDeltas = Number(env.LOAD_WARMUP_DELTAS ?? 500);
const burstSize = Number(env.LOAD_BURST_SIZE ?? 10);
const burstMs = Number(env.LOAD_BURST_MS ?? 10);
const gc = (globalThis as { gc?: () => void }).gc ?? (() => {});
const now = () => performance.timeOrigin + performance.now();

/**
 * One assistant message of `count` text deltas, `burstSize` at once every `burstMs`, as a
 * model's stream arrives one network read at a time. Bursts are paced against the clock of
 * the run's start, not chained timers, so a busy host delays a burst without slowing the rate.
 * `burstMs` 0 is unpaced: the next burst comes after a macrotask, as the next network read of
 * a fast model would, so the host serves its readers in between.
 */
async function* burstyAnswer(count: number, signal: AbortSignal): AsyncGenerator<LocalAgentChunk> {
  const startedAt = performance.now();
  yield { type: 'text.start', id: 'answer' };
  for (let index = 0; index < count; index += 1) {
    if (index > 0 && index % burstSize === 0) {
      const wait = startedAt + (index / burstSize) * burstMs - performance.now();
      if (wait > 0) await sleep(wait, undefined, { signal });
      else if (burstMs === 0) await setImmediate(undefined, { signal });
    }
    yield { type: 'text.delta', id: 'answer', delta: deltaText(index) };
  }
  yield { type: 'text.end', id: 'answer' };
  yield { type: 'done' };
}

// Room for the whole run: a reader following live never needs a trimmed entry, but the
// bound must not be what the bench measures.
const maxEntriesPerSession = Math.max(10_000, deltas * 2);
const log: AgentEventLog =
  env.LOAD_REDIS_CLUSTER_NODES !== undefined
    ? createRedisEventLog({
        cluster: { rootNodes: env.LOAD_REDIS_CLUSTER_NODES.split(',').map((url) => ({ url })) },
        keyPrefix: 'bench:',
        maxEntriesPerSession,
      })
    : env.LOAD_REDIS_URL !== undefined
      ? createRedisEventLog({ url: env.LOAD_REDIS_URL, keyPrefix: 'bench:', maxEntriesPerSession })
      : createMemoryEventLog({ maxEntriesPerSession });
const host = createAgentHost({
  eventLog: log,
  // Room for the whole run in the session's feed too: a reader that falls behind an unpaced
  // run reads it from the feed, as one at the live edge does, not from the log on its own.
  feedCapacity: Math.max(4_096, deltas * 2),
  // Sub-millisecond wall-clock timestamps, comparable with the clients' receive times.
  now,
  // The default heartbeat: while the run streams, no reader is idle long enough to get one.
  heartbeatMs: HEARTBEAT_MS,
  onError: (error, context) => console.error('bench host:', context, error),
  providers: {
    load: createLocalAgentProvider({ runtime: (_input, signal) => burstyAnswer(deltas, signal) }),
    warmup: createLocalAgentProvider({ runtime: (_input, signal) => burstyAnswer(warmupDeltas, signal) }),
  },
});

function sample(): HostMemorySample {
  const { rss, heapUsed } = process.memoryUsage();
  return { rss, heapUsed };
}

let baseline = sample();
let peak = baseline;
let cpuAtBaseline = process.cpuUsage();
let samples = 0;
const watch = setInterval(() => {
  const current = sample();
  samples += 1;
  peak = { rss: Math.max(peak.rss, current.rss), heapUsed: Math.max(peak.heapUsed, current.heapUsed) };
}, SAMPLE_MS);

function send(message: HostMessage): void {
  process.send?.(message);
}

const server = createServer(toNodeHandler(host.fetch));
server.listen(0, '127.0.0.1', () => {
  const { port } = server.address() as AddressInfo;
  send({ type: 'ready', url: `http://127.0.0.1:${port}` });
});

process.on('message', (request: HostRequest) => {
  if (request.type === 'baseline') {
    gc();
    baseline = sample();
    peak = baseline;
    samples = 0;
    cpuAtBaseline = process.cpuUsage();
    send({ type: 'baseline', memory: baseline });
    return;
  }
  if (request.type === 'report') {
    const current = sample();
    peak = { rss: Math.max(peak.rss, current.rss), heapUsed: Math.max(peak.heapUsed, current.heapUsed) };
    const cpu = process.cpuUsage(cpuAtBaseline);
    send({ type: 'report', baseline, peak, cpuMs: (cpu.user + cpu.system) / 1000, samples });
    return;
  }
  clearInterval(watch);
  server.closeAllConnections();
  server.close();
  host
    .close()
    .then(() => log.close())
    .finally(() => process.exit(0));
});
