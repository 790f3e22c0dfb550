import { afterEach, describe, expect, it } from 'vitest';
import { createAgentStore } from '../machines/createAgentStore';
import { createAgentCommandFactory } from '../protocol/createAgentCommandFactory';
import type { AgentEvent } from '../protocol/eventSchemas';
import { createLocalAgentProvider } from '../providers/local/createLocalAgentProvider';
import type { LocalAgentScript } from '../providers/local/localAgentChunks';
import { runEvents } from '../tests/support/events';
import { postJson, readEvents, type ServedHost, serveHost } from '../tests/support/hostClient';
import type { AgentEventLog } from './AgentEventLog';
import { type AgentHost, type AgentHostOptions, createAgentHost } from './createAgentHost';
import { createMemoryEventLog } from './createMemoryEventLog';
import { fingerprintOf } from './HostCommands';

const answer: LocalAgentScript = { steps: [{ type: 'text', deltas: ['The ', 'log ', 'is ', 'clean.'] }] };
const approvalInRun: LocalAgentScript = {
  steps: [
    { type: 'approval', description: 'Deploy?', waitFor: 'command' },
    { type: 'text', deltas: ['Deployed.'] },
  ],
};
const stalls: LocalAgentScript = { steps: [{ type: 'text', deltas: ['Working'] }, { type: 'stall' }] };

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function start(
  options: Partial<AgentHostOptions> = {},
): Promise<{ host: AgentHost; served: ServedHost; base: (sessionId: string) => string }> {
  const host = createAgentHost({
    providers: {
      answer: createLocalAgentProvider({ script: answer }),
      approval: createLocalAgentProvider({ script: approvalInRun }),
      stall: createLocalAgentProvider({ script: stalls }),
      big: createLocalAgentProvider({
        script: {
          steps: [{ type: 'text', deltas: Array.from({ length: 1_200 }, (_, i) => `${i}:${'x'.repeat(8_000)}`) }],
        },
      }),
    },
    heartbeatMs: 200,
    onError: () => {},
    ...options,
  });
  const served = await serveHost(host.fetch);
  cleanups.push(async () => {
    await served.close();
    await host.close();
  });
  return { host, served, base: (sessionId) => `${served.url}/sessions/${sessionId}` };
}

const isTerminal = (frames: { data: string; event?: string | undefined }[]) =>
  frames.some((frame) => /"type":"run\.(completed|failed|cancelled)"/.test(frame.data));

/** Replays events into a fresh store: what a client that read them holds. */
function replay(events: readonly AgentEvent[]) {
  const store = createAgentStore();
  store.batch(events);
  return store.getSnapshot();
}

describe('createAgentHost over node:http', () => {
  it('starts a run at once and streams its events with cursors; the state endpoint equals a replay', async () => {
    const { base } = await start();
    const started = await postJson(`${base('s1')}/runs`, { provider: 'answer', input: { prompt: 'Check the log' } });
    expect(started.status).toBe(202);
    expect(started.body.cursor).toBeNull();
    const runId = started.body.runId as string;

    const read = await readEvents(`${base('s1')}/events?runId=${runId}`, { stop: isTerminal });
    expect(read.status).toBe(200);
    expect(read.events.map((event) => event.type)).toEqual([
      'run.started',
      'message.started',
      'message.completed',
      'message.started',
      'message.delta',
      'message.delta',
      'message.delta',
      'message.delta',
      'message.completed',
      'run.completed',
    ]);
    expect(read.events.every((event) => event.runId === runId && event.sessionId === 's1')).toBe(true);
    expect(read.frames.map((frame) => frame.id)).toEqual(read.events.map((_, index) => String(index + 1)));

    const state = await (await fetch(`${base('s1')}/state`)).json();
    expect(state.cursor).toBe(String(read.events.length));
    expect(state.state).toEqual(JSON.parse(JSON.stringify(replay(read.events))));
    expect(state.state.runs[runId].status).toBe('completed');
  });

  it('streams the whole session, runs started by the server included, then follows live', async () => {
    const { host, base } = await start();
    const first = await host.startRun('s2', { provider: 'answer', input: { prompt: 'one' }, runId: 'server-run' });
    expect(first).toEqual({ runId: 'server-run', cursor: null });
    const done = readEvents(`${base('s2')}/events?runId=server-run`, { stop: isTerminal });
    const firstRun = await done;
    const second = await postJson(`${base('s2')}/runs`, { provider: 'answer', input: { prompt: 'two' }, runId: 'r2' });
    expect(second.body).toEqual({ runId: 'r2', cursor: firstRun.frames.at(-1)?.id });

    const all = await readEvents(`${base('s2')}/events`, {
      stop: (frames) => frames.filter((frame) => /run\.completed/.test(frame.data)).length === 2,
    });
    expect(all.events.filter((event) => event.type === 'run.started').map((event) => event.runId)).toEqual([
      'server-run',
      'r2',
    ]);
    const cursors = all.frames.map((frame) => Number(frame.id));
    expect(cursors).toEqual(cursors.map((_, index) => index + 1));
  });

  it('resumes after Last-Event-ID (or ?after=) with nothing missed and nothing twice', async () => {
    const { host, base } = await start();
    await host.startRun('s3', { provider: 'answer', input: { prompt: 'x' }, runId: 'r1' });
    const whole = await readEvents(`${base('s3')}/events?runId=r1`, { stop: isTerminal });
    const head = await readEvents(`${base('s3')}/events?runId=r1`, { stop: (frames) => frames.length === 4 });
    const tail = await readEvents(`${base('s3')}/events?runId=r1`, {
      headers: { 'last-event-id': head.frames.at(-1)?.id as string },
      stop: isTerminal,
    });
    expect([...head.events, ...tail.events]).toEqual(whole.events);
    const byQuery = await readEvents(`${base('s3')}/events?runId=r1&after=4`, { stop: isTerminal });
    expect(byQuery.events).toEqual(tail.events);
  });

  it('answers bad requests with a JSON code and message, never a stack', async () => {
    const { served, base } = await start();
    const cases: Array<[Promise<{ status: number; body: Record<string, unknown> }>, number, string]> = [
      [postJson(`${base('s4')}/runs`, { provider: 'nope', input: {} }), 404, 'unknown_provider'],
      [postJson(`${base('s4')}/runs`, '{"provider": ', {}), 400, 'invalid_request'],
      [postJson(`${base('s4')}/runs`, { provider: 'answer', input: {}, extra: 1 }), 400, 'invalid_request'],
      [postJson(`${base('s4')}/commands`, { type: 'run.cancel' }), 400, 'invalid_command'],
      [postJson(`${served.url}/elsewhere`, {}), 404, 'not_found'],
      [postJson(`${base('s4')}/state`, {}), 405, 'method_not_allowed'],
    ];
    for (const [request, status, code] of cases) {
      const { status: actual, body } = await request;
      expect({ actual, code: (body.error as { code: string }).code }).toEqual({ actual: status, code });
      expect(JSON.stringify(body)).not.toMatch(/\n\s+at |\.ts:\d/);
    }
    await postJson(`${base('s4')}/runs`, { provider: 'answer', input: {}, runId: 'taken' });
    const again = await postJson(`${base('s4')}/runs`, { provider: 'answer', input: {}, runId: 'taken' });
    expect([again.status, (again.body.error as { code: string }).code]).toEqual([409, 'run_exists']);
    const badCursor = await fetch(`${base('s4')}/events`, { headers: { 'last-event-id': 'zzz' } });
    expect([badCursor.status, (await badCursor.json()).error.code]).toEqual([422, 'invalid_cursor']);
  });

  it('refuses a cursor the log trimmed with 410 cursor_expired, and serves the state from its snapshot', async () => {
    const log = createMemoryEventLog({ maxEntriesPerSession: 12 });
    const { host, base } = await start({ eventLog: log });
    for (const runId of ['r1', 'r2']) {
      await host.startRun('s5', { provider: 'answer', input: {}, runId });
      const read = await readEvents(`${base('s5')}/events?runId=${runId}`, { stop: isTerminal });
      expect(read.events.at(-1)?.type).toBe('run.completed');
    }
    const expired = await fetch(`${base('s5')}/events`, { headers: { 'last-event-id': '1' } });
    expect([expired.status, (await expired.json()).error.code]).toEqual([410, 'cursor_expired']);
    // A second host over the same log has never seen the session: it starts from the snapshot.
    const other = createAgentHost({ providers: {}, eventLog: log, onError: () => {} });
    cleanups.push(() => other.close());
    const { state, cursor } = await other.getState('s5');
    expect(cursor).toBe('20');
    expect([state.runs.r1?.status, state.runs.r2?.status]).toEqual(['completed', 'completed']);
    expect(state).toEqual((await host.getState('s5')).state);
  });

  it('checks input with parseInput, and refuses tool results for calls the continued run does not wait on', async () => {
    const { base, host } = await start({
      providers: {
        answer: createLocalAgentProvider({ script: answer }),
        checked: {
          provider: createLocalAgentProvider({ script: answer }),
          parseInput: (input) => {
            if (typeof (input as { prompt?: unknown })?.prompt !== 'string') throw new Error('prompt must be a string');
            return input;
          },
        },
      },
    });
    const refused = await postJson(`${base('s8')}/runs`, { provider: 'checked', input: { prompt: 7 } });
    expect(refused).toEqual({
      status: 400,
      body: { error: { code: 'invalid_input', message: 'Invalid input for "checked": prompt must be a string' } },
    });
    expect((await postJson(`${base('s8')}/runs`, { provider: 'checked', input: { prompt: 'ok' } })).status).toBe(202);
    await host.startRun('s8', { provider: 'answer', input: {}, runId: 'done' });
    await readEvents(`${base('s8')}/events?runId=done`, { stop: isTerminal });
    const before = await host.getState('s8');
    const forged = await postJson(`${base('s8')}/runs`, {
      provider: 'answer',
      input: {},
      continuation: { runId: 'done', approvals: [], toolResults: [{ toolCallId: 'never-asked', result: 1 }] },
    });
    expect([forged.status, (forged.body.error as { message: string }).message]).toEqual([
      400,
      'Run "done" does not wait on a result for tool call "never-asked"',
    ]);
    expect((await host.getState('s8')).cursor).toBe(before.cursor);
  });

  it('calls authorize on every endpoint with its action, and refuses with 403', async () => {
    const calls: string[] = [];
    const { base } = await start({
      authorize: (request, { sessionId, action }) => {
        calls.push(`${action}:${sessionId}`);
        return request.headers.get('authorization') === `Bearer ${sessionId}`;
      },
    });
    const token = { authorization: 'Bearer s6' };
    const started = await postJson(`${base('s6')}/runs`, { provider: 'answer', input: {} }, token);
    expect(started.status).toBe(202);
    const stolen = await postJson(`${base('s7')}/runs`, { provider: 'answer', input: {} }, token);
    expect([stolen.status, (stolen.body.error as { code: string }).code]).toEqual([403, 'forbidden']);
    expect((await readEvents(`${base('s7')}/events`, { headers: token })).status).toBe(403);
    expect((await fetch(`${base('s7')}/state`, { headers: token })).status).toBe(403);
    const command = createAgentCommandFactory({ sessionId: 's7', runId: started.body.runId as string }).create(
      'run.cancel',
      {},
    );
    expect((await postJson(`${base('s7')}/commands`, command, token)).status).toBe(403);
    // Authorised for s6, a command naming s7 is refused all the same.
    const crossing = await postJson(`${base('s6')}/commands`, command, token);
    expect([crossing.status, (crossing.body.error as { code: string }).code]).toEqual([403, 'session_mismatch']);
    expect(calls).toEqual(['run:s6', 'run:s7', 'read:s7', 'state:s7', 'command:s7', 'command:s6']);
  });
});

describe('commands', () => {
  it('resolves an approval the run waits on; the same key again returns the first outcome, once', async () => {
    const { base } = await start();
    const { body } = await postJson(`${base('c1')}/runs`, { provider: 'approval', input: {} });
    const runId = body.runId as string;
    const waiting = await readEvents(`${base('c1')}/events?runId=${runId}`, {
      stop: (frames) => frames.some((frame) => frame.data.includes('"approval.requested"')),
    });
    const requested = waiting.events.find((event) => event.type === 'approval.requested') as AgentEvent;
    const approvalId = (requested.payload as { approvalId: string }).approvalId;
    const command = createAgentCommandFactory({ sessionId: 'c1', runId }).create('approval.resolve', {
      approvalId,
      decision: 'approved',
    });
    const first = await postJson(`${base('c1')}/commands`, command);
    expect(first.status).toBe(200);
    const repeated = await postJson(`${base('c1')}/commands`, command);
    expect(repeated).toEqual(first);
    const conflicting = await postJson(`${base('c1')}/commands`, {
      ...command,
      payload: { approvalId, decision: 'rejected' },
    });
    expect([conflicting.status, (conflicting.body.error as { code: string }).code]).toEqual([
      409,
      'idempotency_conflict',
    ]);

    const all = await readEvents(`${base('c1')}/events?runId=${runId}`, { stop: isTerminal });
    expect(all.events.filter((event) => event.type === 'approval.resolved')).toHaveLength(1);
    expect(all.events.at(-1)?.type).toBe('run.completed');
    const { state } = await (await fetch(`${base('c1')}/state`)).json();
    expect(Object.values(state.approvals as Record<string, { decision: string }>)[0]?.decision).toBe('approved');
  });

  it('sends the head of an event stream at once, before there is any event to send', async () => {
    const { base } = await start({ heartbeatMs: 30_000 });
    const { body } = await postJson(`${base('h1')}/runs`, { provider: 'stall', input: {} });
    const runId = body.runId as string;
    // Everything the run will write before it stalls: the text it streamed, complete.
    await readEvents(`${base('h1')}/events?runId=${runId}`, {
      stop: (frames) => frames.filter((frame) => frame.data.includes('"message.completed"')).length === 2,
    });
    const { cursor } = await (await fetch(`${base('h1')}/state`)).json();
    const controller = new AbortController();
    const waiting = fetch(`${base('h1')}/events?runId=${runId}`, {
      headers: { 'last-event-id': cursor },
      signal: controller.signal,
    });
    const timer = setTimeout(() => controller.abort(), 2_000);
    const response = await waiting;
    clearTimeout(timer);
    expect([response.status, response.headers.get('content-type')]).toEqual([200, 'text/event-stream; charset=utf-8']);
    controller.abort();
  });

  it('cancels a running run, and refuses commands for runs that ended or never were', async () => {
    const { base } = await start();
    const { body } = await postJson(`${base('c2')}/runs`, { provider: 'stall', input: {} });
    const runId = body.runId as string;
    await readEvents(`${base('c2')}/events?runId=${runId}`, { stop: (frames) => frames.length >= 3 });
    const commands = createAgentCommandFactory({ sessionId: 'c2', runId });
    const cancel = await postJson(`${base('c2')}/commands`, commands.create('run.cancel', { reason: 'user' }));
    expect(cancel.status).toBe(200);
    const all = await readEvents(`${base('c2')}/events?runId=${runId}`, { stop: isTerminal });
    expect(all.events.at(-1)?.type).toBe('run.cancelled');

    const late = await postJson(`${base('c2')}/commands`, commands.create('run.cancel', {}));
    expect([late.status, (late.body.error as { code: string }).code]).toEqual([409, 'run_ended']);
    const ghost = createAgentCommandFactory({ sessionId: 'c2', runId: 'ghost' }).create('run.cancel', {});
    const unknown = await postJson(`${base('c2')}/commands`, ghost);
    expect([unknown.status, (unknown.body.error as { code: string }).code]).toEqual([404, 'unknown_run']);
  });

  it('cancels a run whose provider takes no run.cancel by aborting it', async () => {
    const local = createLocalAgentProvider({ script: stalls });
    const deaf = { ...local, capabilities: { ...local.capabilities, commands: [] } };
    const { base } = await start({ providers: { deaf } });
    const { body } = await postJson(`${base('c4')}/runs`, { provider: 'deaf', input: {} });
    const runId = body.runId as string;
    await readEvents(`${base('c4')}/events?runId=${runId}`, { stop: (frames) => frames.length >= 3 });
    // Any other command is one this provider does not take.
    const retry = createAgentCommandFactory({ sessionId: 'c4', runId }).create('tool.retry', { toolCallId: 't' });
    const refused = await postJson(`${base('c4')}/commands`, retry);
    expect([refused.status, (refused.body.error as { code: string }).code]).toEqual([422, 'unsupported_capability']);
    const cancel = createAgentCommandFactory({ sessionId: 'c4', runId }).create('run.cancel', { reason: 'user' });
    expect(await postJson(`${base('c4')}/commands`, cancel)).toEqual({
      status: 200,
      body: { status: 'accepted', events: [] },
    });
    const all = await readEvents(`${base('c4')}/events?runId=${runId}`, { stop: isTerminal });
    expect(all.events.at(-1)?.type).toBe('run.cancelled');
  });

  it('forwards a command to the instance that runs the run, through the shared log', async () => {
    const log = createMemoryEventLog();
    const a = await start({ eventLog: log, instanceId: 'a' });
    const b = await start({ eventLog: log, instanceId: 'b' });
    const { body } = await postJson(`${a.base('c3')}/runs`, { provider: 'stall', input: {} });
    const runId = body.runId as string;
    await readEvents(`${b.base('c3')}/events?runId=${runId}`, { stop: (frames) => frames.length >= 3 });
    const cancel = createAgentCommandFactory({ sessionId: 'c3', runId }).create('run.cancel', {});
    expect((await postJson(`${b.base('c3')}/commands`, cancel)).status).toBe(200);
    const all = await readEvents(`${b.base('c3')}/events?runId=${runId}`, { stop: isTerminal });
    expect(all.events.at(-1)?.type).toBe('run.cancelled');
  });
});

describe('what a host holds for requests that went away, and keys under contention', () => {
  it('stops reading the log for event streams whose clients went away', async () => {
    const memory = createMemoryEventLog();
    let follows = 0;
    const log: AgentEventLog = {
      ...memory,
      follow: (sessionId, options) => {
        follows += 1;
        return memory.follow(sessionId, options);
      },
    };
    const { base } = await start({ eventLog: log, heartbeatMs: 20 });
    await postJson(`${base('d1')}/runs`, { provider: 'answer', input: {}, runId: 'r1' });
    await readEvents(`${base('d1')}/events?runId=r1`, { stop: isTerminal });
    const clients = Array.from({ length: 20 }, () => new AbortController());
    await Promise.all(
      clients.map(async (client) => {
        const response = await fetch(`${base('d1')}/events`, { signal: client.signal });
        await response.body?.getReader().read();
      }),
    );
    for (const client of clients) client.abort();
    await new Promise((resolve) => setTimeout(resolve, 100));
    const after = follows;
    await new Promise((resolve) => setTimeout(resolve, 300));
    // With a reader left, the feed would follow again every 20 ms: 15 times in 300 ms.
    expect(follows - after).toBeLessThanOrEqual(1);
  });

  it('executes a command sent twice at once, with one key, once; both requests get its outcome', async () => {
    const { base } = await start();
    const { body } = await postJson(`${base('k1')}/runs`, { provider: 'approval', input: {} });
    const runId = body.runId as string;
    const waiting = await readEvents(`${base('k1')}/events?runId=${runId}`, {
      stop: (frames) => frames.some((frame) => frame.data.includes('"approval.requested"')),
    });
    const requested = waiting.events.find((event) => event.type === 'approval.requested') as AgentEvent;
    const command = createAgentCommandFactory({ sessionId: 'k1', runId }).create('approval.resolve', {
      approvalId: (requested.payload as { approvalId: string }).approvalId,
      decision: 'approved',
    });
    const [first, second] = await Promise.all([
      postJson(`${base('k1')}/commands`, command),
      postJson(`${base('k1')}/commands`, command),
    ]);
    expect(first.status).toBe(200);
    expect(second).toEqual(first);
    const all = await readEvents(`${base('k1')}/events?runId=${runId}`, { stop: isTerminal });
    expect(all.events.filter((event) => event.type === 'approval.resolved')).toHaveLength(1);
  });

  it('lets a key claimed by an instance that died be tried again once its pending record expires', async () => {
    const log = createMemoryEventLog();
    const { base } = await start({ eventLog: log, commandTimeoutMs: 200, runLeaseMs: 300 });
    const { body } = await postJson(`${base('k2')}/runs`, { provider: 'stall', input: {} });
    const runId = body.runId as string;
    await readEvents(`${base('k2')}/events?runId=${runId}`, { stop: (frames) => frames.length >= 3 });
    const cancel = createAgentCommandFactory({ sessionId: 'k2', runId }).create('run.cancel', {});
    // Another instance claimed the key, then died before it settled it.
    const fingerprint = await fingerprintOf(cancel);
    await log.claimCommand('k2', cancel.idempotencyKey, fingerprint, 400);
    const blocked = await postJson(`${base('k2')}/commands`, cancel);
    expect([blocked.status, (blocked.body.error as { code: string }).code]).toEqual([504, 'timeout']);
    await new Promise((resolve) => setTimeout(resolve, 250));
    expect((await postJson(`${base('k2')}/commands`, cancel)).status).toBe(200);
    const all = await readEvents(`${base('k2')}/events?runId=${runId}`, { stop: isTerminal });
    expect(all.events.at(-1)?.type).toBe('run.cancelled');
  });

  it('starts one continuation of a waiting run when two requests continue it at once', async () => {
    const log = createMemoryEventLog();
    const { base, host } = await start({
      eventLog: log,
      providers: {
        tool: createLocalAgentProvider({
          script: (_input, turn) =>
            turn.continuation === undefined
              ? { steps: [{ type: 'tool', name: 'lookup', argumentDeltas: ['{}'] }] }
              : { steps: [{ type: 'text', deltas: ['Done.'] }] },
        }),
      },
    });
    await host.startRun('c9', { provider: 'tool', input: {}, runId: 'waiting' });
    await readEvents(`${base('c9')}/events?runId=waiting`, { stop: isTerminal });
    const { state } = await host.getState('c9');
    expect(state.runs.waiting?.pendingToolCallIds).toEqual(['tool-0']);
    const continuation = {
      runId: 'waiting',
      approvals: [],
      toolResults: [{ toolCallId: 'tool-0', result: 1, timestamp: 5 }],
    };
    const answers = await Promise.all(
      ['c1', 'c2'].map((runId) => postJson(`${base('c9')}/runs`, { provider: 'tool', input: {}, runId, continuation })),
    );
    // The second is refused: while the first continues the run (409), or once its tool result is in (400).
    const statuses = answers.map((answer) => answer.status).sort();
    expect(statuses[0]).toBe(202);
    expect([400, 409]).toContain(statuses[1]);
    const all = await readEvents(`${base('c9')}/events`, {
      stop: (frames) => frames.filter((frame) => frame.data.includes('"run.completed"')).length === 2,
    });
    expect(all.events.filter((event) => event.type === 'tool.completed')).toHaveLength(1);
    expect(all.events.filter((event) => event.type === 'run.started').map((event) => event.runId)).toHaveLength(2);
  });

  it('stops writing a run whose lease it may have lost; the run then fails host_lost, once', async () => {
    const memory = createMemoryEventLog();
    // Renewals say the lease is gone, as when another instance took the run over.
    const log: AgentEventLog = { ...memory, renewRun: async () => false };
    const { base, host } = await start({ eventLog: log, runLeaseMs: 300, heartbeatMs: 100 });
    const { body } = await postJson(`${base('l1')}/runs`, { provider: 'stall', input: {} });
    const runId = body.runId as string;
    const read = await readEvents(`${base('l1')}/events?runId=${runId}`, { stop: isTerminal, timeoutMs: 5_000 });
    const terminals = read.events.filter((event) => event.type.startsWith('run.') && event.type !== 'run.started');
    expect(terminals.map((event) => [event.type, (event.payload as { error?: { code: string } }).error?.code])).toEqual(
      [['run.failed', 'host_lost']],
    );
    const { state } = await host.getState('l1');
    expect([state.runs[runId]?.status, state.issues]).toEqual(['failed', []]);
  });
});

describe('runs whose instance is gone, and slow readers', () => {
  it('fails a run whose lease expired with host_lost, once, and ends its readers', async () => {
    const log: AgentEventLog = createMemoryEventLog();
    const { host, base } = await start({ eventLog: log, runLeaseMs: 300, heartbeatMs: 100 });
    // A "dead" instance: it took the lease, wrote the run's first events, and stopped renewing.
    await log.claimRun('g1', 'r1', 'dead-instance', 300);
    const factory = runEvents('r1', 'g1');
    const events = [
      factory.create('run.started', {}),
      factory.create('message.started', { messageId: 'm1', role: 'assistant' }),
      factory.create('message.delta', { messageId: 'm1', delta: 'Half' }),
    ];
    await log.append('g1', events);
    const read = await readEvents(`${base('g1')}/events?runId=r1`, { stop: isTerminal, timeoutMs: 5_000 });
    expect(read.events.slice(3).map((event) => event.type)).toEqual(['message.failed', 'run.failed']);
    expect(read.events.at(-1)?.payload).toMatchObject({ error: { code: 'host_lost' } });
    const { state } = await host.getState('g1');
    expect(state.runs.r1?.status).toBe('failed');
    expect(await log.runOwner('g1', 'r1')).toEqual({ state: 'ended' });
  });

  it('drops a reader that stops reading, with its cursor; it resumes from there and misses nothing', async () => {
    const { host, base } = await start({ slowReaderMs: 300, maxQueuedBytes: 16_384, pageSize: 8 });
    await host.startRun('b1', { provider: 'big', input: {}, runId: 'r1' });
    const response = await fetch(`${base('b1')}/events?runId=r1`);
    const reader = response.body?.getReader() as ReadableStreamDefaultReader<Uint8Array>;
    // Read a little, then stall long enough for the host to give up on this reader.
    let text = new TextDecoder().decode((await reader.read()).value);
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      text += new TextDecoder().decode(value, { stream: true });
    }
    const dropped = /event: dropped\ndata: (.*)\n/.exec(text);
    expect(dropped).not.toBeNull();
    const { cursor } = JSON.parse(dropped?.[1] as string) as { cursor: string };
    const ids = [...text.matchAll(/^id: (\d+)$/gm)].map((match) => match[1]);
    expect(ids.at(-1)).toBe(cursor);
    // The resumed reader reads on from the next cursor; on a loaded machine it may be dropped
    // again, and resumes again, until the run's end: nothing missed, nothing twice.
    const ids2: number[] = [];
    let last: string | undefined;
    let after = cursor;
    for (let attempt = 0; attempt < 20 && last !== 'run.completed'; attempt += 1) {
      const rest = await readEvents(`${base('b1')}/events?runId=r1`, {
        headers: { 'last-event-id': after },
        stop: isTerminal,
        timeoutMs: 20_000,
      });
      const delivered = rest.frames.filter((frame) => frame.event === undefined);
      ids2.push(...delivered.map((frame) => Number(frame.id)));
      last = rest.events.at(-1)?.type;
      after = delivered.at(-1)?.id ?? after;
    }
    expect(ids2[0]).toBe(Number(cursor) + 1);
    expect(ids2).toEqual(ids2.map((_, index) => Number(cursor) + 1 + index));
    expect(last).toBe('run.completed');
  });
});

describe('host.fetch on web Request and Response, without node:http', () => {
  it('serves a run and its events to a handler mounted under a base path, as Hono or a route handler would', async () => {
    const host = createAgentHost({
      providers: { answer: createLocalAgentProvider({ script: answer }) },
      basePath: '/api/agent/',
      onError: () => {},
    });
    cleanups.push(() => host.close());
    const origin = 'http://app.example';
    const started = await host.fetch(
      new Request(`${origin}/api/agent/sessions/w1/runs`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ provider: 'answer', input: { prompt: 'x' }, runId: 'r1' }),
      }),
    );
    expect([started.status, await started.json()]).toEqual([202, { runId: 'r1', cursor: null }]);
    const events = await host.fetch(new Request(`${origin}/api/agent/sessions/w1/events?runId=r1`));
    expect(events.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    const text = await events.text();
    expect(text.match(/^id: \d+$/gm)).toHaveLength(10);
    const last = JSON.parse(
      text
        .trimEnd()
        .split('\n')
        .at(-1)
        ?.replace(/^data: /, '') ?? '{}',
    );
    expect([last.type, last.runId]).toEqual(['run.completed', 'r1']);
    const outside = await host.fetch(new Request(`${origin}/sessions/w1/state`));
    expect([outside.status, (await outside.json()).error.code]).toEqual([404, 'not_found']);
  });
});
