import { describe, expect, it } from 'vitest';
import { createAgentStore } from '../../machines/createAgentStore';
import { createAgentEventFactory } from '../../protocol/createAgentEventFactory';
import { AgentProtocolError } from '../../protocol/errors';
import type { AgentEvent } from '../../protocol/eventSchemas';
import { runEvents } from '../../tests/support/events';
import { AgentTransportError } from '../../transports/AgentTransportError';
import {
  type AgentSessionFollowChange,
  type AgentSessionFollowIssue,
  type AgentSessionFollowIssues,
  type FollowAgentSessionOptions,
  followAgentSession,
} from './followAgentSession';

const BASE = 'https://host.test/api/agent';
const EVENTS_URL = `${BASE}/sessions/s1/events`;

/** `run.started`, a user message, an answer in two deltas, `run.completed`: 8 events, cursors "1" to "8". */
function runOfEight(): AgentEvent[] {
  const events = runEvents('r1');
  return [
    events.create('run.started', {}),
    events.create('message.started', { messageId: 'prompt', role: 'user', content: 'Check the log' }),
    events.create('message.completed', { messageId: 'prompt' }),
    events.create('message.started', { messageId: 'answer', role: 'assistant' }),
    ...['The log ', 'is clean.'].map((delta) => events.create('message.delta', { messageId: 'answer', delta })),
    events.create('message.completed', { messageId: 'answer' }),
    events.create('run.completed', {}),
  ];
}

/** The frame of a log entry, as the host writes it. */
const frameOf = (event: AgentEvent, cursor: number) => `id: ${cursor}\ndata: ${JSON.stringify(event)}\n\n`;

/**
 * What the scripted host answers one request with: an event stream of these frames that
 * then ends (or stays open, silent, until the follower's idle timeout), or a JSON answer.
 */
type Answer = { frames: string[]; ending?: 'end' | 'stall' } | { status: number; body: unknown };

interface Recorded {
  url: string;
  lastEventId: string | null;
  authorization: string | null;
}

/** A `fetch` that answers each request with the next scripted answer, and records the requests. */
function scriptedFetch(answers: Answer[], onExhausted: () => void) {
  const requests: Recorded[] = [];
  const fetch = async (input: RequestInfo | URL, init?: RequestInit): Promise<Response> => {
    const headers = new Headers(init?.headers);
    requests.push({
      url: String(input),
      lastEventId: headers.get('last-event-id'),
      authorization: headers.get('authorization'),
    });
    const answer = answers.shift();
    if (answer === undefined) {
      onExhausted();
      throw new DOMException('The script ended', 'AbortError');
    }
    if ('status' in answer) {
      return new Response(JSON.stringify(answer.body), {
        status: answer.status,
        headers: { 'content-type': 'application/json' },
      });
    }
    const encoder = new TextEncoder();
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        for (const frame of answer.frames) controller.enqueue(encoder.encode(frame));
        if (answer.ending === 'stall') {
          init?.signal?.addEventListener('abort', () => controller.error(init.signal?.reason), { once: true });
        } else controller.close();
      },
    });
    return new Response(body, { status: 200, headers: { 'content-type': 'text/event-stream' } });
  };
  return { fetch, requests };
}

/**
 * Follows with the scripted answers (an idle timeout of 50 ms) until they run out, then
 * aborts; the outcome, the changes, the requests and the store's state.
 */
async function followScript(answers: Answer[], options: Partial<FollowAgentSessionOptions> = {}) {
  const controller = new AbortController();
  const { fetch, requests } = scriptedFetch(answers, () => controller.abort());
  const changes: AgentSessionFollowChange[] = [];
  const cursors: string[] = [];
  const store = options.store ?? createAgentStore();
  let error: unknown;
  try {
    await followAgentSession({
      baseURL: BASE,
      sessionId: 's1',
      fetch,
      store,
      signal: controller.signal,
      reconnect: { maxAttempts: 3, initialDelay: 1, maxDelay: 1 },
      idleTimeoutMs: 50,
      onConnection: (change) => changes.push(change),
      onCursor: (cursor) => cursors.push(cursor),
      ...options,
    });
  } catch (caught) {
    error = caught;
  }
  return { error, changes, types: changes.map((change) => change.type), requests, cursors, state: store.getSnapshot() };
}

/** What a client that read these events once holds. */
function replay(events: readonly AgentEvent[]) {
  const store = createAgentStore();
  store.batch(events);
  return store.getSnapshot();
}

describe('followAgentSession', () => {
  it('starts from the host state of an empty store, then follows after its cursor', async () => {
    const events = runOfEight();
    const head = replay(events.slice(0, 3));
    const result = await followScript([
      { status: 200, body: { state: head, cursor: '3' } },
      { frames: events.slice(3).map((event, index) => frameOf(event, index + 4)), ending: 'stall' },
    ]);
    expect(result.error).toBeUndefined();
    expect(result.requests.map(({ url, lastEventId }) => [url, lastEventId])).toEqual([
      [`${BASE}/sessions/s1/state`, null],
      [EVENTS_URL, '3'],
      [EVENTS_URL, '8'],
    ]);
    expect(result.state).toEqual(replay(events));
    expect(result.cursors).toEqual(['4', '5', '6', '7', '8']);
    expect(result.changes.slice(0, 3)).toEqual([
      { type: 'connecting', attempt: 0 },
      { type: 'reset', cursor: '3' },
      { type: 'connected' },
    ]);
  });

  it('follows a store that holds runs from the start of the log: events it has are absorbed', async () => {
    const events = runOfEight();
    const frames = events.map((event, index) => frameOf(event, index + 1));
    // One store applied the first five events itself; another was restored from a checkpoint of them.
    const live = createAgentStore();
    live.batch(events.slice(0, 5));
    const restored = createAgentStore();
    restored.reset(JSON.parse(JSON.stringify(replay(events.slice(0, 5)))));
    for (const store of [live, restored]) {
      const result = await followScript([{ frames, ending: 'stall' }], { store });
      expect(result.requests.map(({ url, lastEventId }) => [url, lastEventId])).toEqual([
        [EVENTS_URL, null],
        [EVENTS_URL, '8'],
      ]);
      expect(result.state.issues).toEqual([]);
      expect(result.state).toEqual(replay(events));
    }
  });

  it('reconnects after the cursor when the host drops it as a slow reader, or the stream ends or stalls', async () => {
    const events = runOfEight();
    const frames = events.map((event, index) => frameOf(event, index + 1));
    const result = await followScript(
      [
        { frames: [...frames.slice(0, 3), 'event: dropped\ndata: {"cursor":"3"}\n\n'] },
        { frames: frames.slice(3, 5) },
        { frames: frames.slice(5, 6), ending: 'stall' },
        { frames: frames.slice(6), ending: 'stall' },
      ],
      { after: '0' },
    );
    expect(result.requests.map((request) => request.lastEventId)).toEqual(['0', '3', '5', '6', '8']);
    expect(result.state).toEqual(replay(events));
    const errors = result.changes.flatMap((change) => (change.type === 'reconnecting' ? [change.error] : []));
    expect(errors.map((error) => (error as AgentTransportError).code)).toEqual([
      'abnormal_close',
      'abnormal_close',
      'timeout',
      'timeout',
    ]);
    expect(result.types.at(-1)).toBe('closed');
  });

  it('keeps following through failures: a connection that delivers an event starts the budget over', async () => {
    const unavailable = { status: 503, body: { error: { code: 'unavailable', message: 'Restarting' } } };
    const events = runOfEight();
    const result = await followScript(
      [
        unavailable,
        unavailable,
        { frames: [frameOf(events[0] as AgentEvent, 1)] },
        unavailable,
        { frames: [frameOf(events[1] as AgentEvent, 2)], ending: 'stall' },
      ],
      { after: '0', reconnect: { maxAttempts: 2, initialDelay: 1, maxDelay: 1 } },
    );
    expect(result.error).toBeUndefined();
    expect(result.cursors).toEqual(['1', '2']);
    expect(result.changes.flatMap((change) => (change.type === 'reconnecting' ? [change.attempt] : []))).toEqual([
      1, 2, 1, 2, 1,
    ]);
  });

  it('rejects with the last error once the budget of consecutive failures is spent', async () => {
    const unavailable = { status: 503, body: { error: { code: 'unavailable', message: 'Restarting' } } };
    const result = await followScript([unavailable, unavailable, unavailable], {
      after: '4',
      reconnect: { maxAttempts: 2, initialDelay: 1, maxDelay: 1 },
    });
    expect(result.error).toBeInstanceOf(AgentTransportError);
    expect(result.error).toMatchObject({
      code: 'http_error',
      status: 503,
      message: `GET ${EVENTS_URL} answered 503 unavailable: Restarting`,
    });
    expect(result.types).toEqual(['connecting', 'reconnecting', 'connecting', 'reconnecting', 'connecting', 'failed']);
  });

  it.each([
    [401, 'unauthorized'],
    [403, 'forbidden'],
    [404, 'not_found'],
  ])('rejects at once on %i, an http_error even when resuming after a cursor', async (status, code) => {
    const result = await followScript([{ status, body: { error: { code, message: 'No' } } }], { after: '4' });
    expect(result.error).toMatchObject({
      code: 'http_error',
      status,
      message: `GET ${EVENTS_URL} answered ${status} ${code}: No`,
    });
    expect(result.types).toEqual(['connecting', 'failed']);
  });

  it('rejects a 422 as invalid_cursor, unrecoverable', async () => {
    const result = await followScript(
      [{ status: 422, body: { error: { code: 'invalid_cursor', message: 'Unknown' } } }],
      {
        after: 'x',
      },
    );
    expect(AgentTransportError.isInstance(result.error)).toBe(true);
    expect(result.error).toMatchObject({ code: 'invalid_cursor', status: 422 });
    expect(result.types).toEqual(['connecting', 'unrecoverable']);
  });

  it("lists a frame that is not an AgentEvent in the store's issues, and goes on", async () => {
    const events = runOfEight();
    const result = await followScript(
      [{ frames: ['id: 1\ndata: not json\n\n', frameOf(events[0] as AgentEvent, 2)], ending: 'stall' }],
      { after: '0' },
    );
    expect(result.state.issues.map((issue) => issue.code)).toEqual(['invalid_event']);
    expect(result.state.runs.r1?.status).toBe('running');
    expect(result.cursors).toEqual(['1', '2']);
  });

  it('spends the budget against a host that accepts each stream and ends it before any event', async () => {
    const result = await followScript([{ frames: [] }, { frames: [': keep-alive\n\n'] }, { frames: [] }], {
      after: '4',
      reconnect: { maxAttempts: 2, initialDelay: 1, maxDelay: 1 },
    });
    expect(result.error).toMatchObject({ code: 'abnormal_close' });
    expect(result.types).toEqual([
      'connecting',
      'connected',
      'reconnecting',
      'connecting',
      'connected',
      'reconnecting',
      'connecting',
      'connected',
      'failed',
    ]);
    expect(result.changes.flatMap((change) => (change.type === 'reconnecting' ? [change.attempt] : []))).toEqual([
      1, 2,
    ]);
  });

  it("never applies another session's event: onIssue hears of it, the store does not", async () => {
    const events = runOfEight();
    const foreign = createAgentEventFactory({ sessionId: 's2', runId: 'x' }).create('run.started', {});
    const heard: Array<[AgentSessionFollowIssue, AgentSessionFollowIssues]> = [];
    const result = await followScript(
      [{ frames: [frameOf(foreign, 1), frameOf(events[0] as AgentEvent, 2)], ending: 'stall' }],
      { after: '0', onIssue: (issue, issues) => heard.push([issue, issues]) },
    );
    expect(Object.keys(result.state.runs)).toEqual(['r1']);
    expect(Object.keys(result.state.sessions)).toEqual(['s1']);
    expect(result.state.issues).toEqual([]);
    const issue = {
      code: 'session_mismatch',
      message: 'An event of session "s2" on the stream of session "s1"',
      cursor: '1',
    };
    expect(heard).toEqual([[issue, { latest: [issue], dropped: 0 }]]);
  });

  it('lets the store list at most maxIssues invalid frames; the follower keeps the latest maxIssues of the rest', async () => {
    const events = runOfEight();
    const junk = Array.from({ length: 5 }, (_, index) => `id: j${index}\ndata: junk ${index}\n\n`);
    const heard: AgentSessionFollowIssues[] = [];
    const result = await followScript([{ frames: [...junk, frameOf(events[0] as AgentEvent, 9)], ending: 'stall' }], {
      after: '0',
      maxIssues: 2,
      onIssue: (_issue, issues) => heard.push(issues),
    });
    expect(result.state.issues.map((issue) => issue.event)).toEqual(['junk 0', 'junk 1']);
    expect(heard.map(({ latest, dropped }) => [latest.map((issue) => issue.cursor), dropped])).toEqual([
      [['j2'], 0],
      [['j2', 'j3'], 0],
      [['j3', 'j4'], 1],
    ]);
    expect(heard.at(-1)?.latest[1]?.code).toBe('invalid_event');
    expect(result.state.runs.r1?.status).toBe('running');
  });

  it('rejects with the store error in strict mode', async () => {
    const result = await followScript([{ frames: ['id: 1\ndata: {"type":"nope"}\n\n'], ending: 'stall' }], {
      after: '0',
      store: createAgentStore({ protocolMode: 'strict' }),
    });
    expect(AgentProtocolError.isInstance(result.error)).toBe(true);
    expect(result.types).toEqual(['connecting', 'connected', 'failed']);
    expect(result.cursors).toEqual([]);
  });

  it('calls a headers function for every request', async () => {
    let token = 0;
    const result = await followScript([{ frames: [] }, { frames: [], ending: 'stall' }], {
      after: '0',
      headers: () => ({ authorization: `Bearer ${++token}` }),
    });
    expect(result.requests.map((request) => request.authorization)).toEqual(['Bearer 1', 'Bearer 2', 'Bearer 3']);
  });
});
