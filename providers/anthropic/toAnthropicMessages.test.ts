import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { createEmptyAgentState } from '../../machines/agentState';
import { createAgentStore } from '../../machines/createAgentStore';
import { createAgentEventFactory } from '../../protocol/createAgentEventFactory';
import { message, reasoning, stateOf, toolCall } from '../../tests/support/handBuiltAgentState';
import { runAgentProvider } from '../runAgentProvider';
import { createAnthropicAgentProvider } from './createAnthropicAgentProvider';
import { toAnthropicMessages, toAnthropicSystem } from './toAnthropicMessages';

const signed = (signature: string) => ({ anthropic: { signature } });
const toolUse = (id: string, input: unknown = { city: 'Paris' }, name = 'get_weather') => ({
  type: 'tool_use',
  id,
  name,
  input,
});

describe('toAnthropicMessages', () => {
  it('sends a run as one assistant turn (signed thinking, text, tool_use), then its results in a user turn', () => {
    const state = stateOf(
      message('r1', 'prompt', 'user', 'Weather in Paris?'),
      reasoning('r1', 'msg_1:0', 'I need the weather.', { meta: signed('sig-1') }),
      message('r1', 'msg_1:1', 'assistant', 'Checking.'),
      toolCall('r1', 'toolu_1', 'completed', { messageId: 'msg_1:1', result: { celsius: 14 } }),
      toolCall('r1', 'toolu_2', 'completed', {
        name: 'get_time',
        parsedArguments: {},
        arguments: '{}',
        result: '12:00',
      }),
      message('r2', 'msg_2:0', 'assistant', 'It is 14 °C at noon.'),
    );
    expect(toAnthropicMessages(state, 's1')).toEqual([
      { role: 'user', content: 'Weather in Paris?' },
      {
        role: 'assistant',
        content: [
          { type: 'thinking', thinking: 'I need the weather.', signature: 'sig-1' },
          { type: 'text', text: 'Checking.' },
          toolUse('toolu_1'),
          toolUse('toolu_2', {}, 'get_time'),
        ],
      },
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: 'toolu_1', content: '{"celsius":14}' },
          { type: 'tool_result', tool_use_id: 'toolu_2', content: '12:00' },
        ],
      },
      { role: 'assistant', content: 'It is 14 °C at noon.' },
    ]);
  });

  it('sends redacted thinking as redacted_thinking, and leaves out reasoning the API could not take back', () => {
    const state = stateOf(
      message('r1', 'prompt', 'user', 'Hi'),
      reasoning('r1', 'redacted', 'EmwKAhgB', { redacted: true }),
      reasoning('r1', 'unsigned', 'Reasoning from another provider.'),
      reasoning('r1', 'cut', 'Half a thou', { status: 'cancelled' }),
      message('r1', 'm1', 'assistant', 'Hello!'),
    );
    expect(toAnthropicMessages(state, 's1')).toEqual([
      { role: 'user', content: 'Hi' },
      {
        role: 'assistant',
        content: [
          { type: 'redacted_thinking', data: 'EmwKAhgB' },
          { type: 'text', text: 'Hello!' },
        ],
      },
    ]);
  });

  it('marks a failed call’s result as an error, sends a retry as a tool_use of its own, and input {} when unparsed', () => {
    const state = stateOf(
      message('r1', 'prompt', 'user', 'Weather?'),
      toolCall('r1', 'toolu_1', 'failed', { error: { message: 'Service unavailable' } }),
      toolCall('r1', 'toolu_2', 'completed', { attempt: 2, retryOf: 'toolu_1', result: { celsius: 14 } }),
      toolCall('r1', 'toolu_3', 'completed', { parsedArguments: ['not', 'an', 'object'] }),
    );
    expect(toAnthropicMessages(state, 's1')).toEqual([
      { role: 'user', content: 'Weather?' },
      { role: 'assistant', content: [toolUse('toolu_1'), toolUse('toolu_2'), toolUse('toolu_3', {})] },
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: 'toolu_1', content: 'Service unavailable', is_error: true },
          { type: 'tool_result', tool_use_id: 'toolu_2', content: '{"celsius":14}' },
          { type: 'tool_result', tool_use_id: 'toolu_3' },
        ],
      },
    ]);
  });

  it('leaves out unsettled tool calls, server tools, and a turn with nothing but thinking', () => {
    const state = stateOf(
      message('r1', 'prompt', 'user', 'Weather?'),
      message('r1', 'm1', 'assistant', 'Checking.'),
      toolCall('r1', 'cancelled', 'cancelled'),
      toolCall('r1', 'awaiting', 'awaiting_execution'),
      toolCall('r1', 'search', 'completed', {
        name: 'web_search',
        result: [],
        meta: { anthropic: { serverTool: true } },
      }),
      message('r2', 'prompt', 'user', 'Still there?'),
      reasoning('r2', 'think', 'Hmm.', { meta: signed('sig') }),
      message('r2', 'm1', 'assistant', '', { status: 'cancelled' }),
    );
    expect(toAnthropicMessages(state, 's1')).toEqual([
      { role: 'user', content: 'Weather?' },
      { role: 'assistant', content: 'Checking.' },
      { role: 'user', content: 'Still there?' },
    ]);
  });

  it('merges turns of the same role, tool results first, as the API wants roles to alternate', () => {
    const state = stateOf(
      message('r1', 'prompt', 'user', 'Weather?'),
      toolCall('r1', 'toolu_1', 'completed', { result: 14 }),
      message('r2', 'prompt', 'user', 'Never mind.'),
      message('r3', 'prompt', 'user', 'Hello?'),
      message('r3', 'm1', 'assistant', 'Once upon a', { status: 'cancelled', reason: 'aborted' }),
    );
    expect(toAnthropicMessages(state, 's1')).toEqual([
      { role: 'user', content: 'Weather?' },
      { role: 'assistant', content: [toolUse('toolu_1')] },
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: 'toolu_1', content: '14' },
          { type: 'text', text: 'Never mind.' },
          { type: 'text', text: 'Hello?' },
        ],
      },
      { role: 'assistant', content: 'Once upon a' },
    ]);
  });

  it('never sends another session’s entities, system or developer messages, or tool messages', () => {
    const state = stateOf(
      message('r0', 'prompt', 'user', 'Secret of another chat', { sessionId: 's2' }),
      toolCall('r0', 'other', 'completed', { sessionId: 's2', result: 'x' }),
      message('r1', 'system', 'system', 'Be brief.'),
      message('r1', 'prompt', 'user', 'Hi'),
      message('r1', 'result', 'tool', '14', { toolCallId: 'toolu_1' }),
      message('r1', 'm1', 'assistant', 'Hello!'),
    );
    expect(toAnthropicMessages(state, 's1')).toEqual([
      { role: 'user', content: 'Hi' },
      { role: 'assistant', content: 'Hello!' },
    ]);
  });

  it('sends images and files as image and document blocks', () => {
    const state = stateOf(
      message('r1', 'prompt', 'user', [
        { type: 'text', text: 'What is this?' },
        { type: 'image', url: 'https://example.com/cat.png' },
        { type: 'file', data: 'JVBER', mediaType: 'application/pdf', name: 'report.pdf' },
      ]),
    );
    expect(toAnthropicMessages(state, 's1')).toEqual([
      {
        role: 'user',
        content: [
          { type: 'text', text: 'What is this?' },
          { type: 'image', source: { type: 'url', url: 'https://example.com/cat.png' } },
          {
            type: 'document',
            source: { type: 'base64', media_type: 'application/pdf', data: 'JVBER' },
            title: 'report.pdf',
          },
        ],
      },
    ]);
  });

  it('returns nothing for a session without a conversation', () => {
    expect(toAnthropicMessages(createEmptyAgentState(), 's1')).toEqual([]);
  });
});

describe('toAnthropicSystem', () => {
  it('joins the session’s system and developer messages by blank lines, text parts as their text', () => {
    const state = stateOf(
      message('r0', 'system', 'system', 'Another chat’s rules', { sessionId: 's2' }),
      message('r1', 'system', 'system', 'Be brief.'),
      message('r1', 'prompt', 'user', 'Hi'),
      message('r1', 'developer', 'developer', [
        { type: 'text', text: 'Answer ' },
        { type: 'text', text: 'in French.' },
      ]),
    );
    expect(toAnthropicSystem(state, 's1')).toBe('Be brief.\n\nAnswer in French.');
    expect(toAnthropicSystem(state, 's3')).toBeUndefined();
  });
});

describe('toAnthropicMessages on the AgentState a store built from recorded streams', () => {
  const replaying = (fixture: string) =>
    createAnthropicAgentProvider({
      baseURL: 'http://fixture.test',
      model: 'claude-sonnet-4-5',
      maxTokens: 1024,
      fetch: async () =>
        new Response(readFileSync(new URL(`./__fixtures__/${fixture}`, import.meta.url)), {
          headers: { 'content-type': 'text/event-stream' },
        }),
    });

  it('sends thinking with its signature, text, tool calls settled by the client, and later turns', async () => {
    const store = createAgentStore();
    const run = (runId: string, fixture: string, input: { prompt: string }) =>
      runAgentProvider({
        provider: replaying(fixture),
        input,
        sessionId: 's1',
        runId,
        history: store.getSnapshot(),
        onEvent: store.dispatch,
      });
    await run('r1', 'thinking-and-tools.sse', { prompt: 'Weather and time in Paris?' });
    const events = createAgentEventFactory({
      sessionId: 's1',
      runId: 'r1',
      initialSequence: store.getSnapshot().lastSequenceByRun.r1 ?? 0,
    });
    const client = { meta: { agentMachines: { executedBy: 'client' } } };
    store.dispatch(events.create('tool.completed', { toolCallId: 'toolu_01', result: { celsius: 14 } }, client));
    store.dispatch(events.create('tool.failed', { toolCallId: 'toolu_02', error: { message: 'No clock' } }, client));
    await run('r2', 'redacted-thinking.sse', { prompt: 'Thanks!' });

    const state = store.getSnapshot();
    expect(state.issues).toEqual([]);
    expect(toAnthropicMessages(state, 's1')).toEqual([
      { role: 'user', content: 'Weather and time in Paris?' },
      {
        role: 'assistant',
        content: [
          {
            type: 'thinking',
            thinking: 'I need the weather for two cities.',
            signature: 'EqQBCgIYAhIM1gbcDa9GJwZA2b3h',
          },
          { type: 'text', text: 'Checking.' },
          toolUse('toolu_01'),
          toolUse('toolu_02', {}, 'get_time'),
        ],
      },
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: 'toolu_01', content: '{"celsius":14}' },
          { type: 'tool_result', tool_use_id: 'toolu_02', content: 'No clock', is_error: true },
          { type: 'text', text: 'Thanks!' },
        ],
      },
      {
        role: 'assistant',
        content: [
          { type: 'redacted_thinking', data: 'EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP' },
          { type: 'text', text: 'Done.' },
        ],
      },
    ]);
    expect(toAnthropicMessages(state, 'another-session')).toEqual([]);
  });

  it('leaves out the tool calls a run still waits on, and keeps the rest of its turn', async () => {
    const store = createAgentStore();
    await runAgentProvider({
      provider: replaying('thinking-and-tools.sse'),
      input: { prompt: 'Weather?' },
      sessionId: 's1',
      runId: 'r1',
      onEvent: store.dispatch,
    });
    expect(store.getSnapshot().runs.r1?.pendingToolCallIds).toEqual(['toolu_01', 'toolu_02']);
    expect(toAnthropicMessages(store.getSnapshot(), 's1')).toEqual([
      { role: 'user', content: 'Weather?' },
      {
        role: 'assistant',
        content: [
          {
            type: 'thinking',
            thinking: 'I need the weather for two cities.',
            signature: 'EqQBCgIYAhIM1gbcDa9GJwZA2b3h',
          },
          { type: 'text', text: 'Checking.' },
        ],
      },
    ]);
  });
});
