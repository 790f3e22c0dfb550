// Two host instances, each in its own process, on one Redis: what a deployment behind a
// load balancer runs. A run started on one is followed, resumed and commanded through the
// other; an instance killed mid-run has its run reported failed, not left hanging.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createAgentStore } from '../machines/createAgentStore';
import { createAgentCommandFactory } from '../protocol/createAgentCommandFactory';
import type { AgentEvent } from '../protocol/eventSchemas';
import { createAgentEventProvider } from '../providers/agent-event/createAgentEventProvider';
import type { AgentConnectionChange } from '../providers/reconnect';
import { runAgentProvider } from '../providers/runAgentProvider';
import { postJson, readEvents } from './support/hostClient';
import { type HostProcess, startHostProcess } from './support/hostProcesses';
import { describeWithRedis, startRedisServer, type TestRedisServer } from './support/redisServer';

const isTerminal = (frames: { data: string }[]) =>
  frames.some((frame) => /"type":"run\.(completed|failed|cancelled)"/.test(frame.data));
const plain = (value: unknown) => JSON.parse(JSON.stringify(value));
const SLOW_TEXT = Array.from({ length: 40 }, (_, i) => `w${i} `).join('');

describeWithRedis('two host instances on one Redis', () => {
  let redis: TestRedisServer;
  let a: HostProcess;
  let b: HostProcess;

  beforeAll(async () => {
    redis = await startRedisServer();
    // A lease far above a loaded machine's pauses: an instance stops writing a run it has not
    // renewed for 0.8 of it, and 1 s failed a healthy run (host_lost) at load 20.
    const options = { redisUrl: redis.url, keyPrefix: 'e2e:', leaseMs: 4_000 };
    [a, b] = await Promise.all([
      startHostProcess({ ...options, instanceId: 'a' }),
      startHostProcess({ ...options, instanceId: 'b' }),
    ]);
  }, 30_000);

  afterAll(async () => {
    await Promise.all([a?.stop(), b?.stop()]);
    await redis?.stop();
  });

  it('follows a run started on A through B, and resumes it on B after a cut: nothing missed, nothing twice', async () => {
    const sessionId = 'follow';
    // The client starts its run on A; its stream breaks after ten events and, as a load
    // balancer would, the reconnect goes to B.
    let target = a.url;
    let cut: (() => void) | undefined;
    const switchingFetch: typeof fetch = async (input, init) => {
      const url = String(input).replace(a.url, target);
      const response = await fetch(url, init);
      if (response.body === null || !url.includes('/events')) return response;
      let fail: (error: unknown) => void = () => {};
      const body = response.body.pipeThrough(
        new TransformStream<Uint8Array, Uint8Array>({
          start: (controller) => {
            fail = (error) => controller.error(error);
          },
        }),
      );
      cut = () => fail(new TypeError('terminated: the connection to A was lost'));
      return new Response(body, { status: response.status, headers: response.headers });
    };
    const store = createAgentStore();
    const received: AgentEvent[] = [];
    const connection: AgentConnectionChange['type'][] = [];
    const result = await runAgentProvider({
      provider: createAgentEventProvider({ baseURL: a.url, sessionId, fetch: switchingFetch }),
      input: { provider: 'slow', input: { prompt: 'Count' } },
      sessionId,
      runId: 'r-follow',
      reconnect: { maxAttempts: 3, initialDelay: 20, maxDelay: 50 },
      onConnection: (change) => connection.push(change.type),
      onEvent: (event, admission) => {
        received.push(event);
        store.dispatch(event, admission);
        if (received.length === 10) {
          target = b.url;
          cut?.();
        }
      },
    });
    expect(result.status).toBe('completed');
    expect(connection.filter((type) => type === 'reconnecting')).toHaveLength(1);
    expect(received.map((event) => event.sequence)).toEqual(received.map((_, index) => index + 1));

    // Another client, which started nothing, reads the whole run through B.
    const viaB = await readEvents(`${b.url}/sessions/${sessionId}/events?runId=r-follow`, { stop: isTerminal });
    expect(viaB.events).toEqual(received);
    const fromB = await (await fetch(`${b.url}/sessions/${sessionId}/state`)).json();
    const fromA = await (await fetch(`${a.url}/sessions/${sessionId}/state`)).json();
    expect(fromB).toEqual(fromA);
    expect(fromB.cursor).toBe(viaB.frames.at(-1)?.id);
    expect(plain(store.getSnapshot())).toEqual(fromB.state);
    expect(Object.values(fromB.state.messages as Record<string, { role: string; content: string }>)).toContainEqual(
      expect.objectContaining({ role: 'assistant', content: SLOW_TEXT }),
    );
  });

  it('delivers a command sent to B to the run on A, once per idempotency key on either instance', async () => {
    const sessionId = 'command';
    const started = await postJson(`${a.url}/sessions/${sessionId}/runs`, { provider: 'approval', input: {} });
    const runId = started.body.runId as string;
    const waiting = await readEvents(`${b.url}/sessions/${sessionId}/events?runId=${runId}`, {
      stop: (frames) => frames.some((frame) => frame.data.includes('"approval.requested"')),
    });
    const requested = waiting.events.find((event) => event.type === 'approval.requested') as AgentEvent;
    const command = createAgentCommandFactory({ sessionId, runId }).create('approval.resolve', {
      approvalId: (requested.payload as { approvalId: string }).approvalId,
      decision: 'approved',
    });
    const viaB = await postJson(`${b.url}/sessions/${sessionId}/commands`, command);
    expect(viaB.status).toBe(200);
    expect(await postJson(`${a.url}/sessions/${sessionId}/commands`, command)).toEqual(viaB);
    const all = await readEvents(`${b.url}/sessions/${sessionId}/events?runId=${runId}`, { stop: isTerminal });
    expect(all.events.filter((event) => event.type === 'approval.resolved')).toHaveLength(1);
    expect(all.events.at(-1)?.type).toBe('run.completed');
  });

  it('cancels a run on A from B, where the provider takes run.cancel through its own command', async () => {
    const sessionId = 'cancel';
    const started = await postJson(`${a.url}/sessions/${sessionId}/runs`, { provider: 'stall', input: {} });
    const runId = started.body.runId as string;
    await readEvents(`${b.url}/sessions/${sessionId}/events?runId=${runId}`, { stop: (frames) => frames.length >= 3 });
    const cancel = createAgentCommandFactory({ sessionId, runId }).create('run.cancel', { reason: 'user' });
    expect((await postJson(`${b.url}/sessions/${sessionId}/commands`, cancel)).status).toBe(200);
    const all = await readEvents(`${b.url}/sessions/${sessionId}/events?runId=${runId}`, { stop: isTerminal });
    expect(all.events.at(-1)?.type).toBe('run.cancelled');
  });

  it('reports a run whose instance was killed as failed (host_lost), and commands for it as run_unavailable', async () => {
    const sessionId = 'killed';
    const started = await postJson(`${a.url}/sessions/${sessionId}/runs`, { provider: 'stall', input: {} });
    const runId = started.body.runId as string;
    await readEvents(`${b.url}/sessions/${sessionId}/events?runId=${runId}`, { stop: (frames) => frames.length >= 3 });
    const following = readEvents(`${b.url}/sessions/${sessionId}/events?runId=${runId}`, {
      stop: isTerminal,
      timeoutMs: 40_000,
    });
    await a.kill();
    const cancel = createAgentCommandFactory({ sessionId, runId }).create('run.cancel', {});
    const refused = await postJson(`${b.url}/sessions/${sessionId}/commands`, cancel);
    expect([refused.status, (refused.body.error as { code: string }).code]).toEqual([503, 'run_unavailable']);
    const { events } = await following;
    // The text was complete when it stalled: only the run was left open.
    expect(events.slice(-2).map((event) => event.type)).toEqual(['message.completed', 'run.failed']);
    expect(events.at(-1)?.payload).toMatchObject({ error: { code: 'host_lost' } });
    const { state } = await (await fetch(`${b.url}/sessions/${sessionId}/state`)).json();
    expect(state.runs[runId].status).toBe('failed');
  }, 60_000);
});
