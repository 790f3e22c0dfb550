// The figures issue 23 asks for, on both event logs: host heap (after a full GC) and Redis
// memory before and after the big-prompt and many-keys attacks; event-loop delay p99
// (perf_hooks.monitorEventLoopDelay) under the big-prompt and slow-reader loads; the time an
// unrelated `GET /state` takes during them. Everything on 127.0.0.1; redis-server is started
// here on a free port.
//
//   node --expose-gc --import tsx bench/hostAttacks.ts            # both logs
//   node --expose-gc --import tsx bench/hostAttacks.ts memory     # one of them
import { type ChildProcess, spawn } from 'node:child_process';
import { createServer } from 'node:http';
import { type AddressInfo, connect, type Socket } from 'node:net';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { createClient } from 'redis';
import { createAgentCommandFactory } from '../protocol/createAgentCommandFactory';
import { createLocalAgentProvider } from '../providers/local/createLocalAgentProvider';
import type { AgentEventLog } from '../server/AgentEventLog';
import { createAgentHost } from '../server/createAgentHost';
import { createMemoryEventLog } from '../server/createMemoryEventLog';
import { toNodeHandler } from '../server/node';
import { createRedisEventLog } from '../server/redis/createRedisEventLog';

const BIG_PROMPT_RUNS = 60;
const BIG_PROMPT_BYTES = 900_000;
const BIG_KEY_COMMANDS = 200;
const BIG_KEY_BYTES = 1_000_000;
const SLOW_READERS = 1_000;

const MB = 1024 * 1024;
const round = (value: number) => Math.round(value * 10) / 10;

function heapMB(): number {
  (globalThis as { gc?: () => void }).gc?.();
  return round(process.memoryUsage().heapUsed / MB);
}

async function startRedis(): Promise<{ url: string; child: ChildProcess }> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as AddressInfo;
  await new Promise((resolve) => probe.close(resolve));
  const child = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
    {
      stdio: 'ignore',
    },
  );
  const url = `redis://127.0.0.1:${port}`;
  for (let attempt = 0; attempt < 100; attempt += 1) {
    const client = createClient({ url });
    client.on('error', () => {});
    try {
      await client.connect();
      await client.close();
      return { url, child };
    } catch {
      await sleep(50);
    }
  }
  throw new Error('redis-server did not start');
}

/** Times `GET /state` of an unrelated session every 100 ms while `load` runs; the slowest and the median. */
async function unrelatedDuring(base: string, load: Promise<unknown>) {
  const times: number[] = [];
  let done = false;
  const loop = (async () => {
    while (!done) {
      const started = performance.now();
      const response = await fetch(`${base}/sessions/unrelated/state`);
      await response.arrayBuffer();
      times.push(performance.now() - started);
      await sleep(100);
    }
  })();
  await load;
  done = true;
  await loop;
  times.sort((a, b) => a - b);
  return { unrelatedMaxMs: round(times.at(-1) ?? 0), unrelatedMedianMs: round(times[times.length >> 1] ?? 0) };
}

/** Event-loop delay p99 and max (ms) while `run` runs. */
async function loopDelayDuring<T>(run: () => Promise<T>): Promise<{ result: T; p99Ms: number; maxMs: number }> {
  const histogram = monitorEventLoopDelay({ resolution: 10 });
  histogram.enable();
  const result = await run();
  histogram.disable();
  return { result, p99Ms: round(histogram.percentile(99) / 1e6), maxMs: round(histogram.max / 1e6) };
}

/** Reads a run's events to its end. */
async function readToEnd(url: string): Promise<void> {
  const response = await fetch(url);
  const reader = response.body!.getReader();
  const decoder = new TextDecoder();
  let tail = '';
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return;
    tail = (tail + decoder.decode(value, { stream: true })).slice(-2_000);
    if (/"type":"run\.(completed|failed|cancelled)"/.test(tail)) {
      await reader.cancel();
      return;
    }
  }
}

/** A reader from the session's start that stops reading once the head came; its status. */
function stalledReader(url: string): Promise<{ status: number; socket: Socket }> {
  const { hostname, port, pathname } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect({ host: hostname, port: Number(port) });
    let head = '';
    socket.once('error', reject);
    socket.on('data', (chunk) => {
      head += chunk.toString('latin1');
      if (!head.includes('\r\n')) return;
      socket.removeAllListeners('data');
      socket.pause();
      resolve({ status: Number(head.split(' ')[1]), socket });
    });
    socket.write(`GET ${pathname} HTTP/1.1\r\nHost: ${hostname}:${port}\r\n\r\n`);
  });
}

async function attack(name: 'memory' | 'redis') {
  const redis = name === 'redis' ? await startRedis() : undefined;
  const admin = redis === undefined ? undefined : createClient({ url: redis.url });
  await admin?.connect();
  const redisMB = async () =>
    admin === undefined ? null : round(Number(/used_memory:(\d+)/.exec(await admin.info('memory'))?.[1]) / MB);
  const log: AgentEventLog =
    redis === undefined ? createMemoryEventLog() : createRedisEventLog({ url: redis.url, keyPrefix: 'attack:' });
  const errors: string[] = [];
  const host = createAgentHost({
    providers: { answer: createLocalAgentProvider({ script: { steps: [{ type: 'text', deltas: ['Noted.'] }] } }) },
    eventLog: log,
    onError: (error) => errors.push(String(error).slice(0, 120)),
  });
  const server = createServer(toNodeHandler(host.fetch));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const figures: Record<string, unknown> = { log: name };

  // Big prompts: 60 runs of one session, each with a 900 KB prompt.
  await fetch(`${base}/sessions/unrelated/state`).then((response) => response.arrayBuffer());
  figures.bigPromptHeapBeforeMB = heapMB();
  figures.bigPromptRedisBeforeMB = await redisMB();
  const bigPrompt = await loopDelayDuring(async () => {
    const load = (async () => {
      for (let index = 0; index < BIG_PROMPT_RUNS; index += 1) {
        const runId = `big-${index}`;
        const prompt = String(index % 10).repeat(BIG_PROMPT_BYTES);
        const response = await fetch(`${base}/sessions/big/runs`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ provider: 'answer', input: { prompt }, runId }),
        });
        await response.arrayBuffer();
        await readToEnd(`${base}/sessions/big/events?runId=${runId}`);
      }
    })();
    return unrelatedDuring(base, load);
  });
  figures.bigPromptHeapAfterMB = heapMB();
  figures.bigPromptRedisAfterMB = await redisMB();
  figures.bigPromptLoopDelayP99Ms = bigPrompt.p99Ms;
  figures.bigPromptLoopDelayMaxMs = bigPrompt.maxMs;
  figures.bigPromptUnrelatedStateMaxMs = bigPrompt.result.unrelatedMaxMs;
  figures.bigPromptUnrelatedStateMedianMs = bigPrompt.result.unrelatedMedianMs;
  if ('retainedBytes' in log) figures.memoryLogRetainedMB = round((log.retainedBytes as () => number)() / MB);

  // Many keys: 200 commands with 1 MB idempotency keys for runs that do not exist.
  figures.manyKeysHeapBeforeMB = heapMB();
  figures.manyKeysRedisBeforeMB = await redisMB();
  const commands = createAgentCommandFactory({ sessionId: 'keys', runId: 'no-such-run' });
  const statuses = new Map<number, number>();
  for (let index = 0; index < BIG_KEY_COMMANDS; index += 1) {
    const command = {
      ...commands.create('run.cancel', {}),
      idempotencyKey: `${index}-${'k'.repeat(BIG_KEY_BYTES)}`,
    };
    const response = await fetch(`${base}/sessions/keys/commands`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(command),
    });
    await response.arrayBuffer();
    statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1);
  }
  figures.manyKeysStatuses = Object.fromEntries(statuses);
  figures.manyKeysHeapAfterMB = heapMB();
  figures.manyKeysRedisAfterMB = await redisMB();

  // Slow readers: 1,000 readers of the big session from its start, none of them reading.
  const rssBefore = process.memoryUsage().rss;
  const slow = await loopDelayDuring(async () => {
    const readers: Array<{ status: number; socket: Socket }> = [];
    const load = (async () => {
      for (let index = 0; index < SLOW_READERS; index += 50) {
        readers.push(
          ...(await Promise.all(
            Array.from({ length: Math.min(50, SLOW_READERS - index) }, () =>
              stalledReader(`${base}/sessions/big/events`),
            ),
          )),
        );
      }
      await sleep(1_000);
    })();
    const timing = await unrelatedDuring(base, load);
    const rssPeak = process.memoryUsage().rss;
    const byStatus: Record<number, number> = {};
    for (const reader of readers) byStatus[reader.status] = (byStatus[reader.status] ?? 0) + 1;
    for (const reader of readers) reader.socket.destroy();
    return { ...timing, rssPeak, byStatus };
  });
  figures.slowReadersStatuses = slow.result.byStatus;
  figures.slowReadersRssGrowthMB = round((slow.result.rssPeak - rssBefore) / MB);
  figures.slowReadersLoopDelayP99Ms = slow.p99Ms;
  figures.slowReadersLoopDelayMaxMs = slow.maxMs;
  figures.slowReadersUnrelatedStateMaxMs = slow.result.unrelatedMaxMs;
  figures.slowReadersUnrelatedStateMedianMs = slow.result.unrelatedMedianMs;
  figures.onErrorCalls = errors.length;
  figures.onErrorFirst = errors.slice(0, 2);

  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
  await host.close();
  await log.close();
  await admin?.close();
  redis?.child.kill('SIGTERM');
  return figures;
}

const which = process.argv[2];
for (const name of ['memory', 'redis'] as const) {
  if (which !== undefined && which !== name) continue;
  console.log(JSON.stringify(await attack(name), null, 2));
}
