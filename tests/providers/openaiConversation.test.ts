import { fileURLToPath } from 'node:url';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { createAgentStore } from '../../machines/createAgentStore';
import { createAgentEventFactory } from '../../protocol/createAgentEventFactory';
import { AgentValidationError } from '../../protocol/errors';
import type { AgentEvent } from '../../protocol/eventSchemas';
import {
  createOpenAICompatibleAgentProvider,
  type OpenAIChatInput,
} from '../../providers/openai/createOpenAICompatibleAgentProvider';
import { runAgentProvider } from '../../providers/runAgentProvider';
import { startFixtureServer } from '../support/fixtureServer';
import { message, stateOf, toolCall } from '../support/handBuiltAgentState';

// A real loopback server answers each request with the next fixture of `replies`.
const fixtures = fileURLToPath(new URL('../../providers/openai/__fixtures__', import.meta.url));
let replies: string[] = [];
const server = await startFixtureServer(fixtures, () => {
  const reply = replies.shift();
  if (reply === undefined) throw new Error('The test server got a request it has no reply for');
  return reply;
});
afterAll(() => server.close());
beforeEach(() => {
  replies = [];
});

const provider = createOpenAICompatibleAgentProvider({
  baseURL: `${server.url}/v1`,
  apiKey: 'sk-test',
  model: 'gpt-4o-mini',
});
const tools = [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object' } } }];
const TIMEOUT_MS = 5_000;

/** The messages the server received in request `index`, as JSON. */
const wireMessages = (index: number): unknown => JSON.parse(server.requests[index]?.body ?? '{}').messages;

describe('OpenAI-compatible provider: a conversation over several requests', () => {
  it('sends the prompt, then continues after the client’s tool results, then takes a new prompt', async () => {
    const store = createAgentStore();
    const request = (runId: string, input: OpenAIChatInput, continuesRunId?: string) =>
      runAgentProvider({
        provider,
        input,
        sessionId: 'chat-1',
        runId,
        history: store.getSnapshot(),
        ...(continuesRunId === undefined ? {} : { continuation: { runId: continuesRunId, approvals: [] } }),
        signal: AbortSignal.timeout(TIMEOUT_MS),
        onEvent: store.dispatch,
      });
    const first = server.requests.length;
    replies = ['scenario.sse', 'text.sse', 'text.sse'];

    // 1. The prompt; the model answers with two tool calls for the application to run.
    expect(await request('run-1', { prompt: 'Weather in Paris and Rome?', tools })).toEqual({
      runId: 'run-1',
      status: 'completed',
    });
    expect(wireMessages(first)).toEqual([{ role: 'user', content: 'Weather in Paris and Rome?' }]);
    expect(store.getSnapshot().runs['run-1']?.pendingToolCallIds).toEqual(['call_a', 'call_b']);

    // The application runs the tools and settles them in the store.
    const events = createAgentEventFactory({
      sessionId: 'chat-1',
      runId: 'run-1',
      initialSequence: store.getSnapshot().lastSequenceByRun['run-1'] ?? 0,
    });
    const client = { meta: { agentMachines: { executedBy: 'client' } } };
    store.dispatch(events.create('tool.completed', { toolCallId: 'call_a', result: { celsius: 14 } }, client));
    store.dispatch(events.create('tool.completed', { toolCallId: 'call_b', result: 'Sunny, 21 °C' }, client));

    // 2. The continuation, with the first run's input: the conversation, and no new prompt.
    const firstInput = store.getSnapshot().runs['run-1']?.input as OpenAIChatInput;
    expect((await request('run-2', firstInput, 'run-1')).status).toBe('completed');
    const continued = [
      { role: 'user', content: 'Weather in Paris and Rome?' },
      {
        role: 'assistant',
        content: 'Let me check both cities.',
        tool_calls: [
          { id: 'call_a', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } },
          { id: 'call_b', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Rome"}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'call_a', content: '{"celsius":14}' },
      { role: 'tool', tool_call_id: 'call_b', content: 'Sunny, 21 °C' },
    ];
    expect(wireMessages(first + 1)).toEqual(continued);
    const state = store.getSnapshot();
    expect(state.runs['run-2']?.continuesRunId).toBe('run-1');
    expect(Object.values(state.messages).map(({ runId, role }) => [runId, role])).toEqual([
      ['run-1', 'user'],
      ['run-1', 'assistant'],
      ['run-2', 'assistant'],
    ]);

    // 3. A new prompt: the whole conversation, then the prompt.
    expect((await request('run-3', { prompt: 'next', tools })).status).toBe('completed');
    expect(wireMessages(first + 2)).toEqual([
      ...continued,
      { role: 'assistant', content: 'Hello, world' },
      { role: 'user', content: 'next' },
    ]);
    expect(store.getSnapshot().issues).toEqual([]);
  });

  it('sends the input’s messages as they are, over the history and the prompt', async () => {
    const before = server.requests.length;
    replies = ['text.sse'];
    const events: AgentEvent[] = [];
    await runAgentProvider({
      provider,
      input: { messages: [{ role: 'user', content: 'Only this' }], prompt: 'Not this' },
      sessionId: 's1',
      history: stateOf(message('r1', 'prompt', 'user', 'Earlier')),
      signal: AbortSignal.timeout(TIMEOUT_MS),
      onEvent: (event) => events.push(event),
    });
    expect(wireMessages(before)).toEqual([{ role: 'user', content: 'Only this' }]);
    expect(events.find((event) => event.type === 'message.started')?.payload).toEqual({
      messageId: 'prompt',
      role: 'user',
      content: 'Only this',
    });
  });

  it('sends the system instructions first, before the history and the prompt', async () => {
    const before = server.requests.length;
    replies = ['text.sse'];
    await runAgentProvider({
      provider,
      input: { prompt: 'And now?', system: 'Be brief.' },
      sessionId: 's1',
      history: stateOf(
        message('r1', 'prompt', 'user', 'Weather?'),
        toolCall('r1', 'call_1', 'failed', { error: { message: 'Offline' } }),
      ),
      signal: AbortSignal.timeout(TIMEOUT_MS),
      onEvent: () => {},
    });
    expect(wireMessages(before)).toEqual([
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'Weather?' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          { id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'call_1', content: 'Error: Offline' },
      { role: 'user', content: 'And now?' },
    ]);
  });

  it('fails the run, sending nothing, when the input has no messages, no prompt and nothing to continue', async () => {
    const before = server.requests.length;
    const events: AgentEvent[] = [];
    const result = await runAgentProvider({
      provider,
      input: { tools },
      sessionId: 's1',
      runId: 'empty',
      history: stateOf(message('r1', 'prompt', 'user', 'In another session', { sessionId: 's2' })),
      onEvent: (event) => events.push(event),
    });
    expect(result.status).toBe('failed');
    expect(AgentValidationError.isInstance(result.error)).toBe(true);
    expect(events.map((event) => event.type)).toEqual(['run.started', 'run.failed']);
    expect(events.at(-1)?.payload).toEqual({
      error: {
        message:
          'Invalid OpenAI chat input: nothing to send: no messages, no prompt, and no conversation in the session to continue',
        code: 'invalid_input',
        retryable: false,
      },
    });
    expect(server.requests.length).toBe(before);
  });
});
