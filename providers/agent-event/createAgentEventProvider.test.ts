import { afterEach, describe, expect, it } from 'vitest';
import type { AgentState } from '../../machines/agentState';
import { createAgentStore } from '../../machines/createAgentStore';
import { selectMessages } from '../../machines/selectors';
import { AGENT_COMMAND_TYPES } from '../../protocol/commandSchemas';
import { createAgentEventFactory } from '../../protocol/createAgentEventFactory';
import { AGENT_EVENT_TYPES, type AgentEvent } from '../../protocol/eventSchemas';
import {
  answerRunScript,
  type FakeAgentHost,
  type FakeAgentHostOptions,
  startFakeAgentHost,
} from '../../tests/support/fakeAgentHost';
import { AgentTransportError } from '../../transports/AgentTransportError';
import type { SSEChunk } from '../../transports/createSSETransport';
import { AgentProviderError } from '../AgentProviderError';
import { AGENT_EVENT_TYPE_GROUPS } from '../eventTypeGroups';
import type { AgentConnectionChange } from '../reconnect';
import { type RunAgentProviderOptions, runAgentProvider } from '../runAgentProvider';
import { validateAgentProviderEvents } from '../testing/validateAgentProviderEvents';
import {
  type AgentEventProviderContext,
  type AgentEventProviderOptions,
  type AgentHostRunInput,
  createAgentEventProvider,
} from './createAgentEventProvider';
import type { AgentHostRunRequest } from './createAgentHostTransport';

const hosts: FakeAgentHost[] = [];
afterEach(async () => {
  await Promise.all(hosts.splice(0).map((host) => host.close()));
});

async function startHost(options?: FakeAgentHostOptions): Promise<FakeAgentHost> {
  const host = await startFakeAgentHost(options);
  hosts.push(host);
  return host;
}

const INPUT: AgentHostRunInput = { provider: 'openai', input: { prompt: 'Summarize the log' } };

type Provider = ReturnType<typeof createAgentEventProvider>;
type RunOptions = Partial<
  RunAgentProviderOptions<AgentHostRunInput, AgentHostRunRequest, SSEChunk, AgentEventProviderContext>
>;

/** Runs one request into a fresh store; the run's outcome (or what it threw), its events, AgentState and connection. */
async function run(provider: Provider, options: RunOptions = {}, store = createAgentStore()) {
  const events: AgentEvent[] = [];
  const connection: AgentConnectionChange[] = [];
  let result: Awaited<ReturnType<typeof runAgentProvider>> | undefined;
  let error: unknown;
  try {
    result = await runAgentProvider({
      provider,
      input: INPUT,
      sessionId: 's1',
      runId: 'r1',
      reconnect: { maxAttempts: 3, initialDelay: 1, maxDelay: 1 },
      onConnection: (change) => connection.push(change),
      ...options,
      onEvent: (event, admission) => {
        events.push(event);
        store.dispatch(event, admission);
      },
    });
  } catch (caught) {
    error = caught;
  }
  return { result, error, events, state: store.getSnapshot(), connection: connection.map((change) => change.type) };
}

function provider(host: FakeAgentHost, options: Partial<AgentEventProviderOptions> = {}): Provider {
  return createAgentEventProvider({ baseURL: host.baseURL, sessionId: 's1', ...options });
}

/** The text of each message of the session, in order. */
function transcript(state: AgentState) {
  return selectMessages(state).map(({ message }) => [message.role, message.content]);
}

const ANSWERED = [
  ['user', 'Summarize the log'],
  ['assistant', 'Three errors.'],
];

describe('createAgentEventProvider', () => {
  it('declares the agent-event protocol, every event type, SSE, resume and the four commands', async () => {
    const host = await startHost();
    const { id, protocol, capabilities, transport } = provider(host);
    expect({ id, protocol, kind: transport.kind }).toEqual({
      id: 'agent-event',
      protocol: { name: 'agent-event', version: '0.1' },
      kind: 'sse',
    });
    // Every type of the protocol: the families', and `session.started`, which no family holds.
    expect(capabilities.eventTypes).toEqual(AGENT_EVENT_TYPES);
    expect(capabilities.eventTypes).toEqual(expect.arrayContaining(Object.values(AGENT_EVENT_TYPE_GROUPS).flat()));
    expect(capabilities).toMatchObject({ transports: ['sse'], resumable: true, commands: AGENT_COMMAND_TYPES });
    expect(provider(host, { commands: ['run.cancel'] }).capabilities.commands).toEqual(['run.cancel']);
  });

  it('runs a whole run: POST /runs, then the run’s events from the log, into AgentState', async () => {
    const host = await startHost();
    const agent = provider(host);
    const { result, events, state, connection } = await run(agent);

    expect(result).toEqual({ runId: 'r1', status: 'completed' });
    expect(state.runs.r1).toMatchObject({ status: 'completed', input: INPUT.input, sessionId: 's1' });
    expect(transcript(state)).toEqual(ANSWERED);
    expect(state.lastSequenceByRun.r1).toBe(9);
    expect(state.issues).toEqual([]);
    expect(events.map((event) => event.eventId)).toEqual(host.log.map((entry) => entry.event.eventId));
    expect(validateAgentProviderEvents(agent.capabilities, events)).toEqual([]);
    expect(connection).toEqual(['connecting', 'connected', 'closed']);

    const [post] = host.requestsOf('POST /runs');
    expect(JSON.parse(post?.body ?? '')).toEqual({ ...INPUT, runId: 'r1' });
    expect(post?.headers['content-type']).toBe('application/json');
    // The session's log was empty: the answer's cursor is null, and the run is read from its start.
    expect(host.requestsOf('GET /events').map((request) => request.url)).toEqual([
      '/api/agent/sessions/s1/events?runId=r1',
    ]);
  });

  it('reads a later run after the cursor the POST answered with, not the session’s earlier events', async () => {
    const host = await startHost();
    const agent = provider(host);
    const store = createAgentStore();
    await run(agent, {}, store);
    const lastOfFirst = host.log.at(-1)?.cursor ?? '';
    const second = await run(agent, { runId: 'r2' }, store);

    expect(second.result).toEqual({ runId: 'r2', status: 'completed' });
    expect(second.events.every((event) => event.runId === 'r2')).toBe(true);
    expect(host.requestsOf('GET /events')[1]?.url).toBe(
      `/api/agent/sessions/s1/events?runId=r2&after=${encodeURIComponent(lastOfFirst)}`,
    );
    expect(transcript(second.state)).toEqual([...ANSWERED, ...ANSWERED]);
  });

  it('joins a base URL with a trailing slash, or given as a URL, and encodes the session id', async () => {
    const sessionId = 'team a/chat?1';
    const host = await startHost({ sessionId });
    for (const baseURL of [`${host.baseURL}/`, new URL(host.baseURL)]) {
      const agent = createAgentEventProvider({ baseURL, sessionId });
      const { result } = await run(agent, { sessionId, runId: `r-${String(typeof baseURL)}` });
      expect(result?.status).toBe('completed');
    }
    expect(host.requests.map((request) => request.url.split('?')[0])).toEqual(
      Array(2)
        .fill(['/api/agent/sessions/team%20a%2Fchat%3F1/runs', '/api/agent/sessions/team%20a%2Fchat%3F1/events'])
        .flat(),
    );
  });

  it('calls a headers function for every request and sends what it returns', async () => {
    const host = await startHost();
    let calls = 0;
    const agent = provider(host, {
      headers: async () => {
        calls += 1;
        return { authorization: `Bearer token-${calls}` };
      },
    });
    host.answerNext('GET /events', { type: 'cut', frames: 2, ending: 'end' });
    const { result } = await run(agent);

    expect(result?.status).toBe('completed');
    expect(calls).toBe(3);
    expect(host.requests.map((request) => [request.method, request.headers.authorization])).toEqual([
      ['POST', 'Bearer token-1'],
      ['GET', 'Bearer token-2'],
      ['GET', 'Bearer token-3'],
    ]);
  });

  it('refuses a run of another session before any request, saying how to make them match', async () => {
    const host = await startHost();
    const store = createAgentStore();
    const { error, state } = await run(provider(host), { sessionId: 'other' }, store);

    expect(AgentProviderError.isInstance(error)).toBe(true);
    expect(error).toMatchObject({ code: 'invalid_event', providerId: 'agent-event' });
    expect((error as Error).message).toContain('is for session "s1" but was given a run of session "other"');
    expect((error as Error).message).toContain('createXChatRuntime({ sessionId })');
    expect(host.requests).toEqual([]);
    expect(state.runs).toEqual({});
  });

  it('forwards the continuation in the POST body', async () => {
    const host = await startHost();
    const agent = provider(host);
    const store = createAgentStore();
    await run(agent, { runId: 'r0' }, store);
    const continuation = {
      runId: 'r0',
      approvals: [{ approvalId: 'a1', status: 'resolved' as const, decision: 'approved' as const }],
    };
    const { result, state } = await run(agent, { continuation }, store);

    expect(result?.status).toBe('completed');
    expect(JSON.parse(host.requestsOf('POST /runs')[1]?.body ?? '')).toEqual({ ...INPUT, runId: 'r1', continuation });
    expect(state.runs.r1?.continuesRunId).toBe('r0');
  });
});

describe('createAgentEventProvider: broken streams', () => {
  it.each([
    ['ends cleanly before the terminal event', 'end'],
    ['has its socket destroyed', 'destroy'],
    ['is dropped by the host as a slow reader', 'dropped'],
  ] as const)('resumes from the last cursor when the stream %s: nothing lost, nothing twice', async (_name, ending) => {
    const host = await startHost();
    host.answerNext('GET /events', { type: 'cut', frames: 4, ending });
    const { result, events, state, connection } = await run(provider(host));

    expect(result?.status).toBe('completed');
    expect(events.map((event) => event.sequence)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(transcript(state)).toEqual(ANSWERED);
    expect(state.issues).toEqual([]);
    expect(connection).toEqual(['connecting', 'connected', 'reconnecting', 'connecting', 'connected', 'closed']);
    const [first, second] = host.requestsOf('GET /events');
    expect(first?.headers['last-event-id']).toBeUndefined();
    expect(second?.url).toBe('/api/agent/sessions/s1/events?runId=r1');
    expect(second?.headers['last-event-id']).toBe(host.log[3]?.cursor);
    // A resume reads; it never starts the run again.
    expect(host.requestsOf('POST /runs')).toHaveLength(1);
  });

  it('classifies the premature end and the dropped reader as a retryable abnormal_close', async () => {
    const host = await startHost();
    host.answerNext('GET /events', { type: 'cut', frames: 2, ending: 'dropped' });
    const errors: unknown[] = [];
    await run(provider(host), {
      onConnection: (change) => {
        if (change.type === 'reconnecting') errors.push(change.error);
      },
    });
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatchObject({ code: 'abnormal_close' });
    expect((errors[0] as Error).message).toBe(
      `The host dropped the events of run "r1" (a slow reader) after cursor "${host.log[1]?.cursor}"`,
    );
  });

  it('resumes a stream that went silent for idleTimeoutMs', async () => {
    const host = await startHost();
    host.answerNext('GET /events', { type: 'cut', frames: 3, ending: 'stall' });
    const started = Date.now();
    const { result, events } = await run(provider(host, { idleTimeoutMs: 150 }));

    expect(result?.status).toBe('completed');
    expect(events).toHaveLength(9);
    // Resumed on the 150 ms timeout, not the 60 s default: half of that default is a bound no
    // machine's load reaches, where a few hundred ms would be.
    expect(Date.now() - started).toBeLessThan(30_000);
  });

  it.each([
    [410, 'cursor_expired'],
    [422, 'invalid_cursor'],
  ])('leaves the run unrecoverable when the host answers %i %s to the resume', async (status, code) => {
    const host = await startHost();
    host.answerNext('GET /events', { type: 'cut', frames: 3, ending: 'end' });
    host.answerNext('GET /events', { type: 'refuse', status, code });
    const { error, state, connection } = await run(provider(host));

    expect(AgentProviderError.isInstance(error)).toBe(true);
    expect(error).toMatchObject({ code: 'invalid_cursor' });
    const cause = (error as Error).cause;
    expect(AgentTransportError.isInstance(cause)).toBe(true);
    expect(cause).toMatchObject({ code: 'invalid_cursor', status });
    // Nothing is made up: the run is as its last event left it.
    expect(state.runs.r1?.status).toBe('running');
    expect(state.lastSequenceByRun.r1).toBe(3);
    expect(connection.at(-1)).toBe('unrecoverable');
  });
});

describe('createAgentEventProvider: refusals and invalid events', () => {
  it('fails the run with a typed error when a frame is not JSON', async () => {
    const host = await startHost();
    const [started] = answerRunScript(createAgentEventFactory({ sessionId: 's1', runId: 'r1' }), {
      ...INPUT,
      runId: 'r1',
    });
    host.answerNext('GET /events', {
      type: 'raw',
      frames: [`id: c1\ndata: ${JSON.stringify(started)}\n\n`, 'id: c2\ndata: {"type": "message.delta",\n\n'],
    });
    const { error, state, connection } = await run(provider(host));

    expect(AgentProviderError.isInstance(error)).toBe(true);
    expect(error).toMatchObject({
      code: 'invalid_event',
      reason: 'the host sent frame c2, which is not JSON',
      event: '{"type": "message.delta",',
    });
    expect(state.runs.r1).toMatchObject({ status: 'failed', error: { code: 'provider_error' } });
    expect(connection.at(-1)).toBe('failed');
  });

  it('fails the run with the 403 of a last event: forbidden frame, without resuming', async () => {
    const host = await startHost();
    const [started] = answerRunScript(createAgentEventFactory({ sessionId: 's1', runId: 'r1' }), {
      ...INPUT,
      runId: 'r1',
    });
    host.answerNext('GET /events', {
      type: 'raw',
      frames: [
        `id: c1\ndata: ${JSON.stringify(started)}\n\n`,
        'event: forbidden\ndata: {"code":"forbidden","message":"Not allowed to read in this session"}\n\n',
      ],
    });
    const { result, state } = await run(provider(host));

    expect(result?.status).toBe('failed');
    expect(AgentTransportError.isInstance(result?.error) && result.error.status).toBe(403);
    expect(result?.error).toMatchObject({
      message: `GET ${host.baseURL}/sessions/s1/events answered 403 forbidden: Not allowed to read in this session`,
    });
    expect(host.requestsOf('GET /events')).toHaveLength(1);
    expect(state.runs.r1).toMatchObject({ status: 'failed', error: { code: 'http_error' } });
  });

  it('fails the run with a typed error when a frame is JSON but not a valid AgentEvent', async () => {
    // A run whose first delta (sequence 5) is a number.
    const host = await startHost({
      runScript: (events, request) => {
        const script = answerRunScript(events, request);
        return script.map((event) =>
          event.sequence === 5
            ? ({ ...event, payload: { ...event.payload, delta: 42 } } as unknown as AgentEvent)
            : event,
        );
      },
    });
    const { error, events, state } = await run(provider(host));

    expect(error).toMatchObject({ code: 'invalid_event' });
    expect((error as AgentProviderError).reason).toMatch(
      /^the host sent frame 1700000000000-5, which is not a valid AgentEvent: payload\.delta/,
    );
    // The refused delta never reaches the store; the runner closes what was open.
    expect(events.map((event) => [event.sequence, event.type])).toEqual([
      [1, 'run.started'],
      [2, 'message.started'],
      [3, 'message.completed'],
      [4, 'message.started'],
      [5, 'message.failed'],
      [6, 'run.failed'],
    ]);
    expect(state.runs.r1?.status).toBe('failed');
  });

  it('fails the run at once on a 409 from POST /runs, with the host’s code and message', async () => {
    const host = await startHost();
    host.answerNext('POST /runs', { type: 'refuse', status: 409, code: 'run_exists', message: 'The run "r1" exists' });
    const { result, connection } = await run(provider(host));

    expect(result?.status).toBe('failed');
    const error = result?.error;
    expect(AgentTransportError.isInstance(error)).toBe(true);
    expect(error).toMatchObject({ code: 'http_error', status: 409 });
    expect((error as Error).message).toBe(
      `POST ${host.baseURL}/sessions/s1/runs answered 409 run_exists: The run "r1" exists`,
    );
    expect((error as AgentTransportError).bodyExcerpt).toBe(
      JSON.stringify({ error: { code: 'run_exists', message: 'The run "r1" exists' } }),
    );
    expect(host.requestsOf('POST /runs')).toHaveLength(1);
    expect(host.requestsOf('GET /events')).toHaveLength(0);
    expect(connection).toEqual(['connecting', 'failed']);
  });

  it.each([
    [503, 'run_unavailable'],
    [429, 'rate_limited'],
  ])('retries a POST /runs answered %i', async (status, code) => {
    const host = await startHost();
    host.answerNext('POST /runs', { type: 'refuse', status, code });
    const { result, state, connection } = await run(provider(host));

    expect(result?.status).toBe('completed');
    expect(transcript(state)).toEqual(ANSWERED);
    expect(host.requestsOf('POST /runs')).toHaveLength(2);
    expect(connection).toEqual(['connecting', 'reconnecting', 'connecting', 'connected', 'closed']);
  });

  it('does not start the run twice when the events request fails after the host accepted it', async () => {
    const host = await startHost();
    host.answerNext('GET /events', { type: 'refuse', status: 503, code: 'unavailable' });
    const { result, events } = await run(provider(host));

    expect(result?.status).toBe('completed');
    expect(events).toHaveLength(9);
    expect(host.requestsOf('POST /runs')).toHaveLength(1);
    expect(host.requestsOf('GET /events')).toHaveLength(2);
  });

  it('takes run_exists to a POST whose first answer was lost as the run it started', async () => {
    const host = await startHost();
    host.answerNext('POST /runs', { type: 'lose' });
    const { result, events, state } = await run(provider(host));

    expect(result?.status).toBe('completed');
    expect(events).toHaveLength(9);
    expect(transcript(state)).toEqual(ANSWERED);
    expect(host.requestsOf('POST /runs')).toHaveLength(2);
  });

  it('fails with the host’s refusal when the answer to POST /runs is not a run', async () => {
    const host = await startHost();
    host.answerNext('POST /runs', { type: 'json', status: 202, body: { runId: 'someone-else', cursor: null } });
    const { result } = await run(provider(host));

    expect(result?.status).toBe('failed');
    expect(result?.error).toMatchObject({ code: 'http_error', status: 202 });
    expect((result?.error as Error | undefined)?.message).toContain('without { runId: "r1", cursor }');
  });

  it('classifies network errors, timeouts, cut streams, 5xx and 429 as retryable, and nothing else', async () => {
    const host = await startHost();
    const { classifyError } = provider(host);
    const context = { sessionId: 's1', runId: 'r1', continuation: undefined, ended: false };
    const retryable = (error: unknown) => classifyError?.(error, context).retryable;
    const transportError = (code: AgentTransportError['code'], status?: number) =>
      new AgentTransportError(code, code, status === undefined ? {} : { status });

    expect(
      [
        transportError('network_error'),
        transportError('timeout'),
        transportError('abnormal_close'),
        transportError('http_error', 500),
        transportError('http_error', 503),
        transportError('http_error', 429),
      ].map(retryable),
    ).toEqual([true, true, true, true, true, true]);
    expect(
      [
        transportError('http_error', 400),
        transportError('http_error', 409),
        transportError('invalid_cursor', 410),
        transportError('aborted'),
        transportError('frame_too_large'),
        transportError('invalid_content_type'),
        new Error('boom'),
      ].map(retryable),
    ).toEqual([false, false, false, false, false, false, false]);
  });
});
