// What the host's use of its event log must survive, on both logs: a run ending while its
// lease renewal is in flight, the Redis connection killed under running runs, many readers
// catching up from a session's start at once. The Redis cases start their own redis-server.
import { createClient } from 'redis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createLocalAgentProvider } from '../providers/local/createLocalAgentProvider';
import { postJson, readEvents, type ServedHost, serveHost } from '../tests/support/hostClient';
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
      // Renewals every 500 ms: the release waits at most that long for the next one.
      const log = renewalRacingRelease(await open(), 700);
      const { host, base, errors } = await start({ log, runLeaseMs: 1_500 });
      await host.startRun('l1', { provider: 'slow', input: {}, runId: 'r1' });
      const { events } = await readEvents(`${base('l1')}/events?runId=r1`, { stop: isTerminal });
      expect(events.at(-1)?.type).toBe('run.completed');
      // The release and the renewal racing it are over once the state has its snapshot.
      await host.close();
      expect(errors.map(({ error }) => String(error))).toEqual([]);
      expect(await log.runOwner('l1', 'r1')).toEqual({ state: 'ended' });
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
