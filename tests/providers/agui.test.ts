import { fileURLToPath } from 'node:url';
import { EventSchema, RunAgentInputSchema } from '@ag-ui/core/schemas';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { getAgentEntityKey } from '../../protocol/getAgentEntityKey';
import { type AgUIExtensionEvent, createAgUIAgentProvider } from '../../providers/agui/createAgUIAgentProvider';
import { AgUIEventError, parseAgUIEvent } from '../../providers/agui/parseAgUIEvent';
import { describeAgentProviderContract } from '../../providers/testing/describeAgentProviderContract';
import { runAgentProviderFixture } from '../../providers/testing/runAgentProviderFixture';
import { startFixtureServer } from '../support/fixtureServer';
import { startHttpServer } from '../support/httpServer';

const fixtures = fileURLToPath(new URL('../../providers/agui/__fixtures__', import.meta.url));
const server = await startFixtureServer(
  fixtures,
  (body) => (body as { forwardedProps: { fixture: string } }).forwardedProps.fixture,
);
afterAll(() => server.close());

const extensions: AgUIExtensionEvent[] = [];
const provider = createAgUIAgentProvider({ url: server.url, onExtension: (extension) => extensions.push(extension) });
const input = (fixture: string, history: Array<{ id: string; role: 'user'; content: string }> = []) => ({
  messages: [...history, { id: 'u-1', role: 'user' as const, content: 'Plan a day in Paris' }],
  forwardedProps: { fixture },
});
const entities = <T>(record: Record<string, T>) => Object.values(record);

describeAgentProviderContract('agui', {
  provider,
  fixtures: [
    { name: 'text and parallel tools', input: input('text-and-parallel-tools.sse') },
    { name: 'chunk events', input: input('chunks.sse') },
    { name: 'reasoning, state, snapshots, extensions', input: input('reasoning-state-snapshots.sse') },
    { name: 'interrupt', input: input('interrupt.sse') },
    { name: 'pending tools', input: input('pending-tools.sse') },
    { name: 'RUN_ERROR mid-stream', input: input('run-error.sse'), status: 'failed' },
    { name: 'cancelled outcome', input: input('cancelled.sse'), status: 'cancelled' },
    { name: 'stream without RUN_FINISHED', input: input('truncated.sse'), status: 'failed' },
    { name: 'malformed event', input: input('malformed.sse'), status: 'failed' },
    { name: 'cross-provider scenario', input: input('scenario.sse') },
    { name: 'extensions, activities, subagents, usage', input: input('extensions-activities.sse') },
    { name: 'empty tool call id', input: input('empty-tool-call-id.sse'), status: 'failed' },
  ],
});

describe('AG-UI provider mapping (over SSE from a loopback server)', () => {
  it('sends a valid AG-UI RunAgentInput', async () => {
    const before = server.requests.length;
    await runAgentProviderFixture(provider, {
      ...input('cancelled.sse'),
      threadId: 'thread-9',
      tools: [{ name: 't', description: 'd' }],
    });
    const request = JSON.parse(server.requests[before]?.body ?? '{}');
    expect(RunAgentInputSchema.safeParse(request).success).toBe(true);
    expect(request).toMatchObject({
      threadId: 'thread-9',
      runId: 'contract-run',
      tools: [{ name: 't' }],
      context: [],
      forwardedProps: { fixture: 'cancelled.sse' },
    });
    expect(server.requests[before]?.headers.accept).toBe('text/event-stream');
  });

  it('maps text, parallel tool calls with results, output and usage', async () => {
    const { state } = await runAgentProviderFixture(provider, input('text-and-parallel-tools.sse'));
    expect(entities(state.messages).map((message) => [message.role, message.content, message.status])).toEqual([
      ['user', 'Plan a day in Paris', 'completed'],
      ['assistant', 'Checking the weather in Paris and Zürich ☀️', 'completed'],
      ['assistant', 'Paris 14 °C, Zürich 9 °C.', 'completed'],
    ]);
    expect(
      entities(state.toolCalls).map((tool) => [
        tool.id,
        tool.parsedArguments,
        tool.status,
        tool.result,
        tool.messageId,
      ]),
    ).toEqual([
      ['call-a', { city: 'Paris' }, 'completed', '{"celsius":14}', 'msg-1'],
      ['call-b', { city: 'Zürich' }, 'completed', '{"celsius":9}', 'msg-1'],
    ]);
    expect(state.runs['contract-run']).toMatchObject({
      status: 'completed',
      output: { answered: true },
      meta: { agui: { threadId: 'contract-session', runId: 'contract-run' } },
    });
    expect(state.runs['contract-run']?.usage).toEqual({ inputTokens: 130, outputTokens: 45, totalTokens: 175 });
    expect(state.runs['contract-run']?.pendingToolCallIds).toBeUndefined();
  });

  it('expands chunk events with AG-UI lane rules', async () => {
    const { state } = await runAgentProviderFixture(provider, input('chunks.sse'));
    expect(entities(state.reasoning).map((reasoning) => [reasoning.id, reasoning.content, reasoning.status])).toEqual([
      ['think-1', 'Let me think about it.', 'completed'],
    ]);
    expect(
      entities(state.messages)
        .slice(1)
        .map((message) => [message.id, message.content, message.status]),
    ).toEqual([
      ['msg-1', 'Hello 👋', 'completed'],
      ['msg-2', 'Second message', 'completed'],
      ['msg-3', 'Found 3.', 'completed'],
    ]);
    expect(entities(state.toolCalls)).toMatchObject([
      { id: 'call-1', name: 'search', parsedArguments: { q: 'agents' }, status: 'completed', result: '3 results' },
    ]);
  });

  it('maps reasoning, steps, shared state and message snapshots; hands extensions over', async () => {
    extensions.length = 0;
    const { state } = await runAgentProviderFixture(
      provider,
      input('reasoning-state-snapshots.sse', [{ id: 'u-1', role: 'user', content: 'x' }]),
    );
    expect(state.state['contract-session']).toEqual({ plan: { steps: ['search', 'answer'], done: 1 }, city: 'Paris' });
    expect(entities(state.tasks)).toMatchObject([{ title: 'plan', status: 'completed' }]);
    expect(entities(state.reasoning).map((reasoning) => [reasoning.id, reasoning.redacted, reasoning.status])).toEqual([
      ['think-1', false, 'completed'],
      ['encrypted:think-1', true, 'completed'],
    ]);
    // u-1 was in the input history: it is not hydrated again; act-0 is an activity, not a message.
    expect(entities(state.messages).map((message) => [message.id, message.role])).toEqual([
      ['u-1', 'user'],
      ['a-0', 'assistant'],
      ['t-0', 'tool'],
      ['msg-1', 'assistant'],
    ]);
    expect(extensions.map((extension) => extension.name)).toEqual([
      'agui.custom',
      'agui.raw',
      'agui.activity_snapshot',
    ]);
    expect(extensions[0]?.event).toMatchObject({ name: 'company.progress', value: { percent: 50 } });
  });

  it('turns an interrupt into approvals the run ends waiting on', async () => {
    const { state, result } = await runAgentProviderFixture(provider, input('interrupt.sse'));
    expect(result.status).toBe('completed');
    expect(state.runs['contract-run']).toMatchObject({
      pendingApprovalIds: ['int-1', 'int-2'],
      pendingToolCallIds: ['call-del'],
    });
    expect(entities(state.approvals)).toMatchObject([
      {
        id: 'int-1',
        status: 'waiting',
        toolCallId: 'call-del',
        description: 'Delete 12 log files?',
        expiresAt: Date.parse('2030-01-01T00:00:00Z'),
        data: { reason: 'confirmation' },
      },
      { id: 'int-2', status: 'waiting', description: 'input_required' },
    ]);
  });

  it('derives pending tool calls when RUN_FINISHED does not list them', async () => {
    const { state } = await runAgentProviderFixture(provider, input('pending-tools.sse'));
    expect(state.runs['contract-run']?.pendingToolCallIds).toEqual(['call-1', 'call-2']);
    expect(entities(state.toolCalls).map((tool) => tool.status)).toEqual(['awaiting_execution', 'awaiting_execution']);
  });

  it('fails the run on RUN_ERROR, on a truncated stream and on a malformed event, saying why', async () => {
    const error = await runAgentProviderFixture(provider, input('run-error.sse'));
    expect(error.state.runs['contract-run']?.error).toEqual({ message: 'Model overloaded', code: 'overloaded' });
    expect(entities(error.state.messages)[1]).toMatchObject({ status: 'failed', content: 'Partial ans' });
    const truncated = await runAgentProviderFixture(provider, input('truncated.sse'));
    expect(truncated.state.runs['contract-run']?.error?.code).toBe('missing_run_finished');
    const malformed = await runAgentProviderFixture(provider, input('malformed.sse'));
    expect(malformed.state.runs['contract-run']?.error).toMatchObject({
      code: 'invalid_agui_event',
      message: expect.stringContaining('TEXT_MESSAGE_CONTENT at delta'),
    });
  });
});

describe('AG-UI provider: extensions, activities, usage, bad ids', () => {
  it('turns CUSTOM, RAW, ACTIVITY_* and SUBAGENT_* into events, in order, and into AgentState', async () => {
    extensions.length = 0;
    const { events, state } = await runAgentProviderFixture(provider, input('extensions-activities.sse'));
    const mapped = events.filter((event) => event.type === 'extension.emitted' || event.type.startsWith('activity.'));
    expect(mapped.map((event) => [event.type, event.payload])).toEqual([
      ['extension.emitted', { name: 'agui.custom', data: { name: 'company.progress', value: { percent: 10 } } }],
      [
        'activity.snapshot',
        { activityId: 'plan-1', activityType: 'PLAN', content: { steps: [{ title: 'Search', done: false }] } },
      ],
      [
        'extension.emitted',
        {
          name: 'agui.subagent_started',
          data: { subagentRunId: 'sub-1', name: 'researcher', parentToolCallId: 'call-r' },
        },
      ],
      [
        'extension.emitted',
        {
          name: 'agui.subagent_finished',
          data: { subagentRunId: 'sub-1', result: { sources: 3 }, outcome: { type: 'success' } },
        },
      ],
      [
        'activity.delta',
        {
          activityId: 'plan-1',
          activityType: 'PLAN',
          patch: [{ op: 'replace', path: '/steps/0/done', value: true }],
        },
      ],
      ['extension.emitted', { name: 'agui.raw', data: { event: { vendor: 'x', data: 1 }, source: 'vendor-x' } }],
      [
        'extension.emitted',
        { name: 'agui.subagent_error', data: { subagentRunId: 'sub-2', message: 'Timed out', code: 'timeout' } },
      ],
    ]);
    const emitted = events.filter((event) => event.type === 'extension.emitted');
    expect(state.extensions['contract-run']).toEqual(
      emitted.map((event) => ({
        eventId: event.eventId,
        name: event.payload.name,
        data: event.payload.data,
        timestamp: event.timestamp,
      })),
    );
    expect(state.activities[getAgentEntityKey('contract-run', 'plan-1')]).toMatchObject({
      id: 'plan-1',
      activityType: 'PLAN',
      content: { steps: [{ title: 'Search', done: true }] },
    });
    // onExtension still sees every one of them, as it arrived.
    expect(extensions.map((extension) => extension.name)).toEqual([
      'agui.custom',
      'agui.activity_snapshot',
      'agui.subagent_started',
      'agui.subagent_finished',
      'agui.activity_delta',
      'agui.raw',
      'agui.subagent_error',
    ]);
    expect(state.messages['contract-run:sub-msg']).toMatchObject({
      content: 'Found 3 sources.',
      meta: { agui: { subagentRunId: 'sub-1' } },
    });
  });

  it('hydrates activity messages of a MESSAGES_SNAPSHOT as activities', async () => {
    const { state } = await runAgentProviderFixture(provider, input('reasoning-state-snapshots.sse'));
    expect(state.activities[getAgentEntityKey('contract-run', 'act-0')]).toMatchObject({
      activityType: 'PLAN',
      content: { x: 1 },
    });
    expect(state.activities[getAgentEntityKey('contract-run', 'activity-1')]).toMatchObject({
      content: { title: 'Plan' },
    });
  });

  it('sums usage entries into the six counters and keeps the entries in meta.agui.usage', async () => {
    const { events } = await runAgentProviderFixture(provider, input('extensions-activities.sse'));
    const completed = events.at(-1);
    expect(completed?.type === 'run.completed' && completed.payload.usage).toEqual({
      inputTokens: 150,
      outputTokens: 30,
      // 120 given by the first entry, 50 + 10 by the second, which gives no total.
      totalTokens: 180,
      reasoningTokens: 5,
      cacheReadTokens: 64,
      cacheWriteTokens: 30,
    });
    expect((completed?.meta?.agui as { usage?: unknown } | undefined)?.usage).toEqual([
      {
        provider: 'openai',
        model: 'gpt-4o',
        inputTokens: 100,
        outputTokens: 20,
        totalTokens: 120,
        cachedInputTokens: 64,
        reasoningTokens: 5,
      },
      { provider: 'anthropic', model: 'claude', inputTokens: 50, outputTokens: 10, cacheWriteInputTokens: 30 },
    ]);
  });

  it('fails the run, not the caller, on an empty tool call id', async () => {
    const { state, result } = await runAgentProviderFixture(provider, input('empty-tool-call-id.sse'));
    expect(result.status).toBe('failed');
    expect(state.runs['contract-run']?.error).toEqual({
      message: 'Invalid AG-UI TOOL_CALL_START at toolCallId: is empty',
      code: 'invalid_agui_event',
      retryable: false,
    });
    expect(state.messages['contract-run:msg-1']).toMatchObject({ status: 'failed', content: 'Let me look.' });
  });

  it("fails the run with the server's message on an HTTP error", async () => {
    const denied = await startHttpServer((_request, response) => {
      response.writeHead(403, { 'content-type': 'application/json' });
      response.end('{"message":"Agent access denied"}');
    });
    try {
      const deniedProvider = createAgUIAgentProvider({ url: denied.url });
      const { state } = await runAgentProviderFixture(deniedProvider, input('cancelled.sse'));
      expect(state.runs['contract-run']?.error).toEqual({
        message: `${denied.url} answered 403: Agent access denied`,
        code: 'http_error',
        data: { status: 403, body: { message: 'Agent access denied' } },
        retryable: false,
      });
      // Not worth retrying: the request was sent once.
      expect(denied.requests).toHaveLength(1);
    } finally {
      await denied.close();
    }
  });

  it('reconnects a dropped or overloaded stream: a 503 is retried, and the run fails once the budget is spent', async () => {
    const busy = await startHttpServer((_request, response) => {
      response.writeHead(503, { 'content-type': 'text/plain' });
      response.end('busy');
    });
    try {
      const busyProvider = createAgUIAgentProvider({ url: busy.url });
      const { state, events } = await runAgentProviderFixture(busyProvider, input('cancelled.sse'), {
        reconnect: { maxAttempts: 2, initialDelay: 1, maxDelay: 2 },
      });
      expect(busy.requests).toHaveLength(3);
      expect(events.filter((event) => event.type === 'run.failed')).toHaveLength(1);
      expect(state.runs['contract-run']?.error).toMatchObject({ code: 'http_error', retryable: true });
    } finally {
      await busy.close();
    }
  });

  it('calls a headers function for every request, so each carries the current token', async () => {
    const authorizations: Array<string | undefined> = [];
    const server = await startHttpServer((request, response) => {
      authorizations.push(request.headers.authorization);
      response.writeHead(401, { 'content-type': 'application/json' });
      response.end('{"message":"expired"}');
    });
    try {
      let token = 0;
      const tokenProvider = createAgUIAgentProvider({
        url: server.url,
        headers: async () => ({ Authorization: `Bearer t${++token}` }),
      });
      await runAgentProviderFixture(tokenProvider, input('cancelled.sse'));
      await runAgentProviderFixture(tokenProvider, input('cancelled.sse'));
      expect(authorizations).toEqual(['Bearer t1', 'Bearer t2']);
    } finally {
      await server.close();
    }
  });
});

describe('parseAgUIEvent', () => {
  it('names the AG-UI type and field that are wrong', () => {
    expect(() => parseAgUIEvent({ type: 'TOOL_CALL_START', toolCallId: 'c' })).toThrow(AgUIEventError);
    try {
      parseAgUIEvent({ type: 'TOOL_CALL_START', toolCallId: 'c' });
    } catch (error) {
      expect(error).toMatchObject({ aguiType: 'TOOL_CALL_START', field: 'toolCallName' });
    }
    expect(parseAgUIEvent({ type: 'TEXT_MESSAGE_CONTENT', messageId: 'm', delta: 'x', vendorField: 1 })).toMatchObject({
      vendorField: 1,
    });
  });

  it('accepts through its fast path exactly what the AG-UI schema accepts', () => {
    const value = fc.oneof(
      fc.string(),
      fc.integer(),
      fc.double(),
      fc.constant(undefined),
      fc.constant(null),
      fc.boolean(),
    );
    fc.assert(
      fc.property(
        fc.constantFrom('TEXT_MESSAGE_CONTENT', 'TOOL_CALL_ARGS', 'REASONING_MESSAGE_CONTENT'),
        fc.dictionary(fc.constantFrom('messageId', 'toolCallId', 'delta', 'timestamp', 'rawEvent', 'metadata'), value, {
          maxKeys: 4,
        }),
        (type, fields) => {
          const event = { type, messageId: 'm', toolCallId: 't', delta: 'd', ...fields };
          let accepted = true;
          try {
            parseAgUIEvent(event);
          } catch {
            accepted = false;
          }
          expect(accepted).toBe(EventSchema.safeParse(event).success);
        },
      ),
      { numRuns: 1_000 },
    );
  });
});
