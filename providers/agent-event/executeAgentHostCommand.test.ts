import { afterEach, describe, expect, it } from 'vitest';
import { createAgentStore } from '../../machines/createAgentStore';
import type { AgentCommand } from '../../protocol/commandSchemas';
import { createAgentCommandFactory } from '../../protocol/createAgentCommandFactory';
import type { AgentEventFactory } from '../../protocol/createAgentEventFactory';
import type { AgentEvent } from '../../protocol/eventSchemas';
import { getAgentEntityKey } from '../../protocol/getAgentEntityKey';
import { type FakeAgentHost, type FakeAgentHostOptions, startFakeAgentHost } from '../../tests/support/fakeAgentHost';
import { until } from '../../tests/support/until';
import { AgentTransportError } from '../../transports/AgentTransportError';
import { AgentCommandError } from '../AgentCommandError';
import { runAgentCommand } from '../runAgentCommand';
import { runAgentProvider } from '../runAgentProvider';
import { validateAgentProviderCommands } from '../testing/validateAgentProviderCommands';
import { type AgentEventProviderOptions, createAgentEventProvider } from './createAgentEventProvider';

const hosts: FakeAgentHost[] = [];
afterEach(async () => {
  await Promise.all(hosts.splice(0).map((host) => host.close()));
});

/** A run that stops waiting on approval `a1`; approving it answers with the rest of the run. */
const approvalRun: FakeAgentHostOptions = {
  runScript: (events: AgentEventFactory) => [
    events.create('run.started', {}),
    events.create('approval.requested', { approvalId: 'a1', description: 'Delete 3 files' }),
  ],
  commandScript: (events: AgentEventFactory, command: AgentCommand) =>
    command.type === 'approval.resolve'
      ? [
          events.create('approval.resolved', { approvalId: 'a1', decision: command.payload.decision }),
          events.create('message.started', { messageId: 'done', role: 'assistant', content: 'Deleted.' }),
          events.create('message.completed', { messageId: 'done' }),
          events.create('run.completed', {}),
        ]
      : [],
};

async function startHost(options: FakeAgentHostOptions = approvalRun): Promise<FakeAgentHost> {
  const host = await startFakeAgentHost(options);
  hosts.push(host);
  return host;
}

function provider(host: FakeAgentHost, options: Partial<AgentEventProviderOptions> = {}) {
  return createAgentEventProvider({ baseURL: host.baseURL, sessionId: 's1', ...options });
}

const approve = (sessionId = 's1', runId = 'r1') =>
  createAgentCommandFactory({ sessionId, runId, createCommandId: () => 'c1' }).create('approval.resolve', {
    approvalId: 'a1',
    decision: 'approved',
  });

/** Sends a command through `runAgentCommand` into a fresh store; what it delivered, or what it threw. */
async function send(agent: ReturnType<typeof provider>, command: AgentCommand, signal?: AbortSignal) {
  const events: AgentEvent[] = [];
  try {
    await runAgentCommand({
      provider: agent,
      command,
      initialSequence: 2,
      onEvent: (event) => events.push(event),
      ...(signal === undefined ? {} : { signal }),
    });
    return { events, error: undefined };
  } catch (error) {
    return { events, error };
  }
}

describe('createAgentEventProvider: executeCommand', () => {
  it('posts the command and delivers the events the host answered with, as the run’s stream does', async () => {
    const host = await startHost();
    const agent = provider(host);
    const store = createAgentStore();
    let waiting!: () => void;
    const approvalRequested = new Promise<void>((resolve) => {
      waiting = resolve;
    });
    const running = runAgentProvider({
      provider: agent,
      input: { provider: 'agent', input: {} },
      sessionId: 's1',
      runId: 'r1',
      onEvent: (event, admission) => {
        store.dispatch(event, admission);
        if (event.type === 'approval.requested') waiting();
      },
    });
    await approvalRequested;

    const command = approve();
    const answered: AgentEvent[] = [];
    await runAgentCommand({
      provider: agent,
      command,
      initialSequence: store.getSnapshot().lastSequenceByRun.r1 ?? 0,
      onEvent: (event, admission) => {
        answered.push(event);
        store.dispatch(event, admission);
      },
    });
    // The host writes the answer to the log too: the run's stream ends with the same events.
    expect(await running).toEqual({ runId: 'r1', status: 'completed' });

    expect(JSON.parse(host.requestsOf('POST /commands')[0]?.body ?? '')).toEqual(command);
    expect(answered.map((event) => [event.sequence, event.type])).toEqual([
      [3, 'approval.resolved'],
      [4, 'message.started'],
      [5, 'message.completed'],
      [6, 'run.completed'],
    ]);
    expect(
      validateAgentProviderCommands(agent.capabilities, { command, initialSequence: 2, events: answered }),
    ).toEqual([]);
    const state = store.getSnapshot();
    expect(state.approvals[getAgentEntityKey('r1', 'a1')]).toMatchObject({
      status: 'resolved',
      decision: 'approved',
    });
    expect(state.runs.r1?.status).toBe('completed');
    expect(state.lastSequenceByRun.r1).toBe(6);
    expect(state.issues).toEqual([]);
  });

  it('sends the headers a headers function makes with the command', async () => {
    const host = await startHost();
    let calls = 0;
    const agent = provider(host, { headers: () => ({ authorization: `Bearer token-${++calls}` }) });
    await send(agent, approve());
    expect(host.requestsOf('POST /commands')[0]?.headers.authorization).toBe('Bearer token-1');
  });

  it.each([
    ['invalid_command', 400, 'invalid_command', false],
    ['unsupported_capability', 422, 'unsupported_capability', false],
    ['idempotency_conflict', 409, 'invalid_command', false],
    ['run_ended', 409, 'invalid_command', false],
    ['provider_error', 502, 'provider_error', true],
    ['run_unavailable', 503, 'provider_error', true],
    ['timeout', 504, 'provider_error', true],
    ['rate_limited', 429, 'provider_error', true],
    ['forbidden', 403, 'provider_error', false],
  ] as const)('maps the host’s %s (%i) to %s, retryable %s', async (hostCode, status, code, retryable) => {
    const host = await startHost();
    host.answerNext('POST /commands', { type: 'refuse', status, code: hostCode, message: 'Not now' });
    const { events, error } = await send(provider(host), approve());

    expect(events).toEqual([]);
    expect(AgentCommandError.isInstance(error)).toBe(true);
    expect(error).toMatchObject({ code, retryable });
    expect((error as Error).message).toBe(
      `The host refused approval.resolve: POST ${host.baseURL}/sessions/s1/commands answered ${status} ${hostCode}: Not now`,
    );
    const cause = (error as Error).cause;
    expect(AgentTransportError.isInstance(cause)).toBe(true);
    expect(cause).toMatchObject({ code: 'http_error', status });
  });

  it('maps the host’s own unknown_run and session_mismatch to invalid_command', async () => {
    const host = await startHost();
    const unknownRun = await send(provider(host), approve('s1', 'nowhere'));
    const otherSession = await send(provider(host), approve('s2', 'r1'));

    expect(unknownRun.error).toMatchObject({ code: 'invalid_command', retryable: false });
    expect((unknownRun.error as Error).message).toContain('answered 404 unknown_run: No run "nowhere"');
    expect(otherSession.error).toMatchObject({ code: 'invalid_command', retryable: false });
    expect((otherSession.error as Error).message).toContain('answered 403 session_mismatch');
  });

  it('maps an answer that is not the host’s JSON to provider_error, naming the status', async () => {
    const host = await startHost();
    host.answerNext('POST /commands', { type: 'json', status: 500, body: 'upstream down' });
    const { error } = await send(provider(host), approve());
    expect(error).toMatchObject({ code: 'provider_error', retryable: true });
    expect((error as Error).message).toContain('answered 500 http_500: "upstream down"');
  });

  it('fails retryable provider_error when the host cannot be reached or stays silent', async () => {
    const gone = await startHost();
    const unreachable = provider(gone);
    await gone.close();
    const refused = await send(unreachable, approve());
    expect(refused.error).toMatchObject({ code: 'provider_error', retryable: true });
    expect(((refused.error as Error).cause as AgentTransportError).code).toBe('network_error');

    const silent = await startHost();
    silent.answerNext('POST /commands', { type: 'hang' });
    const timedOut = await send(provider(silent, { idleTimeoutMs: 100 }), approve());
    expect(timedOut.error).toMatchObject({ code: 'provider_error', retryable: true });
    expect(((timedOut.error as Error).cause as AgentTransportError).code).toBe('timeout');
  });

  it('is interrupted by an abort, which cancels the request', async () => {
    const host = await startHost();
    host.answerNext('POST /commands', { type: 'hang' });
    const controller = new AbortController();
    const sending = send(provider(host), approve(), controller.signal);
    // Aborted once the host holds the request, whatever the machine's load made that take.
    await until(() => host.requestsOf('POST /commands').length === 1, 'the command at the host');
    controller.abort(new Error('user left'));
    const { error } = await sending;

    expect(error).toMatchObject({ code: 'interrupted', retryable: true });
    await host.closed(0);
  });

  it('refuses an answer with an invalid event, or of another shape, as protocol_error before delivering any', async () => {
    const host = await startHost();
    host.answerNext('POST /commands', {
      type: 'json',
      status: 200,
      body: { status: 'accepted', events: [{ type: 'approval.resolved', payload: {} }] },
    });
    host.answerNext('POST /commands', { type: 'json', status: 200, body: { ok: true } });
    const invalidEvent = await send(provider(host), approve());
    const otherShape = await send(provider(host), approve());

    expect(invalidEvent.events).toEqual([]);
    expect(invalidEvent.error).toMatchObject({ code: 'protocol_error' });
    expect((invalidEvent.error as Error).message).toMatch(
      /^The host answered approval\.resolve with an invalid event at 0: /,
    );
    expect(otherShape.error).toMatchObject({ code: 'protocol_error' });
    expect((otherShape.error as Error).message).toBe(
      'The host answered approval.resolve with 200 but not { status: "accepted", events: [...] }',
    );
  });

  it('sends no command the options do not declare', async () => {
    const host = await startHost();
    const { error } = await send(provider(host, { commands: ['run.cancel'] }), approve());
    expect(error).toMatchObject({ code: 'unsupported_capability' });
    expect(host.requests).toEqual([]);
  });
});
