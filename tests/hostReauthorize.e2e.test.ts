// Authorization on an open event stream: a reader whose access is revoked gets no new run.
// The host asks `authorize` again before the frames of each new run and at least every
// `reauthorizeMs`, and ends the stream with `event: forbidden` when it refuses.
import { get, type IncomingMessage } from 'node:http';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createAgentStore } from '../machines/createAgentStore';
import { followAgentSession } from '../providers/agent-event/followAgentSession';
import { createLocalAgentProvider } from '../providers/local/createLocalAgentProvider';
import { type AgentHostAccess, createAgentHost } from '../server/createAgentHost';
import { AgentTransportError } from '../transports/AgentTransportError';
import { type ReadFrame, readFrames, serveHost } from './support/hostClient';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  vi.useRealTimers();
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A host whose `authorize` answers what `access.allowed` says, counting the reads it is asked about. */
async function start(options: { reauthorizeMs?: number; heartbeatMs?: number } = {}) {
  const access = { allowed: true, reads: 0 };
  const host = createAgentHost({
    providers: {
      answer: createLocalAgentProvider({ script: { steps: [{ type: 'text', deltas: ['Hello.'] }] } }),
    },
    authorize: (_request, { action }: AgentHostAccess) => {
      if (action === 'read') access.reads += 1;
      return access.allowed;
    },
    now: () => Date.now(),
    onError: () => {},
    ...options,
  });
  const served = await serveHost(host.fetch);
  cleanups.push(async () => {
    await served.close();
    await host.close();
  });
  return { host, served, access };
}

describe('an open event stream', () => {
  it('asks authorize again before a new run, and ends with event: forbidden when refused', async () => {
    const { host, served, access } = await start();
    const first = await host.startRun('s1', { provider: 'answer', input: { prompt: 'Hi' }, runId: 'r1' });
    expect(first.runId).toBe('r1');
    const controller = new AbortController();
    cleanups.push(async () => controller.abort());
    const response = await fetch(`${served.url}/sessions/s1/events`, { signal: controller.signal });
    expect(response.status).toBe(200);
    const reading = readFrames(response);
    for (;;) {
      const { value, done } = await reading.next();
      if (done || value.data.includes('"run.completed"')) break;
    }
    expect(access.reads).toBe(1);

    access.allowed = false;
    await host.startRun('s1', { provider: 'answer', input: { prompt: 'Again' }, runId: 'r2' });
    const after: ReadFrame[] = [];
    for await (const frame of reading) after.push(frame);
    expect(after).toEqual([
      {
        id: undefined,
        event: 'forbidden',
        data: JSON.stringify({ code: 'forbidden', message: 'Not allowed to read in this session' }),
      },
    ]);
    expect(access.reads).toBe(2);
    // The revoked reader got nothing of r2, which ran to its end.
    const { state } = await host.getState('s1');
    expect(state.runs.r2?.status).toBe('completed');
  });

  it('keeps streaming new runs while authorize still says yes', async () => {
    const { host, served, access } = await start();
    const controller = new AbortController();
    cleanups.push(async () => controller.abort());
    const response = await fetch(`${served.url}/sessions/s2/events`, { signal: controller.signal });
    await host.startRun('s2', { provider: 'answer', input: { prompt: 'Hi' }, runId: 'a' });
    const completed: string[] = [];
    const frames = readFrames(response);
    for await (const frame of frames) {
      if (frame.data.includes('"run.completed"')) {
        completed.push(JSON.parse(frame.data).runId);
        if (completed.length === 1)
          await host.startRun('s2', { provider: 'answer', input: { prompt: 'Hi' }, runId: 'b' });
        else break;
      }
    }
    expect(completed).toEqual(['a', 'b']);
    // Once when the stream opened, once before each run.
    expect(access.reads).toBe(3);
  });

  it('asks again every reauthorizeMs on a quiet stream', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'Date'] });
    const { served, access } = await start({ reauthorizeMs: 60_000, heartbeatMs: 15_000 });
    const response = await new Promise<IncomingMessage>((resolve) => get(`${served.url}/sessions/s3/events`, resolve));
    expect(response.statusCode).toBe(200);
    let body = '';
    const ended = new Promise<void>((resolve) => response.on('end', resolve));
    response.setEncoding('utf8').on('data', (text: string) => {
      body += text;
    });
    /** Moves the clock on, letting the socket's I/O run between steps. */
    const advance = async (ms: number) => {
      for (let step = 0; step < ms; step += 1_000) {
        await vi.advanceTimersByTimeAsync(1_000);
        await new Promise((resolve) => setImmediate(resolve));
      }
    };
    await advance(59_000);
    expect(access.reads).toBe(1);
    await advance(2_000);
    expect(access.reads).toBe(2);
    expect(body).not.toContain('forbidden');

    access.allowed = false;
    await advance(61_000);
    expect(access.reads).toBe(3);
    await ended;
    expect(body).toContain('event: forbidden\n');
  });

  it('reauthorizeMs 0 asks only at new runs, never in a loop', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'Date'] });
    const { served, access } = await start({ reauthorizeMs: 0, heartbeatMs: 15_000 });
    const response = await new Promise<IncomingMessage>((resolve) => get(`${served.url}/sessions/s5/events`, resolve));
    let keepAlives = 0;
    response.setEncoding('utf8').on('data', (text: string) => {
      keepAlives += text.split(': keep-alive').length - 1;
    });
    for (let step = 0; step < 60; step += 1) {
      await vi.advanceTimersByTimeAsync(1_000);
      await new Promise((resolve) => setImmediate(resolve));
    }
    expect(access.reads).toBe(1);
    expect(keepAlives).toBe(4);
    response.destroy();
  });

  it("ends followAgentSession with the host's 403 when a new run is refused, without reconnecting", async () => {
    const { host, served, access } = await start();
    const store = createAgentStore();
    const controller = new AbortController();
    cleanups.push(async () => controller.abort());
    const requests: string[] = [];
    const following = followAgentSession({
      baseURL: served.url,
      sessionId: 's4',
      store,
      signal: controller.signal,
      fetch: (input, init) => {
        requests.push(new URL(String(input)).pathname);
        return fetch(input, init);
      },
      onConnection: (change) => {
        if (change.type === 'connected') {
          access.allowed = false;
          void host.startRun('s4', { provider: 'answer', input: { prompt: 'Hi' }, runId: 'late' });
        }
      },
    });
    const error = await following.then(
      () => undefined,
      (caught: unknown) => caught,
    );
    expect(AgentTransportError.isInstance(error) && [error.code, error.status]).toEqual(['http_error', 403]);
    expect((error as Error).message).toBe(
      `GET ${served.url}/sessions/s4/events answered 403 forbidden: Not allowed to read in this session`,
    );
    expect(requests).toEqual(['/sessions/s4/state', '/sessions/s4/events']);
    expect(store.getSnapshot().runs.late).toBeUndefined();
  });
});
