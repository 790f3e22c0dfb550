// followAgentSession against a real host (createAgentHost over node:http on loopback, local
// providers): every run of a session reaches every follower, whoever started it, once.
import { afterEach, describe, expect, it } from 'vitest';
import type { AgentState } from '../machines/agentState';
import { type AgentStore, createAgentStore } from '../machines/createAgentStore';
import { createAgentEventFactory } from '../protocol/createAgentEventFactory';
import { createAgentEventProvider } from '../providers/agent-event/createAgentEventProvider';
import {
  type AgentSessionFollowChange,
  type FollowAgentSessionOptions,
  followAgentSession,
} from '../providers/agent-event/followAgentSession';
import { createLocalAgentProvider } from '../providers/local/createLocalAgentProvider';
import { createXChatRuntime } from '../runtime/createXChatRuntime';
import { type AgentHost, type AgentHostOptions, createAgentHost } from '../server/createAgentHost';
import { createMemoryEventLog } from '../server/createMemoryEventLog';
import { AgentTransportError } from '../transports/AgentTransportError';
import { readEvents, type ServedHost, serveHost } from './support/hostClient';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function start(options: Partial<AgentHostOptions> = {}): Promise<{ host: AgentHost; served: ServedHost }> {
  const host = createAgentHost({
    providers: {
      answer: createLocalAgentProvider({
        script: { steps: [{ type: 'text', deltas: ['The ', 'log ', 'is ', 'clean.'] }] },
      }),
      // Forty words, 10 ms apart: long enough to race two streams and to cut a connection mid-run.
      slow: createLocalAgentProvider({
        script: { steps: [{ type: 'text', deltas: Array.from({ length: 40 }, (_, i) => `w${i} `) }], delayMs: 10 },
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
  return { host, served };
}

type Follower = {
  changes: AgentSessionFollowChange[];
  cursors: string[];
  /** Settles as the follower does: `undefined` when it resolved, the error when it rejected. */
  done: Promise<unknown>;
  stop(): Promise<unknown>;
};

/** Follows a session until the test ends (or `stop`), recording its changes and cursors. */
function follow(
  served: ServedHost,
  sessionId: string,
  store: FollowAgentSessionOptions['store'],
  options: Partial<FollowAgentSessionOptions> = {},
): Follower {
  const controller = new AbortController();
  const changes: AgentSessionFollowChange[] = [];
  const cursors: string[] = [];
  const done = followAgentSession({
    baseURL: served.url,
    sessionId,
    store,
    signal: controller.signal,
    reconnect: { maxAttempts: 3, initialDelay: 20, maxDelay: 50 },
    onConnection: (change) => changes.push(change),
    onCursor: (cursor) => cursors.push(cursor),
    ...options,
  }).then(
    () => undefined,
    (error: unknown) => error,
  );
  const stop = () => {
    controller.abort();
    return done;
  };
  cleanups.push(async () => {
    await stop();
  });
  return { changes, cursors, done, stop };
}

async function waitFor(check: () => boolean | Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + 4_000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`Not reached in 4 s: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

const plain = (value: unknown) => JSON.parse(JSON.stringify(value)) as AgentState;

/** Waits until the host has `runId` (any run by default) and the store every run of the host, ended; returns both states. */
async function settled(host: AgentHost, sessionId: string, store: Pick<AgentStore, 'getSnapshot'>, runId?: string) {
  await waitFor(async () => {
    const { state } = await host.getState(sessionId);
    const runs = Object.values(state.runs);
    return (
      (runId === undefined ? runs.length > 0 : state.runs[runId] !== undefined) &&
      runs.every((run) => run.status !== 'running' && store.getSnapshot().runs[run.id]?.status === run.status)
    );
  }, 'the store has every run of the host, ended');
  return { client: store.getSnapshot(), host: (await host.getState(sessionId)).state };
}

describe('followAgentSession against a real host', () => {
  it("shows a run another tab starts: tab B's state equals the host's", async () => {
    const { host, served } = await start();
    const sessionId = 'tabs';
    const provider = () => createAgentEventProvider({ baseURL: served.url, sessionId });
    const tabA = createXChatRuntime({ provider: provider(), sessionId });
    const tabB = createXChatRuntime({ provider: provider(), sessionId });
    const follower = follow(served, sessionId, tabB.store);
    await waitFor(() => follower.changes.some((change) => change.type === 'connected'), 'B connected');

    const result = await tabA.request({ provider: 'answer', input: { prompt: 'Check the log' } });
    expect(result.status).toBe('completed');
    const { client, host: state } = await settled(host, sessionId, tabB.store);
    expect(client.issues).toEqual([]);
    // The whole AgentState, runtime-only fields included: nothing differs.
    expect(plain(client)).toEqual(plain(state));
    expect(plain(tabA.getSnapshot().agentState)).toEqual(plain(state));
    expect(tabB.getSnapshot().messages.map(({ message }) => message.content)).toEqual([
      'Check the log',
      'The log is clean.',
    ]);
    expect(follower.changes.map((change) => change.type)).toEqual(['connecting', 'reset', 'connected']);
    tabA.abort();
  });

  it('shows a run the server starts with host.startRun', async () => {
    const { host, served } = await start();
    const store = createAgentStore();
    const follower = follow(served, 'server-run', store);
    await waitFor(() => follower.changes.some((change) => change.type === 'connected'), 'connected');

    const { runId } = await host.startRun('server-run', { provider: 'answer', input: { prompt: 'Nightly report' } });
    const { client, host: state } = await settled(host, 'server-run', store, runId);
    expect(client.runs[runId]?.status).toBe('completed');
    expect(client.issues).toEqual([]);
    expect(plain(client)).toEqual(plain(state));
    // One cursor per event of the log, in order.
    expect(follower.cursors).toEqual(Array.from({ length: follower.cursors.length }, (_, i) => String(i + 1)));
  });

  it.each([
    ['before', 0],
    ['in the middle of', 15],
  ])("applies each event of the runtime's own run once, the follower started %s the run", async (when, joinAt) => {
    const { host, served } = await start();
    const sessionId = `beside-${joinAt}`;
    // Strict: an event applied twice (a repeated sequence) would throw, on either stream.
    const chat = createXChatRuntime({
      provider: createAgentEventProvider({ baseURL: served.url, sessionId }),
      sessionId,
      store: { protocolMode: 'strict' },
    });
    let following = false;
    const applied = { follower: 0, runtime: 0 };
    chat.store.subscribe(() => {
      applied[following ? 'follower' : 'runtime'] += 1;
    });
    const followed: string[] = [];
    const store: FollowAgentSessionOptions['store'] = {
      getSnapshot: () => chat.store.getSnapshot(),
      reset: (state) => chat.store.reset(state),
      dispatch: (event) => {
        followed.push((event as { eventId: string }).eventId);
        following = true;
        try {
          chat.store.dispatch(event);
        } finally {
          following = false;
        }
      },
    };
    const startFollowing = async () => {
      const follower = follow(served, sessionId, store);
      await waitFor(() => follower.changes.some((change) => change.type === 'connected'), 'connected');
      return follower;
    };
    let follower = joinAt === 0 ? await startFollowing() : undefined;
    // The store's reset to the host's (empty) state is not an event.
    applied.runtime = 0;

    const running = chat.request({ provider: 'slow', input: { prompt: 'Count' } });
    if (follower === undefined) {
      // The store holds the run already: the follower reads the log from its start, absorbing what it has.
      await waitFor(
        () => (Object.values(chat.store.getSnapshot().lastSequenceByRun)[0] ?? 0) >= joinAt,
        `sequence ${joinAt}`,
      );
      follower = await startFollowing();
    }
    const result = await running;
    expect(result.status).toBe('completed');
    const { client, host: state } = await settled(host, sessionId, chat.store);
    const log = await readEvents(`${served.url}/sessions/${sessionId}/events?runId=${result.runId}`, {
      stop: (frames) => frames.some((frame) => frame.data.includes('"run.completed"')),
    });
    await waitFor(() => followed.length === log.events.length, 'the follower read every event');
    expect(followed).toEqual(log.events.map((event) => event.eventId));
    // Every event changed the store exactly once, whichever stream brought it first.
    expect(applied.follower + applied.runtime).toBe(log.events.length);
    if (joinAt > 0) expect(applied.runtime).toBeGreaterThanOrEqual(joinAt);
    expect(follower.changes.some((change) => change.type === 'reset')).toBe(joinAt === 0);
    expect(client.issues).toEqual([]);
    expect(plain(client)).toEqual(plain(state));
    expect(await follower.stop(), when).toBeUndefined();
  });

  it('resumes from its cursor after the connection drops mid-run: nothing missed, nothing twice', async () => {
    const { host, served } = await start();
    const store = createAgentStore({ protocolMode: 'strict' });
    let cut = false;
    const follower = follow(served, 'drop', store, {
      onCursor: (cursor) => {
        follower.cursors.push(cursor);
        if (!cut && follower.cursors.length === 12) {
          cut = true;
          served.server.closeAllConnections();
        }
      },
    });
    await waitFor(() => follower.changes.some((change) => change.type === 'connected'), 'connected');
    await host.startRun('drop', { provider: 'slow', input: { prompt: 'Count' } });
    const { client, host: state } = await settled(host, 'drop', store);
    expect(cut).toBe(true);
    expect(follower.changes.filter((change) => change.type === 'reconnecting')).toHaveLength(1);
    expect(follower.cursors).toEqual(Array.from({ length: follower.cursors.length }, (_, i) => String(i + 1)));
    expect(client.issues).toEqual([]);
    expect(plain(client)).toEqual(plain(state));
    const text = Object.values(client.messages).find((message) => message.role === 'assistant')?.content;
    expect(text).toBe(Array.from({ length: 40 }, (_, i) => `w${i} `).join(''));
  });

  it("resets the store to the host's state when its cursor was trimmed away (410), dropping what the host does not know", async () => {
    const { host, served } = await start({ eventLog: createMemoryEventLog({ maxEntriesPerSession: 20 }) });
    const sessionId = 'trimmed';
    await host.startRun(sessionId, { provider: 'slow', input: { prompt: 'Count' } });
    await waitFor(
      async () => Object.values((await host.getState(sessionId)).state.runs)[0]?.status === 'completed',
      'the run completed',
    );
    const store = createAgentStore();
    // A run only this client has: the host does not know it, so the reset drops it.
    const local = createAgentEventFactory({ sessionId, runId: 'local-only' });
    store.dispatch(local.create('run.started', {}));
    const follower = follow(served, sessionId, store, { after: '1' });
    await waitFor(() => follower.changes.some((change) => change.type === 'connected'), 'connected');
    const { client, host: state } = await settled(host, sessionId, store);
    const { cursor } = await host.getState(sessionId);
    expect(client.runs['local-only']).toBeUndefined();
    expect(plain(client)).toEqual(plain(state));
    expect(follower.changes.map((change) => change.type)).toEqual([
      'connecting',
      'reconnecting',
      'connecting',
      'reset',
      'connected',
    ]);
    const reconnecting = follower.changes[1] as Extract<AgentSessionFollowChange, { type: 'reconnecting' }>;
    expect((reconnecting.error as AgentTransportError).status).toBe(410);
    expect(follower.changes[3]).toEqual({ type: 'reset', cursor });

    // Later runs follow on from the reset state's cursor.
    const { runId } = await host.startRun(sessionId, { provider: 'answer', input: { prompt: 'Again' } });
    const after = await settled(host, sessionId, store, runId);
    expect(after.client.runs[runId]?.status).toBe('completed');
    expect(after.client.issues).toEqual([]);
    expect(plain(after.client)).toEqual(plain(after.host));
  });

  it('resolves when its signal aborts, ending with closed', async () => {
    const { served } = await start();
    const follower = follow(served, 'abort', createAgentStore());
    await waitFor(() => follower.changes.some((change) => change.type === 'connected'), 'connected');
    expect(await follower.stop()).toBeUndefined();
    expect(follower.changes.at(-1)).toEqual({ type: 'closed' });
  });

  it('rejects with an http_error carrying 403 when the host refuses to let it read', async () => {
    const { served } = await start({ authorize: (_request, { action }) => action !== 'read' });
    const follower = follow(served, 'refused', createAgentStore());
    const error = await follower.done;
    expect(AgentTransportError.isInstance(error)).toBe(true);
    expect(error).toMatchObject({ code: 'http_error', status: 403 });
    expect((error as Error).message).toBe(
      `GET ${served.url}/sessions/refused/events answered 403 forbidden: Not allowed to read in this session`,
    );
    expect(follower.changes.map((change) => change.type)).toEqual(['connecting', 'reset', 'failed']);
  });

  it('rejects with invalid_cursor (unrecoverable) when the cursor is not one of the session', async () => {
    const { served } = await start();
    const follower = follow(served, 'bad-cursor', createAgentStore(), { after: 'not-a-cursor' });
    const error = await follower.done;
    expect(error).toMatchObject({ code: 'invalid_cursor', status: 422 });
    expect(follower.changes.map((change) => change.type)).toEqual(['connecting', 'unrecoverable']);
  });
});
