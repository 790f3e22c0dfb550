// What the host's use of its event log must survive, on both logs: a run ending while its
// lease renewal is in flight, the Redis connection killed under running runs, many readers
// catching up from a session's start at once. The Redis cases start their own redis-server.
import { connect } from 'node:net';
import { createClient } from 'redis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createLocalAgentProvider } from '../providers/local/createLocalAgentProvider';
import { postJson, readEvents, readFrames, type ServedHost, serveHost } from '../tests/support/hostClient';
import { describeWithRedis, startRedisServer, type TestRedisServer } from '../tests/support/redisServer';
import type { AgentEventLog } from './AgentEventLog';
import { type AgentHost, type AgentHostOptions, createAgentHost } from './createAgentHost';
import { createMemoryEventLog } from './createMemoryEventLog';
import { createRedisEventLog } from './redis/createRedisEventLog';

const isTerminal = (frames: { data: string }[]) =>
  frames.some((frame) => /"type":"run\.(completed|failed|cancelled)"/.test(frame.data));

const providers = {
  answer: createLocalAgentProvider({
    script: { steps: [{ type: 'text', deltas: ['The ', 'log ', 'is ', 'clean.'] }] },
  }),
  // Forty words, 25 ms apart: a run still streaming while the test does something to the log.
  // Four hundred messages of 16 KB at once: a session larger than what sockets
  // buffer for a client that does not read, to catch up on page by page.
  many: createLocalAgentProvider({
    script: {
      steps: Array.from({ length: 400 }, (_, i) => ({ type: 'text', deltas: [`${i} ${'w'.repeat(16_000)}`] })),
    },
  }),
  slow: createLocalAgentProvider({
    script: { steps: [{ type: 'text', deltas: Array.from({ length: 40 }, (_, i) => `w${i} `) }], delayMs: 25 },
  }),
};

/**
 * The log, except that the release of a run waits for the next renewal of its lease to be
 * asked (or `waitMs`), and that renewal reaches the log only after the release: the renewal
 * in flight when a run ends, made certain.
 */
function renewalRacingRelease(log: AgentEventLog, waitMs: number): AgentEventLog {
  let renewalAsked: (() => void) | undefined;
  let released: Promise<void> | undefined;
  return Object.assign(Object.create(log) as AgentEventLog, {
    async renewRun(...args: Parameters<AgentEventLog['renewRun']>) {
      if (renewalAsked !== undefined) {
        renewalAsked();
        await released;
      }
      return log.renewRun(...args);
    },
    async releaseRun(...args: Parameters<AgentEventLog['releaseRun']>) {
      let release = () => {};
      released = new Promise<void>((resolve) => {
        release = resolve;
      });
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, waitMs);
        renewalAsked = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      renewalAsked = undefined;
      await log.releaseRun(...args);
      release();
    },
  });
}

/** A client that asks for `url` and, once the answer's head came, stops reading (its socket paused). */
function stalledReader(url: string): Promise<{ status: number; close: () => void }> {
  const { hostname, port, pathname, search } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect({ host: hostname, port: Number(port) });
    let head = '';
    socket.once('error', reject);
    socket.on('data', (chunk) => {
      head += chunk.toString('latin1');
      if (!head.includes('\r\n')) return;
      socket.removeAllListeners('data');
      socket.pause();
      resolve({ status: Number(head.split(' ')[1]), close: () => socket.destroy() });
    });
    socket.write(`GET ${pathname}${search} HTTP/1.1\r\nHost: ${hostname}:${port}\r\n\r\n`);
  });
}

function describeResilience(name: string, open: () => Promise<AgentEventLog>) {
  describe(`${name} log`, () => {
    const cleanups: Array<() => Promise<void>> = [];
    afterEach(async () => {
      for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
    });

    async function start(options: Partial<AgentHostOptions> & { log?: AgentEventLog } = {}) {
      const log = options.log ?? (await open());
      const errors: Array<{ error: unknown; sessionId: string; runId?: string }> = [];
      const host: AgentHost = createAgentHost({
        providers,
        eventLog: log,
        heartbeatMs: 200,
        onError: (error, context) => errors.push({ error, ...context }),
        ...options,
      });
      const served: ServedHost = await serveHost(host.fetch);
      cleanups.push(async () => {
        await served.close();
        await host.close();
        await log.close();
      });
      return { host, log, errors, base: (sessionId: string) => `${served.url}/sessions/${sessionId}` };
    }

    it('a run that ends while a renewal of its lease is in flight is not reported as a lost lease', async () => {
      // Renewals every second: the release waits at most that long for the next one (then 1.4 s, within the lease).
      const log = renewalRacingRelease(await open(), 1_400);
      const { host, base, errors } = await start({ log, runLeaseMs: 3_000 });
      await host.startRun('l1', { provider: 'slow', input: {}, runId: 'r1' });
      const { events } = await readEvents(`${base('l1')}/events?runId=r1`, { stop: isTerminal });
      expect(events.at(-1)?.type).toBe('run.completed');
      // The release and the renewal racing it are over once the state has its snapshot.
      await host.close();
      expect(errors.map(({ error }) => String(error))).toEqual([]);
      expect(await log.runOwner('l1', 'r1')).toEqual({ state: 'ended' });
    });

    it('runs with large prompts: the state is not snapshotted whole at every run end, and what snapshots write stays below twice what is appended', async () => {
      const inner = await open();
      let appendedBytes = 0;
      const snapshots: number[] = [];
      const log = Object.assign(Object.create(inner) as AgentEventLog, {
        append: (sessionId: string, events: Parameters<AgentEventLog['append']>[1]) => {
          appendedBytes += events.reduce((sum, event) => sum + JSON.stringify(event).length, 0);
          return inner.append(sessionId, events);
        },
        saveSnapshot: (sessionId: string, snapshot: Parameters<AgentEventLog['saveSnapshot']>[1]) => {
          snapshots.push(JSON.stringify(snapshot.state).length);
          return inner.saveSnapshot(sessionId, snapshot);
        },
      });
      const { host, base, errors } = await start({ log });
      for (let index = 0; index < 12; index += 1) {
        const runId = `r${index}`;
        await host.startRun('p1', { provider: 'answer', input: { prompt: `${index}`.repeat(200_000) }, runId });
        await readEvents(`${base('p1')}/events?runId=${runId}`, { stop: isTerminal });
      }
      await host.close();
      expect(errors).toEqual([]);
      // Twelve run ends; a snapshot only when as many bytes came since as the state holds.
      expect(snapshots.length).toBeGreaterThan(0);
      expect(snapshots.length).toBeLessThanOrEqual(5);
      expect(snapshots.reduce((sum, bytes) => sum + bytes, 0)).toBeLessThan(2 * appendedBytes);
      // A host starting afresh from the log (snapshot, then what came after) has every run.
      const fresh = createAgentHost({ providers, eventLog: inner, onError: () => {} });
      const restored = await fresh.getState('p1');
      expect(Object.keys(restored.state.runs)).toHaveLength(12);
      await fresh.close();
    });

    it('at most maxCatchUpReaders read the log at once to catch up: the next is 503 with Retry-After, until one ends', async () => {
      const { host, base } = await start({ maxCatchUpReaders: 2, pageSize: 5, feedCapacity: 8, maxQueuedBytes: 512 });
      await host.startRun('c1', { provider: 'many', input: {}, runId: 'r1' });
      const all = await readEvents(`${base('c1')}/events?runId=r1`, { stop: isTerminal, timeoutMs: 60_000 });
      expect(all.events.length).toBeGreaterThan(400);
      // Two readers from the start that do not read: each holds its place, its queue full.
      const stalled = [await stalledReader(`${base('c1')}/events`), await stalledReader(`${base('c1')}/events`)];
      expect(stalled.map((reader) => reader.status)).toEqual([200, 200]);
      const refused = await fetch(`${base('c1')}/events`);
      expect(refused.status).toBe(503);
      expect(refused.headers.get('retry-after')).toBe('1');
      expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('unavailable');
      // Requests that do not catch up are served meanwhile.
      const state = await fetch(`${base('c1')}/state`);
      expect(state.status).toBe(200);
      expect(
        ((await state.json()) as { state: { runs: Record<string, { status: string }> } }).state.runs.r1?.status,
      ).toBe('completed');
      // One of them goes away: its place is given back, and a reader from the start reads it all, in pages.
      stalled[0]!.close();
      let response = await fetch(`${base('c1')}/events?runId=r1`);
      // The host hears of the abort a moment later: a client retries as Retry-After says (sooner here).
      for (let attempt = 0; response.status === 503 && attempt < 200; attempt += 1) {
        await response.body?.cancel();
        await new Promise((resolve) => setTimeout(resolve, 20));
        response = await fetch(`${base('c1')}/events?runId=r1`);
      }
      expect(response.status).toBe(200);
      const frames = [];
      for await (const frame of readFrames(response)) {
        frames.push(frame);
        if (isTerminal([frame])) break;
      }
      expect(frames.map((frame) => frame.id)).toEqual(all.frames.map((frame) => frame.id));
      stalled[1]!.close();
    });
  });
}

describeResilience('memory', async () => createMemoryEventLog());

describeWithRedis('redis', () => {
  let redis: TestRedisServer;
  let prefixes = 0;
  beforeAll(async () => {
    redis = await startRedisServer();
  });
  afterAll(async () => {
    await redis?.stop();
  });

  describeResilience('redis', async () =>
    createRedisEventLog({ url: redis.url, keyPrefix: `resilience${++prefixes}:` }),
  );

  it('a CLIENT KILL of the host’s Redis connections while a run streams: the run completes, its lease kept', async () => {
    const admin = createClient({ url: redis.url });
    await admin.connect();
    const log = createRedisEventLog({ url: redis.url, keyPrefix: 'kill:' });
    const errors: unknown[] = [];
    const host = createAgentHost({
      providers,
      eventLog: log,
      heartbeatMs: 200,
      runLeaseMs: 1_500,
      onError: (error) => errors.push(error),
    });
    const served = await serveHost(host.fetch);
    try {
      const base = `${served.url}/sessions/k1`;
      expect((await postJson(`${base}/runs`, { provider: 'slow', input: {}, runId: 'r1' })).status).toBe(202);
      const first = await readEvents(`${base}/events?runId=r1`, { stop: (frames) => frames.length >= 8 });
      expect(first.events).toHaveLength(8);
      await admin.sendCommand(['CLIENT', 'KILL', 'TYPE', 'normal']);
      const list = await admin.sendCommand<string>(['CLIENT', 'LIST', 'TYPE', 'pubsub']);
      for (const id of list.split('\n').flatMap((line) => /^id=(\d+)/.exec(line)?.[1] ?? [])) {
        await admin.sendCommand(['CLIENT', 'KILL', 'ID', id]);
      }
      // The reader resumes from its cursor, as a client does, and reads the run to its end.
      const rest = await readEvents(`${base}/events?runId=r1`, {
        headers: { 'last-event-id': first.frames.at(-1)!.id! },
        stop: isTerminal,
      });
      expect(rest.events.at(-1)?.type).toBe('run.completed');
      const sequences = [...first.events, ...rest.events].map((event) => event.sequence);
      expect(sequences).toEqual(Array.from({ length: sequences.length }, (_, index) => index + 1));
      const { state } = await host.getState('k1');
      expect(state.runs.r1?.status).toBe('completed');
      expect(await log.runOwner('k1', 'r1')).toEqual({ state: 'ended' });
      expect(errors.map(String).filter((message) => /lease|host_lost/.test(message))).toEqual([]);
    } finally {
      await served.close();
      await host.close();
      await log.close();
      await admin.close();
    }
  });
});
