import { afterEach, describe, expect, it, vi } from 'vitest';
import type { AgentEvent } from '../protocol/eventSchemas';
import { type AgentConnectionChange, backoffDelay, DEFAULT_RECONNECT, reconnectPolicy } from '../providers/reconnect';
import {
  answerRun,
  eventLogProvider,
  eventLogServers,
  frame,
  SSE_HEADERS,
  serveFrames,
} from './support/eventLogServer';
import { describeChanges, runLog } from './support/runLog';

const server = eventLogServers();

const run = answerRun();
const slice = (from: number, to: number) => run.slice(from - 1, to).map((event) => frame(event));
const unavailable = (response: import('node:http').ServerResponse) => {
  response.writeHead(503, { 'content-type': 'application/json' });
  response.end('{"error":"overloaded"}');
};
const typesOf = (events: readonly AgentEvent[]) => events.map((event) => event.type);
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const IDLE_MS = 200;

/**
 * The idle-timeout cases run the transport's timers on a fake clock: the idle timer fires when
 * the test has made the server silent, never because a loaded machine paused between two
 * frames; `passBackoff` lets each backoff wait pass as soon as it starts. Sockets stay real.
 */
function useFakeClock(): void {
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
}
afterEach(() => {
  vi.useRealTimers();
});
/** Fires the idle timer of a client waiting on a silent server, once the client's pending I/O has run. */
const fireIdleTimer = () => setImmediate(() => vi.advanceTimersByTime(IDLE_MS));
const passBackoff = (change: AgentConnectionChange) => {
  if (change.type === 'reconnecting') setImmediate(() => vi.advanceTimersByTime(change.delayMs));
};
/** All of `frames` in one write, so nothing on the server waits on the fake clock. */
const writeAll = (response: import('node:http').ServerResponse, frames: readonly string[]) => {
  response.writeHead(200, SSE_HEADERS);
  response.write(frames.join(''));
};

describe('reconnecting after a retryable error', () => {
  it('opens again when the server stalls before sending anything (idle timeout)', async () => {
    useFakeClock();
    const log = await server(
      (response) => {
        response.writeHead(200, SSE_HEADERS);
        response.flushHeaders();
        fireIdleTimer();
      },
      (response) => {
        writeAll(response, slice(1, 10));
        response.end();
      },
    );
    const outcome = await runLog(eventLogProvider(log.url, { idleTimeoutMs: IDLE_MS }), {
      onConnection: passBackoff,
    });

    expect(outcome.result?.status).toBe('completed');
    expect(outcome.events).toEqual(run);
    // Nothing had arrived: the request is sent again, with no cursor.
    expect(log.requests.map((request) => request.headers['last-event-id'])).toEqual([undefined, undefined]);
    expect(describeChanges(outcome.changes)).toEqual([
      'connecting 0',
      'reconnecting 1 2',
      'connecting 1',
      'connected',
      'closed',
    ]);
    expect(outcome.changes[1]).toMatchObject({ error: { name: 'AgentTransportError', code: 'timeout' } });
  });

  it('resumes from the last cursor when the server stalls mid-stream', async () => {
    useFakeClock();
    const log = await server(
      (response) => writeAll(response, slice(1, 5)),
      (response) => {
        writeAll(response, slice(6, 10));
        response.end();
      },
    );
    const outcome = await runLog(eventLogProvider(log.url, { idleTimeoutMs: IDLE_MS }), {
      // The fifth frame is the last before the stall: from there the server is silent.
      onCursor: (cursor) => {
        if (cursor === '5') fireIdleTimer();
      },
      onConnection: passBackoff,
    });

    expect(outcome.result?.status).toBe('completed');
    expect(outcome.events).toEqual(run);
    expect(log.requests[1]?.headers['last-event-id']).toBe('5');
    expect(outcome.state.messages['r1:answer']).toMatchObject({ content: 'The log has three errors.' });
    expect(outcome.changes[2]).toMatchObject({ type: 'reconnecting', error: { code: 'timeout' } });
  });

  it('spends the budget with jittered backoff, then fails the run exactly once', async () => {
    const log = await server((response) => serveFrames(response, slice(1, 5), 'drop'), unavailable);
    const provider = eventLogProvider(log.url);
    const transformError = vi.spyOn(provider, 'transformError');
    const jitter = [0.99, 0.5, 0.999];
    const waits: number[] = [];
    const outcome = await runLog(provider, {
      reconnect: { maxAttempts: 3, initialDelay: 8, maxDelay: 20 },
      random: () => jitter[waits.length] ?? 0,
      sleep: async (ms) => {
        waits.push(ms);
      },
    });

    expect(outcome.result).toMatchObject({ status: 'failed', error: { code: 'http_error', status: 503 } });
    // The first request, then exactly maxAttempts resumes.
    expect(log.requests.map((request) => request.headers['last-event-id'])).toEqual([undefined, '5', '5', '5']);
    expect(waits).toEqual([7, 8, 19]);
    waits.forEach((wait, n) => {
      expect(wait).toBeGreaterThanOrEqual(0);
      expect(wait).toBeLessThanOrEqual(Math.min(20, 8 * 2 ** n));
    });
    expect(transformError).toHaveBeenCalledTimes(1);
    expect(transformError.mock.calls[0]?.[0]).toMatchObject({ code: 'http_error', status: 503 });
    expect(typesOf(outcome.events).filter((type) => type === 'run.failed')).toHaveLength(1);
    expect(typesOf(outcome.events).slice(-2)).toEqual(['message.failed', 'run.failed']);
    expect(outcome.state.runs.r1?.error).toMatchObject({ code: 'http_error' });
    expect(describeChanges(outcome.changes)).toEqual([
      'connecting 0',
      'connected',
      'reconnecting 1 7',
      'connecting 1',
      'reconnecting 2 8',
      'connecting 2',
      'reconnecting 3 19',
      'connecting 3',
      'failed',
    ]);
    expect(outcome.changes.at(-1)).toEqual({ type: 'failed', error: outcome.result?.error });
  });

  it('starts the budget over once a connection delivers', async () => {
    const log = await server(
      (response) => serveFrames(response, slice(1, 3), 'drop'),
      (response) => serveFrames(response, slice(4, 6), 'drop'),
      (response) => serveFrames(response, slice(7, 10), 'end'),
    );
    const outcome = await runLog(eventLogProvider(log.url), { reconnect: { maxAttempts: 1, initialDelay: 5 } });
    expect(outcome.result?.status).toBe('completed');
    expect(outcome.events).toEqual(run);
    expect(log.requests.map((request) => request.headers['last-event-id'])).toEqual([undefined, '3', '6']);
  });

  it('waits with full jitter under an exponential bound', () => {
    for (let attempt = 1; attempt <= 8; attempt += 1) {
      const bound = Math.min(DEFAULT_RECONNECT.maxDelay, DEFAULT_RECONNECT.initialDelay * 2 ** (attempt - 1));
      for (const random of [0, 0.25, 0.5, 0.999999]) {
        const delay = backoffDelay(attempt, DEFAULT_RECONNECT, () => random);
        expect(Number.isInteger(delay)).toBe(true);
        expect(delay).toBeGreaterThanOrEqual(0);
        expect(delay).toBeLessThanOrEqual(bound);
      }
    }
    expect(backoffDelay(1, DEFAULT_RECONNECT, () => 0.5)).toBe(250);
    expect(backoffDelay(8, DEFAULT_RECONNECT, () => 0.5)).toBe(2500);
  });

  it("takes the seed's option names, in milliseconds: maxAttempts, initialDelay, maxDelay (seed 003 §11.1)", () => {
    expect(DEFAULT_RECONNECT).toEqual({ maxAttempts: 3, initialDelay: 500, maxDelay: 5000 });
    const policy = reconnectPolicy({ initialDelay: 100, maxDelay: 300 });
    expect(policy).toEqual({ maxAttempts: 3, initialDelay: 100, maxDelay: 300 });
    expect([1, 2, 3, 4].map((attempt) => backoffDelay(attempt, policy ?? DEFAULT_RECONNECT, () => 0.5))).toEqual([
      50, 100, 150, 150,
    ]);
    expect(reconnectPolicy(false)).toBeUndefined();
  });
});

describe('never reconnecting', () => {
  it('fails at once with reconnect: false', async () => {
    const log = await server((response) => serveFrames(response, slice(1, 5), 'drop'), unavailable);
    const outcome = await runLog(eventLogProvider(log.url), { reconnect: false });
    expect(outcome.result).toMatchObject({ status: 'failed', error: { code: 'network_error' } });
    expect(log.requests).toHaveLength(1);
    expect(typesOf(outcome.events).slice(-2)).toEqual(['message.failed', 'run.failed']);
    expect(describeChanges(outcome.changes)).toEqual(['connecting 0', 'connected', 'failed']);
  });

  it('cancels the run at once when aborted during a backoff wait, and sends nothing more', async () => {
    const log = await server((response) => serveFrames(response, slice(1, 5), 'drop'), unavailable);
    const controller = new AbortController();
    const started = Date.now();
    const outcome = await runLog(eventLogProvider(log.url), {
      signal: controller.signal,
      reconnect: { initialDelay: 60_000, maxDelay: 60_000 },
      random: () => 0.99,
      onConnection: (change) => {
        if (change.type === 'reconnecting') setTimeout(() => controller.abort(), 10);
      },
    });
    // Not the 59.4 s backoff: half of it is a bound no machine's load reaches.
    expect(Date.now() - started).toBeLessThan(30_000);
    expect(outcome.result).toEqual({ runId: 'r1', status: 'cancelled' });
    expect(typesOf(outcome.events).slice(-2)).toEqual(['message.cancelled', 'run.cancelled']);
    expect(describeChanges(outcome.changes)).toEqual(['connecting 0', 'connected', 'reconnecting 1 59400', 'closed']);
    await pause(30);
    expect(log.requests).toHaveLength(1);
  });

  it('does not reconnect after an error the provider classifies as not retryable, or without a classifier', async () => {
    for (const classifying of [true, false]) {
      const log = await server((response) => serveFrames(response, slice(1, 5), 'drop'));
      const { classifyError: _retryable, ...unclassified } = eventLogProvider(log.url);
      const provider = classifying ? { ...unclassified, classifyError: () => ({ retryable: false }) } : unclassified;
      const outcome = await runLog(provider);
      expect(outcome.result).toMatchObject({ status: 'failed', error: { code: 'network_error' } });
      expect(log.requests).toHaveLength(1);
      expect(describeChanges(outcome.changes).at(-1)).toBe('failed');
    }
  });

  it('does not reconnect a stream that delivered chunks without a cursor: it is unrecoverable, no run.failed made up', async () => {
    const log = await server((response) =>
      serveFrames(
        response,
        run.slice(0, 5).map((event) => frame(event, null)),
        'drop',
      ),
    );
    const outcome = await runLog(eventLogProvider(log.url));
    expect(outcome.error).toMatchObject({ name: 'AgentTransportError', code: 'network_error' });
    expect(describeChanges(outcome.changes).at(-1)).toBe('unrecoverable');
    expect(outcome.events).toEqual(run.slice(0, 5));
    expect(outcome.state.runs.r1?.status).toBe('running');
    expect(log.requests).toHaveLength(1);
  });

  it('rethrows what onEvent throws, unchanged, and does not reconnect', async () => {
    const log = await server(
      (response) => serveFrames(response, slice(1, 5), 'drop'),
      (response) => serveFrames(response, slice(6, 10), 'end'),
    );
    const failure = new Error('render failed');
    const provider = eventLogProvider(log.url);
    const classifyError = vi.spyOn(provider, 'classifyError');
    const outcome = await runLog(provider, {
      onEvent: (event) => {
        if (event.sequence === 3) throw failure;
      },
    });
    expect(outcome.error).toBe(failure);
    expect(classifyError).not.toHaveBeenCalled();
    expect(describeChanges(outcome.changes)).toEqual(['connecting 0', 'connected', 'closed']);
    await pause(30);
    expect(log.requests).toHaveLength(1);
  });

  it('rethrows what onConnection throws, unchanged', async () => {
    const log = await server((response) => serveFrames(response, slice(1, 5), 'drop'));
    const failure = new Error('status bar gone');
    const outcome = await runLog(eventLogProvider(log.url), {
      onConnection: (change) => {
        if (change.type === 'reconnecting') throw failure;
      },
    });
    expect(outcome.error).toBe(failure);
    expect(describeChanges(outcome.changes)).toEqual(['connecting 0', 'connected', 'reconnecting 1 2']);
    expect(log.requests).toHaveLength(1);
  });

  it('never reconnects after an abort the caller made while streaming', async () => {
    const log = await server((response) => serveFrames(response, slice(1, 5), 'stall'));
    const controller = new AbortController();
    const outcome = await runLog(eventLogProvider(log.url), {
      signal: controller.signal,
      onEvent: (event) => {
        if (event.sequence === 5) setTimeout(() => controller.abort(), 5);
      },
    });
    expect(outcome.result?.status).toBe('cancelled');
    expect(describeChanges(outcome.changes)).toEqual(['connecting 0', 'connected', 'closed']);
    expect(log.requests).toHaveLength(1);
  });
});
