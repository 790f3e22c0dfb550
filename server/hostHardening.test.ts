// What a client (or the log losing a session) must never do to a host: poison a session with
// a value the protocol refuses, lock a user out of a session the log dropped, or make the
// host hold what it should refuse. Each case runs on both event logs; the Redis ones start
// their own redis-server.
import { createClient } from 'redis';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { createLocalAgentProvider } from '../providers/local/createLocalAgentProvider';
import type { LocalAgentScript } from '../providers/local/localAgentChunks';
import { postJson, readEvents, type ServedHost, serveHost } from '../tests/support/hostClient';
import { describeWithRedis, startRedisServer, type TestRedisServer } from '../tests/support/redisServer';
import type { AgentEventLog } from './AgentEventLog';
import { type AgentHost, type AgentHostOptions, createAgentHost } from './createAgentHost';
import { createMemoryEventLog } from './createMemoryEventLog';
import { createRedisEventLog } from './redis/createRedisEventLog';

const answer: LocalAgentScript = { steps: [{ type: 'text', deltas: ['The ', 'log ', 'is ', 'clean.'] }] };
const isTerminal = (frames: { data: string }[]) =>
  frames.some((frame) => /"type":"run\.(completed|failed|cancelled)"/.test(frame.data));

/** A value nested `depth` levels: `{ a: { a: ... } }`. */
function nested(depth: number): unknown {
  let value: unknown = 'bottom';
  for (let level = 0; level < depth; level += 1) value = { a: value };
  return value;
}

/** Waits until the host saved the session's snapshot at `cursor` (it does once a run ended and its events are in the log). */
async function snapshotSaved(log: AgentEventLog, sessionId: string, cursor: string | undefined): Promise<void> {
  const deadline = Date.now() + 15_000;
  while ((await log.loadSnapshot(sessionId))?.cursor !== cursor) {
    if (Date.now() > deadline) throw new Error(`no snapshot of ${sessionId} saved at ${cursor}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** One event log under test, and what a test may do to it from outside the host. */
interface LogUnderTest {
  log: AgentEventLog;
  /** Makes the log lose every session, as an expired TTL, an emptied Redis or FLUSHDB would. */
  loseEverything(): Promise<void>;
  /** Redis: how many command keys the log holds, and their bytes (key names and values). */
  storedCommands?(): Promise<{ keys: number; bytes: number }>;
}

/** What the host asked the log to keep under idempotency keys: every claim and settlement, with its key and fingerprint. */
interface CommandWrites {
  claims: Array<{ sessionId: string; key: string; fingerprint: string }>;
  settlements: Array<{ sessionId: string; key: string; fingerprint: string }>;
}

/** The log, recording what the host asks it to keep for commands. */
function recordingCommands(log: AgentEventLog): { log: AgentEventLog; writes: CommandWrites } {
  const writes: CommandWrites = { claims: [], settlements: [] };
  const recording: AgentEventLog = new Proxy(log, {
    get(target, property, receiver) {
      if (property === 'claimCommand') {
        return (sessionId: string, key: string, fingerprint: string, ttlMs: number) => {
          writes.claims.push({ sessionId, key, fingerprint });
          return target.claimCommand(sessionId, key, fingerprint, ttlMs);
        };
      }
      if (property === 'settleCommand') {
        return (...args: Parameters<AgentEventLog['settleCommand']>) => {
          writes.settlements.push({ sessionId: args[0], key: args[1], fingerprint: args[2].fingerprint });
          return target.settleCommand(...args);
        };
      }
      const value = Reflect.get(target, property, receiver);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
  return { log: recording, writes };
}

function describeHardening(name: string, open: () => Promise<LogUnderTest>) {
  describe(`${name} log`, () => {
    const cleanups: Array<() => Promise<void>> = [];
    afterEach(async () => {
      for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
    });

    async function start(options: Partial<AgentHostOptions> = {}) {
      const under = await open();
      const recorded = recordingCommands(under.log);
      const errors: Array<{ error: unknown; sessionId: string }> = [];
      const host: AgentHost = createAgentHost({
        providers: {
          answer: createLocalAgentProvider({ script: answer }),
          tool: createLocalAgentProvider({
            script: (_input, turn) =>
              turn.continuation === undefined
                ? { steps: [{ type: 'tool', name: 'lookup', argumentDeltas: ['{}'] }] }
                : { steps: [{ type: 'text', deltas: ['Done.'] }] },
          }),
        },
        eventLog: recorded.log,
        heartbeatMs: 200,
        onError: (error, { sessionId }) => errors.push({ error, sessionId }),
        ...options,
      });
      const served: ServedHost = await serveHost(host.fetch);
      cleanups.push(async () => {
        await served.close();
        await host.close();
        await under.log.close();
      });
      return {
        host,
        under,
        errors,
        writes: recorded.writes,
        base: (sessionId: string) => `${served.url}/sessions/${sessionId}`,
      };
    }

    describe('a continuation cannot poison a session', () => {
      it('refuses a tool result nested deeper than events may be, with 400 and its path, before anything is appended', async () => {
        const { host, under, base, errors } = await start();
        await host.startRun('p1', { provider: 'tool', input: {}, runId: 'waiting' });
        await readEvents(`${base('p1')}/events?runId=waiting`, { stop: isTerminal });
        const before = await under.log.lastCursor('p1');

        const poisoned = await postJson(`${base('p1')}/runs`, {
          provider: 'tool',
          input: {},
          continuation: {
            runId: 'waiting',
            approvals: [],
            toolResults: [{ toolCallId: 'tool-0', result: nested(150) }],
          },
        });
        expect(poisoned.status).toBe(400);
        expect(poisoned.body.error).toEqual({
          code: 'invalid_request',
          message: expect.stringMatching(
            /^Invalid run request: continuation\.toolResults\.0\.result\.(a\.){99}a: nested deeper than 100 levels$/,
          ),
        });
        expect(await under.log.lastCursor('p1')).toBe(before);

        // The session is whole: its state reads, and a valid continuation goes on.
        const state = await fetch(`${base('p1')}/state`);
        expect(state.status).toBe(200);
        expect((await state.json()).state.runs.waiting.pendingToolCallIds).toEqual(['tool-0']);
        const valid = await postJson(`${base('p1')}/runs`, {
          provider: 'tool',
          input: {},
          runId: 'next',
          continuation: {
            runId: 'waiting',
            approvals: [],
            toolResults: [{ toolCallId: 'tool-0', result: nested(99) }],
          },
        });
        expect(valid.status).toBe(202);
        const next = await readEvents(`${base('p1')}/events?runId=next`, { stop: isTerminal });
        expect(next.events.at(-1)?.type).toBe('run.completed');
        const all = await readEvents(`${base('p1')}/events`, { stop: (frames) => frames.length >= 3 });
        expect(all.status).toBe(200);
        expect(errors).toEqual([]);
      });

      it('refuses an input or approval data the protocol would refuse, naming where', async () => {
        const { host, under, base } = await start();
        await host.startRun('p2', { provider: 'tool', input: {}, runId: 'waiting' });
        await readEvents(`${base('p2')}/events?runId=waiting`, { stop: isTerminal });
        const before = await under.log.lastCursor('p2');
        const deepInput = await postJson(`${base('p2')}/runs`, { provider: 'answer', input: { prompt: nested(120) } });
        expect([deepInput.status, (deepInput.body.error as { message: string }).message]).toEqual([
          400,
          expect.stringMatching(/^Invalid run request: input\.prompt(\.a)+: nested deeper than 100 levels$/),
        ]);
        const deepData = await postJson(`${base('p2')}/runs`, {
          provider: 'tool',
          input: {},
          continuation: {
            runId: 'waiting',
            approvals: [{ approvalId: 'a1', status: 'resolved', decision: 'approved', data: nested(101) }],
          },
        });
        expect([deepData.status, (deepData.body.error as { message: string }).message]).toEqual([
          400,
          expect.stringMatching(
            /^Invalid run request: continuation\.approvals\.0\.data(\.a)+: nested deeper than 100 levels$/,
          ),
        ]);
        // JSON.parse makes "__proto__" an own key: events may not carry one.
        const protoKey = await postJson(
          `${base('p2')}/runs`,
          '{"provider":"tool","input":{},"continuation":{"runId":"waiting","approvals":[],"toolResults":[{"toolCallId":"tool-0","result":{"__proto__":{"admin":true}}}]}}',
        );
        expect([protoKey.status, (protoKey.body.error as { message: string }).message]).toEqual([
          400,
          'Invalid run request: continuation.toolResults.0.result.__proto__: is a "__proto__" key, which is not allowed',
        ]);
        expect(await under.log.lastCursor('p2')).toBe(before);
        await expect(host.startRun('p2', { provider: 'answer', input: nested(101) })).rejects.toMatchObject({
          code: 'invalid_request',
        });
        expect(await under.log.lastCursor('p2')).toBe(before);
      });
    });

    describe('identifiers and idempotency keys', () => {
      const command = (overrides: Record<string, unknown> = {}, payload: Record<string, unknown> = {}) => ({
        commandProtocol: 'agent-command',
        commandProtocolVersion: '0.1',
        type: 'run.cancel',
        commandId: 'c1',
        idempotencyKey: 'k1',
        sessionId: 'i1',
        runId: 'r1',
        timestamp: 1,
        payload,
        ...overrides,
      });

      it('refuses ids and keys longer than 256 characters with 400, and stores nothing for them', async () => {
        const { host, base, writes, under } = await start();
        await host.startRun('i1', { provider: 'tool', input: {}, runId: 'r1' });
        await readEvents(`${base('i1')}/events?runId=r1`, { stop: isTerminal });
        const long = 'k'.repeat(257);
        const cases: Array<[Record<string, unknown>, string]> = [
          [{ idempotencyKey: long }, 'Invalid command: idempotencyKey: longer than 256 characters'],
          [{ commandId: long }, 'Invalid command: commandId: longer than 256 characters'],
          [{ runId: long }, 'Invalid command: runId: longer than 256 characters'],
          [{ idempotencyKey: 'k'.repeat(1_000_000) }, 'Invalid command: idempotencyKey: longer than 256 characters'],
        ];
        for (const [overrides, message] of cases) {
          const refused = await postJson(`${base('i1')}/commands`, command(overrides));
          expect([refused.status, refused.body.error]).toEqual([400, { code: 'invalid_command', message }]);
        }
        const toolCall = await postJson(
          `${base('i1')}/commands`,
          command({ type: 'tool.submit_result' }, { toolCallId: long, result: 1 }),
        );
        expect((toolCall.body.error as { message: string }).message).toBe(
          'Invalid command: payload.toolCallId: longer than 256 characters',
        );
        expect((await host.executeCommand(command({ idempotencyKey: long }) as never)).status).toBe('failed');
        const runs = await postJson(`${base('i1')}/runs`, { provider: 'answer', input: {}, runId: long });
        expect([runs.status, (runs.body.error as { message: string }).message]).toEqual([
          400,
          'Invalid run request: runId: longer than 256 characters',
        ]);
        const path = await fetch(`${base('s'.repeat(257))}/state`);
        expect(path.status).toBe(400);
        expect(writes).toEqual({ claims: [], settlements: [] });
        if (under.storedCommands) expect(await under.storedCommands()).toEqual({ keys: 0, bytes: 0 });
      });

      it('stores no key for a command whose run does not exist: 200 of them hold nothing', async () => {
        const { host, base, writes, under } = await start();
        await host.startRun('i2', { provider: 'tool', input: {}, runId: 'r1' });
        await readEvents(`${base('i2')}/events?runId=r1`, { stop: isTerminal });
        for (let index = 0; index < 200; index += 1) {
          // Half in a session that exists, half in sessions that never did.
          const sessionId = index % 2 === 0 ? 'i2' : `ghost-${index}`;
          const answer = await postJson(
            `${base(sessionId)}/commands`,
            command({ sessionId, runId: `nope-${index}`, idempotencyKey: `${index}-${'k'.repeat(250)}` }),
          );
          expect([answer.status, (answer.body.error as { code: string }).code]).toEqual([404, 'unknown_run']);
        }
        expect(writes).toEqual({ claims: [], settlements: [] });
        if (under.storedCommands) expect(await under.storedCommands()).toEqual({ keys: 0, bytes: 0 });
        // A run that exists takes its key, once; the record holds a fingerprint, not the payload.
        // (The run waits for that tool's result: the host takes it and continues the run.)
        const big = await postJson(
          `${base('i2')}/commands`,
          command(
            { sessionId: 'i2', type: 'tool.submit_result' },
            { toolCallId: 'tool-0', result: 'x'.repeat(500_000) },
          ),
        );
        expect([big.status, big.body.status]).toEqual([200, 'accepted']);
        expect(writes.claims.map(({ key, fingerprint }) => [key, fingerprint.length])).toEqual([['k1', 71]]);
        if (under.storedCommands) {
          const stored = await under.storedCommands();
          expect(stored.keys).toBeGreaterThanOrEqual(1);
          expect(stored.bytes).toBeLessThan(2_000);
        }
      });
    });

    describe('a session that never existed', () => {
      it('reads as empty (state 200 with cursor null, events follow until its first run), alike on every log', async () => {
        const { host, base } = await start();
        const state = await fetch(`${base('never')}/state`);
        expect(state.status).toBe(200);
        const { state: empty, cursor } = await state.json();
        expect([cursor, empty.runs, empty.issues]).toEqual([null, {}, []]);

        // A follower subscribed before the session's first run sees that run.
        const following = readEvents(`${base('never')}/events`, { stop: isTerminal });
        const started = await postJson(`${base('never')}/runs`, { provider: 'answer', input: {}, runId: 'first' });
        expect(started.body).toEqual({ runId: 'first', cursor: null });
        const followed = await following;
        expect(followed.status).toBe(200);
        expect(followed.events.map((event) => event.runId)).toEqual(followed.events.map(() => 'first'));
        expect(followed.events[0]?.type).toBe('run.started');

        const cursorOfAnother = followed.frames[0]?.id as string;
        const stale = await fetch(`${base('never-either')}/events`, { headers: { 'last-event-id': cursorOfAnother } });
        expect([stale.status, (await stale.json()).error.code]).toEqual([410, 'cursor_expired']);
        const unknown = await fetch(`${base('never-either')}/events?runId=nope`);
        expect([unknown.status, (await unknown.json()).error.code]).toEqual([404, 'unknown_run']);
        expect((await host.getState('never-either')).cursor).toBeNull();
      });
    });

    describe('cached session states', () => {
      it('are bounded in bytes (maxCachedStateBytes): a state that went is read again from the log, whole', async () => {
        const { host, under, base } = await start({ maxCachedStateBytes: 4_000 });
        const prompt = 'p'.repeat(3_000);
        for (const sessionId of ['a', 'b', 'c']) {
          const started = await postJson(`${base(sessionId)}/runs`, {
            provider: 'answer',
            input: { prompt },
            runId: 'r1',
          });
          expect(started.status).toBe(202);
          await readEvents(`${base(sessionId)}/events?runId=r1`, { stop: isTerminal });
        }
        // A session's state is only read from its snapshot (or its start) when the host holds none.
        const loads = vi.spyOn(under.log, 'loadSnapshot');
        for (const sessionId of ['a', 'b', 'c']) {
          const { state } = await host.getState(sessionId);
          expect([state.runs.r1?.status, state.runs.r1?.input, state.issues]).toEqual(['completed', { prompt }, []]);
          // Each state (a 3 KB prompt) passes the bound with the next one: it was read again.
          expect(loads.mock.calls.some(([loaded]) => loaded === sessionId)).toBe(true);
        }
        const again = await postJson(`${base('a')}/runs`, { provider: 'answer', input: {}, runId: 'r1' });
        expect([again.status, (again.body.error as { code: string }).code]).toEqual([409, 'run_exists']);
      });
    });

    describe('a session the log no longer holds', () => {
      it('starts over from nothing: state, runs and events answer; a cursor from before is 410; onError hears of it', async () => {
        const { host, under, base, errors } = await start();
        await host.startRun('x1', { provider: 'answer', input: {}, runId: 'r1' });
        const first = await readEvents(`${base('x1')}/events?runId=r1`, { stop: isTerminal });
        const oldCursor = first.frames.at(-1)?.id as string;
        expect((await host.getState('x1')).state.runs.r1?.status).toBe('completed');
        await snapshotSaved(under.log, 'x1', oldCursor);

        await under.loseEverything();

        const state = await fetch(`${base('x1')}/state`);
        expect(state.status).toBe(200);
        const body = await state.json();
        expect([body.state.runs, body.cursor]).toEqual([{}, null]);
        expect(errors.map(({ error, sessionId }) => [sessionId, (error as { code?: string }).code])).toEqual([
          ['x1', 'cursor_expired'],
        ]);

        const expired = await fetch(`${base('x1')}/events`, { headers: { 'last-event-id': oldCursor } });
        expect([expired.status, (await expired.json()).error.code]).toEqual([410, 'cursor_expired']);

        const again = await postJson(`${base('x1')}/runs`, { provider: 'answer', input: {}, runId: 'r2' });
        expect(again.status).toBe(202);
        const second = await readEvents(`${base('x1')}/events?runId=r2`, { stop: isTerminal });
        expect(second.events.at(-1)?.type).toBe('run.completed');
        const after = (await host.getState('x1')).state;
        expect(Object.keys(after.runs)).toEqual(['r2']);
        expect([after.runs.r2?.status, after.issues]).toEqual(['completed', []]);
        expect(errors).toHaveLength(1);
      });
    });
  });
}

let clock = 1_000_000;
describeHardening('memory', async () => {
  const ttlMs = 60_000;
  const log = createMemoryEventLog({ sessionTtlMs: ttlMs, now: () => clock });
  return {
    log,
    loseEverything: async () => {
      clock += ttlMs + 1;
    },
  };
});

describeWithRedis('redis-server', () => {
  let redis: TestRedisServer;
  let admin: ReturnType<typeof createClient>;
  let prefixes = 0;
  beforeAll(async () => {
    redis = await startRedisServer();
    admin = createClient({ url: redis.url });
    await admin.connect();
  });
  afterAll(async () => {
    await admin?.quit();
    await redis?.stop();
  });
  describeHardening('redis', async () => {
    const keyPrefix = `hardening${++prefixes}:`;
    return {
      log: createRedisEventLog({ url: redis.url, keyPrefix }),
      loseEverything: async () => {
        await admin.flushDb();
      },
      storedCommands: async () => {
        const keys = (await admin.keys(`${keyPrefix}*`)).filter((key) => key.includes(':command:'));
        let bytes = 0;
        for (const key of keys) bytes += key.length + ((await admin.get(key))?.length ?? 0);
        return { keys: keys.length, bytes };
      },
    };
  });

  it('starts a session whose events Redis lost over from its snapshot, where Redis kept that', async () => {
    const keyPrefix = `hardening${++prefixes}:`;
    const log = createRedisEventLog({ url: redis.url, keyPrefix });
    const errors: unknown[] = [];
    const host = createAgentHost({
      providers: { answer: createLocalAgentProvider({ script: answer }) },
      eventLog: log,
      onError: (error) => errors.push(error),
    });
    const served = await serveHost(host.fetch);
    try {
      const base = `${served.url}/sessions/kept`;
      await host.startRun('kept', { provider: 'answer', input: {}, runId: 'r1' });
      const first = await readEvents(`${base}/events?runId=r1`, { stop: isTerminal });
      await snapshotSaved(log, 'kept', first.frames.at(-1)?.id);
      // Redis evicts the stream, not the snapshot beside it.
      expect(await admin.del(`${keyPrefix}{kept}:events`)).toBe(1);

      const state = await (await fetch(`${base}/state`)).json();
      expect([state.state.runs.r1.status, state.cursor]).toEqual(['completed', null]);
      expect(errors.map((error) => (error as { code?: string }).code)).toEqual(['cursor_expired']);
      const stale = await fetch(`${base}/events`, { headers: { 'last-event-id': first.frames.at(-1)?.id as string } });
      expect([stale.status, (await stale.json()).error.code]).toEqual([410, 'cursor_expired']);

      expect((await postJson(`${base}/runs`, { provider: 'answer', input: {}, runId: 'r2' })).status).toBe(202);
      await readEvents(`${base}/events?runId=r2`, { stop: isTerminal });
      const after = (await host.getState('kept')).state;
      expect([after.runs.r1?.status, after.runs.r2?.status, after.issues]).toEqual(['completed', 'completed', []]);
      expect(errors).toHaveLength(1);
    } finally {
      await served.close();
      await host.close();
      await log.close();
    }
  });
});

describe('what a run request may hold, checked before the schema walks it', () => {
  const hosts: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const close of hosts.splice(0)) await close();
  });

  async function serve() {
    const host = createAgentHost({
      providers: { answer: createLocalAgentProvider({ script: answer }) },
      onError: () => {},
    });
    const served = await serveHost(host.fetch);
    hosts.push(async () => {
      await served.close();
      await host.close();
    });
    return `${served.url}/sessions/v1/runs`;
  }

  it('answers 400 naming the bound for 20 000 or 440 000 invalid approvals (59 KB and 880 KB), never 500', async () => {
    const url = await serve();
    for (const count of [20_000, 440_000]) {
      const body = JSON.stringify({
        provider: 'answer',
        input: {},
        continuation: { runId: 'r0', approvals: Array.from({ length: count }, () => 1) },
      });
      expect(body.length).toBeLessThan(1_048_576);
      const refused = await postJson(url, body);
      expect([refused.status, refused.body.error]).toEqual([
        400,
        { code: 'invalid_request', message: 'Invalid run request: continuation.approvals: at most 1000 entries' },
      ]);
    }
    const results = await postJson(url, {
      provider: 'answer',
      input: {},
      continuation: { runId: 'r0', approvals: [], toolResults: Array.from({ length: 1_001 }, () => ({})) },
    });
    expect((results.body.error as { message: string }).message).toBe(
      'Invalid run request: continuation.toolResults: at most 1000 entries',
    );
  });

  it('names the first thing wrong within the bound, and what is missing or unknown', async () => {
    const url = await serve();
    const cases: Array<[unknown, string]> = [
      [
        {
          provider: 'answer',
          input: {},
          continuation: { runId: 'r0', approvals: Array.from({ length: 1_000 }, () => 1) },
        },
        'continuation.approvals.0: expected object, got number',
      ],
      [
        { provider: 'answer', input: {}, continuation: { runId: 'r0' } },
        'continuation.approvals: missing (expected array)',
      ],
      [{ input: {} }, 'provider: missing (expected string)'],
      [{ provider: 'answer', prompt: 'hi' }, 'prompt: unknown field'],
      [{ provider: '' }, 'provider: must not be empty'],
      [[], 'the body: expected object, got array'],
    ];
    for (const [body, problem] of cases) {
      const refused = await postJson(url, body);
      expect([refused.status, refused.body.error]).toEqual([
        400,
        { code: 'invalid_request', message: `Invalid run request: ${problem}` },
      ]);
    }
  });
});

describe('sessions of one identity against another in the memory log', () => {
  it("authorize's clientId tells the log whose a session is: one user's many sessions never evict another's", async () => {
    const log = createMemoryEventLog({ maxSessions: 4 });
    const host = createAgentHost({
      providers: { answer: createLocalAgentProvider({ script: answer }) },
      eventLog: log,
      // The bearer token names the user; sessions are open to any user in this test.
      authorize: (request) => ({ clientId: request.headers.get('authorization')?.slice('Bearer '.length) ?? '' }),
      onError: () => {},
    });
    const served = await serveHost(host.fetch);
    const run = async (user: string, sessionId: string) => {
      const url = `${served.url}/sessions/${sessionId}`;
      const headers = { authorization: `Bearer ${user}` };
      expect((await postJson(`${url}/runs`, { provider: 'answer', input: {}, runId: 'r1' }, headers)).status).toBe(202);
      await readEvents(`${url}/events?runId=r1`, { headers, stop: isTerminal });
    };
    try {
      await run('bob', 'bob-chat');
      for (let index = 0; index < 8; index += 1) await run('mallory', `mallory-${index}`);
      expect(await log.lastCursor('bob-chat')).toBeDefined();
      expect(await log.lastCursor('mallory-0')).toBeUndefined();
      expect(await log.lastCursor('mallory-7')).toBeDefined();
      // Mallory's sessions, however many, are accounted as hers: the count bound dropped her oldest.
      expect(await log.runOwner('bob-chat', 'r1')).toEqual({ state: 'ended' });

      // A refusal is anything but true or a clientId: a non-string or empty one refuses.
      const refusing = createAgentHost({
        providers: { answer: createLocalAgentProvider({ script: answer }) },
        authorize: () => ({ clientId: 7 }) as unknown as { clientId: string },
        onError: () => {},
      });
      const refused = await refusing.fetch(new Request('http://host/sessions/s1/state'));
      expect(refused.status).toBe(403);
      await refusing.close();
    } finally {
      await served.close();
      await host.close();
      await log.close();
    }
  });
});

describe('options', () => {
  it('refuses cache bounds that are not positive integers', () => {
    const providers = { answer: createLocalAgentProvider({ script: answer }) };
    for (const value of [0, -1, 0.5, Number.NaN]) {
      expect(() => createAgentHost({ providers, maxCachedStateBytes: value })).toThrow(
        new RangeError(`maxCachedStateBytes must be a positive integer, got ${value}`),
      );
    }
  });
});

describe('request bodies are JSON only', () => {
  it('answers 415 unsupported_media_type to a body that is not application/json, before reading it', async () => {
    const host = createAgentHost({
      providers: { answer: createLocalAgentProvider({ script: answer }) },
      onError: () => {},
    });
    const served = await serveHost(host.fetch);
    try {
      const body = JSON.stringify({ provider: 'answer', input: {} });
      const types: Array<string | undefined> = [
        'text/plain',
        'text/plain;charset=UTF-8',
        'application/x-www-form-urlencoded',
        'multipart/form-data; boundary=x',
        undefined,
      ];
      for (const endpoint of ['runs', 'commands']) {
        for (const type of types) {
          const response = await fetch(`${served.url}/sessions/m1/${endpoint}`, {
            method: 'POST',
            headers: type === undefined ? {} : { 'content-type': type },
            // A string body makes fetch send text/plain unless told otherwise: a Blob without a type sends none.
            body: type === undefined ? new Blob([body]) : body,
          });
          expect([endpoint, type, response.status, (await response.json()).error.code]).toEqual([
            endpoint,
            type,
            415,
            'unsupported_media_type',
          ]);
        }
      }
      expect((await host.getState('m1')).state.runs).toEqual({});
      for (const type of ['application/json', 'application/json; charset=utf-8', 'Application/JSON']) {
        const accepted = await fetch(`${served.url}/sessions/m1/runs`, {
          method: 'POST',
          headers: { 'content-type': type },
          body,
        });
        expect([type, accepted.status]).toEqual([type, 202]);
      }
    } finally {
      await served.close();
      await host.close();
    }
  });
});

describe('command refusals name what is wrong', () => {
  it('names a missing field, an unknown one, and a wrong type in a command body', async () => {
    const host = createAgentHost({ providers: {}, onError: () => {} });
    const served = await serveHost(host.fetch);
    try {
      const command = {
        commandProtocol: 'agent-command',
        commandProtocolVersion: '0.1',
        type: 'approval.resolve',
        commandId: 'c1',
        idempotencyKey: 'k1',
        sessionId: 'n1',
        runId: 'r1',
        timestamp: 1,
        payload: { approvalId: 'a1', decision: 'approved' },
      };
      const { idempotencyKey: _key, ...withoutKey } = command;
      const cases: Array<[unknown, string]> = [
        [withoutKey, 'idempotencyKey: missing (expected string)'],
        [
          { ...command, payload: { approvalId: 'a1' } },
          'payload.decision: missing (expected one of ["approved","rejected","modified"])',
        ],
        [{ ...command, extra: 1 }, 'extra: unknown field'],
        [{ ...command, timestamp: 'now' }, 'timestamp: expected number, got string'],
      ];
      for (const [body, problem] of cases) {
        const refused = await postJson(`${served.url}/sessions/n1/commands`, body);
        expect([refused.status, refused.body.error]).toEqual([
          400,
          { code: 'invalid_command', message: `Invalid command: ${problem}` },
        ]);
      }
    } finally {
      await served.close();
      await host.close();
    }
  });
});

describe('a method an endpoint does not take', () => {
  it('answers 405 method_not_allowed with the Allow header naming the one it takes', async () => {
    const host = createAgentHost({ providers: {}, onError: () => {} });
    try {
      const cases: Array<[string, string, string]> = [
        ['DELETE', 'runs', 'POST'],
        ['PUT', 'commands', 'POST'],
        ['POST', 'state', 'GET'],
        ['HEAD', 'events', 'GET'],
      ];
      for (const [method, endpoint, allow] of cases) {
        const answer = await host.fetch(new Request(`http://host/sessions/a1/${endpoint}`, { method }));
        expect([method, answer.status, answer.headers.get('allow')]).toEqual([method, 405, allow]);
      }
    } finally {
      await host.close();
    }
  });
});
