import { fileURLToPath } from 'node:url';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { createAgentStore } from '../../machines/createAgentStore';
import { createAgentEventFactory } from '../../protocol/createAgentEventFactory';
import { AgentValidationError } from '../../protocol/errors';
import type { AgentEvent } from '../../protocol/eventSchemas';
import {
  type AnthropicInput,
  createAnthropicAgentProvider,
} from '../../providers/anthropic/createAnthropicAgentProvider';
import { runAgentProvider } from '../../providers/runAgentProvider';
import { startFixtureServer } from '../support/fixtureServer';
import { message, stateOf, toolCall } from '../support/handBuiltAgentState';

// A real loopback server answers each request with the next fixture of `replies`.
const fixtures = fileURLToPath(new URL('../../providers/anthropic/__fixtures__', import.meta.url));
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

const provider = createAnthropicAgentProvider({
  baseURL: server.url,
  apiKey: 'sk-ant-test',
  model: 'claude-sonnet-4-5',
  maxTokens: 1024,
});
const tools = [{ name: 'get_weather', input_schema: { type: 'object' } }];
const TIMEOUT_MS = 5_000;

/** The body the server received in request `index`, as JSON. */
const wireBody = (index: number): Record<string, unknown> => JSON.parse(server.requests[index]?.body ?? '{}');

describe('Anthropic provider: a conversation over several requests', () => {
  it('sends the prompt, then continues after the client’s tool results with the signed thinking, then takes a new prompt', async () => {
    const store = createAgentStore();
    const request = (runId: string, input: AnthropicInput, continuesRunId?: string) =>
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
    replies = ['thinking-and-tools.sse', 'text.sse', 'text.sse'];

    // 1. The prompt; the model thinks, says a word, and asks for two client tools.
    const prompt = 'Weather and time in Paris?';
    expect(await request('run-1', { prompt, system: 'Be brief.', tools })).toEqual({
      runId: 'run-1',
      status: 'completed',
    });
    expect(wireBody(first).messages).toEqual([{ role: 'user', content: prompt }]);
    expect(wireBody(first).system).toBe('Be brief.');
    expect(store.getSnapshot().runs['run-1']?.pendingToolCallIds).toEqual(['toolu_01', 'toolu_02']);

    // The application runs the tools and settles them in the store.
    const events = createAgentEventFactory({
      sessionId: 'chat-1',
      runId: 'run-1',
      initialSequence: store.getSnapshot().lastSequenceByRun['run-1'] ?? 0,
    });
    const client = { meta: { agentMachines: { executedBy: 'client' } } };
    store.dispatch(events.create('tool.completed', { toolCallId: 'toolu_01', result: { celsius: 14 } }, client));
    store.dispatch(events.create('tool.failed', { toolCallId: 'toolu_02', error: { message: 'No clock' } }, client));

    // 2. The continuation, with the first run's input: the conversation, thinking signed, no new prompt.
    const firstInput = store.getSnapshot().runs['run-1']?.input as AnthropicInput;
    expect((await request('run-2', firstInput, 'run-1')).status).toBe('completed');
    const continued = [
      { role: 'user', content: prompt },
      {
        role: 'assistant',
        content: [
          {
            type: 'thinking',
            thinking: 'I need the weather for two cities.',
            signature: 'EqQBCgIYAhIM1gbcDa9GJwZA2b3h',
          },
          { type: 'text', text: 'Checking.' },
          { type: 'tool_use', id: 'toolu_01', name: 'get_weather', input: { city: 'Paris' } },
          { type: 'tool_use', id: 'toolu_02', name: 'get_time', input: {} },
        ],
      },
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: 'toolu_01', content: '{"celsius":14}' },
          { type: 'tool_result', tool_use_id: 'toolu_02', content: 'No clock', is_error: true },
        ],
      },
    ];
    expect(wireBody(first + 1).messages).toEqual(continued);
    expect(wireBody(first + 1).system).toBe('Be brief.');
    const state = store.getSnapshot();
    expect(state.runs['run-2']?.continuesRunId).toBe('run-1');
    expect(Object.values(state.messages).map(({ runId, role }) => [runId, role])).toEqual([
      ['run-1', 'user'],
      ['run-1', 'assistant'],
      ['run-2', 'assistant'],
    ]);

    // 3. A new prompt: the whole conversation, then the prompt.
    expect((await request('run-3', { prompt: 'next', system: 'Be brief.', tools })).status).toBe('completed');
    expect(wireBody(first + 2).messages).toEqual([
      ...continued,
      { role: 'assistant', content: 'Hello!' },
      { role: 'user', content: 'next' },
    ]);
    expect(store.getSnapshot().issues).toEqual([]);
  });

  it('joins a new prompt to the tool results the conversation ends with, as roles must alternate', async () => {
    const before = server.requests.length;
    replies = ['text.sse'];
    await runAgentProvider({
      provider,
      input: { prompt: 'Never mind, thanks.' },
      sessionId: 's1',
      history: stateOf(
        message('r1', 'prompt', 'user', 'Weather?'),
        toolCall('r1', 'toolu_1', 'completed', { result: 14 }),
      ),
      signal: AbortSignal.timeout(TIMEOUT_MS),
      onEvent: () => {},
    });
    expect(wireBody(before).messages).toEqual([
      { role: 'user', content: 'Weather?' },
      {
        role: 'assistant',
        content: [{ type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { city: 'Paris' } }],
      },
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: 'toolu_1', content: '14' },
          { type: 'text', text: 'Never mind, thanks.' },
        ],
      },
    ]);
  });

  it('takes the system from the input, else from the session’s system messages', async () => {
    const before = server.requests.length;
    replies = ['text.sse', 'text.sse'];
    const history = stateOf(
      message('r1', 'system', 'system', 'Answer in French.'),
      message('r1', 'prompt', 'user', 'Hi'),
    );
    const request = (input: AnthropicInput) =>
      runAgentProvider({
        provider,
        input,
        sessionId: 's1',
        history,
        signal: AbortSignal.timeout(TIMEOUT_MS),
        onEvent: () => {},
      });
    await request({ prompt: 'Again' });
    await request({ prompt: 'Again', system: 'Be brief.' });
    expect(wireBody(before).system).toBe('Answer in French.');
    // The first prompt got no answer: the new one joins its turn.
    expect(wireBody(before).messages).toEqual([
      {
        role: 'user',
        content: [
          { type: 'text', text: 'Hi' },
          { type: 'text', text: 'Again' },
        ],
      },
    ]);
    expect(wireBody(before + 1).system).toBe('Be brief.');
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
    expect(wireBody(before).messages).toEqual([{ role: 'user', content: 'Only this' }]);
    expect(wireBody(before).system).toBeUndefined();
    expect(events.find((event) => event.type === 'message.started')?.payload).toEqual({
      messageId: 'prompt',
      role: 'user',
      content: 'Only this',
    });
  });

  it('fails the run, sending nothing, when the input has no messages, no prompt and nothing to continue', async () => {
    const before = server.requests.length;
    const events: AgentEvent[] = [];
    const result = await runAgentProvider({
      provider,
      input: { system: 'Be brief.' },
      sessionId: 's1',
      runId: 'empty',
      continuation: { runId: 'r0', approvals: [] },
      onEvent: (event) => events.push(event),
    });
    expect(result.status).toBe('failed');
    expect(AgentValidationError.isInstance(result.error)).toBe(true);
    expect(events.map((event) => event.type)).toEqual(['run.started', 'run.failed']);
    expect(events.at(-1)?.payload).toEqual({
      error: {
        message:
          'Invalid Anthropic input: nothing to send: no messages, no prompt, and no conversation in the session to continue',
        code: 'invalid_input',
        retryable: false,
      },
    });
    expect(server.requests.length).toBe(before);
  });
});
