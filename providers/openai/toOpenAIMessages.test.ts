import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { createEmptyAgentState } from '../../machines/agentState';
import { createAgentStore } from '../../machines/createAgentStore';
import { createAgentEventFactory } from '../../protocol/createAgentEventFactory';
import { message, reasoning, stateOf, toolCall } from '../../tests/support/handBuiltAgentState';
import { runAgentProvider } from '../runAgentProvider';
import { createOpenAICompatibleAgentProvider } from './createOpenAICompatibleAgentProvider';
import { toOpenAIMessages } from './toOpenAIMessages';

const call = (id: string, name = 'get_weather', args = '{"city":"Paris"}') => ({
  id,
  type: 'function' as const,
  function: { name, arguments: args },
});

describe('toOpenAIMessages', () => {
  it('sends the user message, the answer with its tool calls, then one tool message per call', () => {
    const state = stateOf(
      message('r1', 'prompt', 'user', 'Weather in Paris?'),
      message('r1', 'm1', 'assistant', 'Let me check.'),
      toolCall('r1', 'call_1', 'completed', { messageId: 'm1', result: { celsius: 14 } }),
      message('r2', 'm2', 'assistant', 'It is 14 °C.'),
    );
    expect(toOpenAIMessages(state, 's1')).toEqual([
      { role: 'user', content: 'Weather in Paris?' },
      { role: 'assistant', content: 'Let me check.', tool_calls: [call('call_1')] },
      { role: 'tool', tool_call_id: 'call_1', content: '{"celsius":14}' },
      { role: 'assistant', content: 'It is 14 °C.' },
    ]);
  });

  it('hangs a tool call on the message it names, else on the run’s assistant message before it, else on one of its own', () => {
    const state = stateOf(
      message('r1', 'prompt', 'user', 'Paris and Rome?'),
      message('r1', 'm1', 'assistant', 'First.'),
      message('r1', 'm2', 'assistant', 'Second.'),
      toolCall('r1', 'named', 'completed', { messageId: 'm1', result: 'a' }),
      toolCall('r1', 'unnamed', 'completed', { result: 'b' }),
      message('r2', 'prompt', 'user', 'And Oslo?'),
      toolCall('r2', 'alone_1', 'completed', { result: 'c' }),
      toolCall('r2', 'alone_2', 'completed', { messageId: 'missing', result: 'd' }),
    );
    expect(toOpenAIMessages(state, 's1')).toEqual([
      { role: 'user', content: 'Paris and Rome?' },
      { role: 'assistant', content: 'First.', tool_calls: [call('named')] },
      { role: 'tool', tool_call_id: 'named', content: 'a' },
      { role: 'assistant', content: 'Second.', tool_calls: [call('unnamed')] },
      { role: 'tool', tool_call_id: 'unnamed', content: 'b' },
      { role: 'user', content: 'And Oslo?' },
      { role: 'assistant', content: null, tool_calls: [call('alone_1'), call('alone_2')] },
      { role: 'tool', tool_call_id: 'alone_1', content: 'c' },
      { role: 'tool', tool_call_id: 'alone_2', content: 'd' },
    ]);
  });

  it('answers a failed call with its error, marked as one, and sends a retry as a call of its own', () => {
    const state = stateOf(
      message('r1', 'prompt', 'user', 'Weather?'),
      toolCall('r1', 'call_1', 'failed', { error: { message: 'Service unavailable', code: 'http_503' } }),
      toolCall('r1', 'call_2', 'completed', { attempt: 2, retryOf: 'call_1', result: { celsius: 14 } }),
    );
    expect(toOpenAIMessages(state, 's1')).toEqual([
      { role: 'user', content: 'Weather?' },
      { role: 'assistant', content: null, tool_calls: [call('call_1'), call('call_2')] },
      { role: 'tool', tool_call_id: 'call_1', content: 'Error: Service unavailable' },
      { role: 'tool', tool_call_id: 'call_2', content: '{"celsius":14}' },
    ]);
  });

  it('sends only settled tool calls: never cancelled ones, nor ones awaiting a result or still streaming', () => {
    const state = stateOf(
      message('r1', 'prompt', 'user', 'Weather?'),
      message('r1', 'm1', 'assistant', 'Checking.'),
      toolCall('r1', 'cancelled', 'cancelled', { messageId: 'm1' }),
      toolCall('r1', 'awaiting', 'awaiting_execution', { messageId: 'm1' }),
      toolCall('r1', 'running', 'running', { messageId: 'm1' }),
      toolCall('r1', 'streaming', 'streaming_arguments', { messageId: 'm1', arguments: '{"ci' }),
    );
    expect(toOpenAIMessages(state, 's1')).toEqual([
      { role: 'user', content: 'Weather?' },
      { role: 'assistant', content: 'Checking.' },
    ]);
  });

  it('keeps the partial text of a cancelled answer, and drops messages with nothing to say', () => {
    const state = stateOf(
      message('r1', 'prompt', 'user', 'Tell me a story.'),
      message('r1', 'm1', 'assistant', 'Once upon a', { status: 'cancelled', reason: 'aborted' }),
      message('r2', 'prompt', 'user', ''),
      message('r2', 'm1', 'assistant', '', { status: 'failed' }),
      message('r2', 'm2', 'assistant', []),
    );
    expect(toOpenAIMessages(state, 's1')).toEqual([
      { role: 'user', content: 'Tell me a story.' },
      { role: 'assistant', content: 'Once upon a' },
    ]);
  });

  it('never sends another session’s entities, reasoning, or tool messages', () => {
    const state = stateOf(
      message('r0', 'prompt', 'user', 'Secret of another chat', { sessionId: 's2' }),
      toolCall('r0', 'other', 'completed', { sessionId: 's2', result: 'x' }),
      message('r1', 'prompt', 'user', 'Hi'),
      reasoning('r1', 'think', 'The user greets me.'),
      message('r1', 'result', 'tool', '{"celsius":14}', { toolCallId: 'call_1' }),
      message('r1', 'm1', 'assistant', 'Hello!'),
    );
    expect(toOpenAIMessages(state, 's1')).toEqual([
      { role: 'user', content: 'Hi' },
      { role: 'assistant', content: 'Hello!' },
    ]);
  });

  it('sends system and developer messages as they are, names, and our parts as OpenAI parts', () => {
    const state = stateOf(
      message('r1', 'system', 'system', 'Be brief.'),
      message('r1', 'developer', 'developer', 'Answer in French.'),
      message(
        'r1',
        'prompt',
        'user',
        [
          { type: 'text', text: 'What is this?' },
          { type: 'image', data: 'iVBOR', mediaType: 'image/png' },
          { type: 'file', data: 'JVBER', mediaType: 'application/pdf', name: 'report.pdf' },
        ],
        { name: 'ada' },
      ),
    );
    expect(toOpenAIMessages(state, 's1')).toEqual([
      { role: 'system', content: 'Be brief.' },
      { role: 'developer', content: 'Answer in French.' },
      {
        role: 'user',
        name: 'ada',
        content: [
          { type: 'text', text: 'What is this?' },
          { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBOR' } },
          { type: 'file', file: { file_data: 'data:application/pdf;base64,JVBER', filename: 'report.pdf' } },
        ],
      },
    ]);
  });

  it('sends a string result as it is, any other as JSON, none as empty text, and arguments never streamed as {}', () => {
    const state = stateOf(
      message('r1', 'prompt', 'user', 'Go'),
      toolCall('r1', 'text', 'completed', { result: 'sunny' }),
      toolCall('r1', 'zero', 'completed', { result: 0 }),
      toolCall('r1', 'null', 'completed', { result: null }),
      toolCall('r1', 'none', 'completed', { name: 'ping', arguments: '' }),
    );
    expect(toOpenAIMessages(state, 's1')).toEqual([
      { role: 'user', content: 'Go' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [call('text'), call('zero'), call('null'), call('none', 'ping', '{}')],
      },
      { role: 'tool', tool_call_id: 'text', content: 'sunny' },
      { role: 'tool', tool_call_id: 'zero', content: '0' },
      { role: 'tool', tool_call_id: 'null', content: 'null' },
      { role: 'tool', tool_call_id: 'none', content: '' },
    ]);
  });

  it('returns nothing for a session without a conversation', () => {
    expect(toOpenAIMessages(createEmptyAgentState(), 's1')).toEqual([]);
  });
});

describe('toOpenAIMessages on the AgentState a store built from recorded streams', () => {
  const replaying = (fixture: string) =>
    createOpenAICompatibleAgentProvider({
      baseURL: 'http://fixture.test/v1',
      model: 'gpt-4o-mini',
      fetch: async () =>
        new Response(readFileSync(new URL(`./__fixtures__/${fixture}`, import.meta.url)), {
          headers: { 'content-type': 'text/event-stream' },
        }),
    });

  it('sends a conversation with reasoning, text, two tool calls settled by the client, and a later answer', async () => {
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
    await run('r1', 'scenario.sse', { prompt: 'Weather in Paris and Rome?' });
    const events = createAgentEventFactory({
      sessionId: 's1',
      runId: 'r1',
      initialSequence: store.getSnapshot().lastSequenceByRun.r1 ?? 0,
    });
    const client = { meta: { agentMachines: { executedBy: 'client' } } };
    store.dispatch(events.create('tool.completed', { toolCallId: 'call_a', result: { celsius: 14 } }, client));
    store.dispatch(events.create('tool.failed', { toolCallId: 'call_b', error: { message: 'No station' } }, client));
    await run('r2', 'text.sse', { prompt: 'Thanks!' });

    const state = store.getSnapshot();
    expect(state.issues).toEqual([]);
    expect(Object.keys(state.reasoning)).toHaveLength(1);
    expect(toOpenAIMessages(state, 's1')).toEqual([
      { role: 'user', content: 'Weather in Paris and Rome?' },
      {
        role: 'assistant',
        content: 'Let me check both cities.',
        tool_calls: [call('call_a'), call('call_b', 'get_weather', '{"city":"Rome"}')],
      },
      { role: 'tool', tool_call_id: 'call_a', content: '{"celsius":14}' },
      { role: 'tool', tool_call_id: 'call_b', content: 'Error: No station' },
      { role: 'user', content: 'Thanks!' },
      { role: 'assistant', content: 'Hello, world' },
    ]);
    expect(toOpenAIMessages(state, 'another-session')).toEqual([]);
  });

  it('leaves out the tool calls a run still waits on', async () => {
    const store = createAgentStore();
    await runAgentProvider({
      provider: replaying('parallel-tool-calls.sse'),
      input: { prompt: 'Weather in Paris and Rome?' },
      sessionId: 's1',
      runId: 'r1',
      onEvent: store.dispatch,
    });
    expect(store.getSnapshot().runs.r1?.pendingToolCallIds).toEqual(['call_Paris', 'call_Rome']);
    expect(toOpenAIMessages(store.getSnapshot(), 's1')).toEqual([
      { role: 'user', content: 'Weather in Paris and Rome?' },
    ]);
  });
});
