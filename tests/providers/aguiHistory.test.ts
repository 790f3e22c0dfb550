import { fileURLToPath } from 'node:url';
import type { Message as AgUIMessage } from '@ag-ui/core';
import { RunAgentInputSchema } from '@ag-ui/core/schemas';
import { afterAll, describe, expect, it } from 'vitest';
import {
  type AgentEntityKind,
  type AgentEntityStateMap,
  type AgentMessageState,
  type AgentReasoningState,
  type AgentState,
  type AgentToolCallState,
  createEmptyAgentState,
} from '../../machines/agentState';
import { getAgentEntityKey } from '../../protocol/getAgentEntityKey';
import { createAgUIAgentProvider } from '../../providers/agui/createAgUIAgentProvider';
import { toAgUIMessages } from '../../providers/agui/toAgUIMessages';
import { runAgentProviderFixture } from '../../providers/testing/runAgentProviderFixture';
import { startFixtureServer } from '../support/fixtureServer';

type Entity = { [Kind in AgentEntityKind]: { kind: Kind; record: AgentEntityStateMap[Kind] } }[AgentEntityKind];

const CONTAINER = {
  message: 'messages',
  reasoning: 'reasoning',
  toolCall: 'toolCalls',
  approval: 'approvals',
  task: 'tasks',
  artifact: 'artifacts',
} as const;

/** An AgentState holding these entities, in this order. */
function stateOf(...entities: Entity[]): AgentState {
  const state = createEmptyAgentState();
  for (const { kind, record } of entities) {
    (state[CONTAINER[kind]] as Record<string, typeof record>)[record.key] = record;
    state.order.push({ kind, key: record.key });
  }
  return state;
}

function base(runId: string, id: string, sessionId: string) {
  return { id, key: getAgentEntityKey(runId, id), runId, sessionId, createdAt: 1, updatedAt: 1 };
}

function message(
  runId: string,
  id: string,
  role: AgentMessageState['role'],
  content: AgentMessageState['content'],
  extra: Partial<AgentMessageState> = {},
): Entity {
  return {
    kind: 'message',
    record: { ...base(runId, id, 'thread-1'), role, content, status: 'completed', ...extra },
  };
}

function toolCall(runId: string, id: string, extra: Partial<AgentToolCallState> = {}): Entity {
  return {
    kind: 'toolCall',
    record: {
      ...base(runId, id, 'thread-1'),
      name: 'search',
      arguments: '{"q":"x"}',
      status: 'completed',
      attempt: 1,
      ...extra,
    },
  };
}

function reasoning(runId: string, id: string, content: string, extra: Partial<AgentReasoningState> = {}): Entity {
  return {
    kind: 'reasoning',
    record: { ...base(runId, id, 'thread-1'), redacted: false, content, status: 'completed', ...extra },
  };
}

/** Whether the messages make a RunAgentInput that AG-UI's own schema accepts. */
function acceptedByAgUI(messages: AgUIMessage[]): boolean {
  return RunAgentInputSchema.safeParse({ threadId: 't', runId: 'r', messages, tools: [], context: [] }).success;
}

describe('toAgUIMessages: the conversation of hand-built AgentStates', () => {
  it('keeps the order and the ids, puts tool calls on their assistant message and answers settled ones', () => {
    const state = stateOf(
      message('run-1', 'sys-1', 'system', 'Be brief.'),
      message('run-1', 'u-1', 'user', 'Weather in Paris and Rome?', { name: 'ada' }),
      message('run-1', 'msg-1', 'assistant', 'Checking.'),
      toolCall('run-1', 'call-a', {
        messageId: 'msg-1',
        result: { celsius: 14 },
        meta: { agui: { resultMessageId: 'tool-msg-a' } },
      }),
      toolCall('run-1', 'call-b', {
        messageId: 'msg-1',
        status: 'failed',
        error: { message: 'Rome is unreachable' },
      }),
      toolCall('run-1', 'call-c', { messageId: 'msg-1', status: 'cancelled', reason: 'aborted' }),
      toolCall('run-1', 'call-d', { messageId: 'msg-1', status: 'awaiting_execution' }),
      message('run-1', 'msg-2', 'assistant', 'Paris is 14 °C.'),
      message('run-2', 'dev-1', 'developer', [{ type: 'text', text: 'Use metric.' }]),
    );
    const messages = toAgUIMessages(state, 'thread-1');
    expect(messages).toEqual([
      { id: 'sys-1', role: 'system', content: 'Be brief.' },
      { id: 'u-1', role: 'user', content: 'Weather in Paris and Rome?', name: 'ada' },
      {
        id: 'msg-1',
        role: 'assistant',
        content: 'Checking.',
        toolCalls: ['call-a', 'call-b', 'call-c', 'call-d'].map((id) => ({
          id,
          type: 'function',
          function: { name: 'search', arguments: '{"q":"x"}' },
        })),
      },
      { id: 'tool-msg-a', role: 'tool', toolCallId: 'call-a', content: '{"celsius":14}' },
      { id: 'call-b:result', role: 'tool', toolCallId: 'call-b', content: '', error: 'Rome is unreachable' },
      { id: 'call-c:result', role: 'tool', toolCallId: 'call-c', content: '', error: 'cancelled: aborted' },
      // call-d awaits execution: its result is still to come.
      { id: 'msg-2', role: 'assistant', content: 'Paris is 14 °C.' },
      { id: 'dev-1', role: 'developer', content: 'Use metric.' },
    ]);
    expect(acceptedByAgUI(messages)).toBe(true);
  });

  it('leaves out other sessions, activities, empty assistant messages and calls still streaming', () => {
    const other = message('run-9', 'u-9', 'user', 'Not this thread');
    other.record.sessionId = 'thread-2';
    const state = stateOf(
      message('run-1', 'u-1', 'user', 'Hi'),
      other,
      message('run-1', 'msg-empty', 'assistant', ''),
      toolCall('run-1', 'call-partial', { status: 'streaming_arguments', arguments: '{"q":' }),
      message('run-1', 'msg-1', 'assistant', 'Hello!'),
    );
    state.activities[getAgentEntityKey('run-1', 'plan-1')] = {
      id: 'plan-1',
      key: getAgentEntityKey('run-1', 'plan-1'),
      runId: 'run-1',
      sessionId: 'thread-1',
      activityType: 'PLAN',
      content: {},
      createdAt: 1,
      updatedAt: 1,
    };
    expect(toAgUIMessages(state, 'thread-1')).toEqual([
      { id: 'u-1', role: 'user', content: 'Hi' },
      { id: 'msg-1', role: 'assistant', content: 'Hello!' },
    ]);
    expect(toAgUIMessages(state, 'thread-2')).toEqual([{ id: 'u-9', role: 'user', content: 'Not this thread' }]);
    expect(toAgUIMessages(state, 'thread-3')).toEqual([]);
  });

  it("places a tool call without a message on the run's latest assistant message, else on one of its own", () => {
    const state = stateOf(
      toolCall('run-1', 'call-first'),
      message('run-1', 'msg-1', 'assistant', 'Searching again.'),
      toolCall('run-1', 'call-second'),
      // Named message that never streamed text: the assistant turn of that id, as the AG-UI client builds it.
      toolCall('run-2', 'call-third', { messageId: 'turn-3' }),
      toolCall('run-2', 'call-fourth', { messageId: 'turn-3' }),
      // A tool call naming a message that arrives after it still joins that message.
      toolCall('run-3', 'call-early', { messageId: 'msg-late' }),
      message('run-3', 'msg-late', 'assistant', 'Late text.'),
    );
    const calls = (message: AgUIMessage) => (message.role === 'assistant' ? message.toolCalls?.map((c) => c.id) : []);
    const messages = toAgUIMessages(state, 'thread-1');
    expect(messages.map((message) => [message.id, message.role, calls(message)])).toEqual([
      ['call-first', 'assistant', ['call-first']],
      ['call-first:result', 'tool', []],
      ['msg-1', 'assistant', ['call-second']],
      ['call-second:result', 'tool', []],
      ['turn-3', 'assistant', ['call-third', 'call-fourth']],
      ['call-third:result', 'tool', []],
      ['call-fourth:result', 'tool', []],
      ['msg-late', 'assistant', ['call-early']],
      ['call-early:result', 'tool', []],
    ]);
    expect(acceptedByAgUI(messages)).toBe(true);
  });

  it('sends readable reasoning as text and redacted reasoning only as its encrypted value', () => {
    const state = stateOf(
      message('run-1', 'u-1', 'user', 'Think first'),
      reasoning('run-1', 'think-1', 'Two lookups.'),
      // AG-UI's REASONING_ENCRYPTED_VALUE, as the provider maps it: it goes back on what it names.
      reasoning('run-1', 'encrypted:think-1', 'opaque-1', {
        redacted: true,
        meta: { agui: { subtype: 'message', entityId: 'think-1' } },
      }),
      message('run-1', 'msg-1', 'assistant', 'Looking.'),
      toolCall('run-1', 'call-1', { messageId: 'msg-1' }),
      reasoning('run-1', 'encrypted:call-1', 'opaque-2', {
        redacted: true,
        meta: { agui: { subtype: 'tool-call', entityId: 'call-1' } },
      }),
      reasoning('run-1', 'encrypted:nowhere', 'opaque-3', {
        redacted: true,
        meta: { agui: { subtype: 'message', entityId: 'nowhere' } },
      }),
      // Another runtime's redacted reasoning (an Anthropic redacted_thinking block).
      reasoning('run-1', 'redacted-1', 'signature-data', { redacted: true }),
      reasoning('run-1', 'think-empty', ''),
    );
    const messages = toAgUIMessages(state, 'thread-1');
    expect(messages).toEqual([
      { id: 'u-1', role: 'user', content: 'Think first' },
      { id: 'think-1', role: 'reasoning', content: 'Two lookups.', encryptedValue: 'opaque-1' },
      {
        id: 'msg-1',
        role: 'assistant',
        content: 'Looking.',
        toolCalls: [
          {
            id: 'call-1',
            type: 'function',
            function: { name: 'search', arguments: '{"q":"x"}' },
            encryptedValue: 'opaque-2',
          },
        ],
      },
      { id: 'call-1:result', role: 'tool', toolCallId: 'call-1', content: '' },
      { id: 'redacted-1', role: 'reasoning', content: '', encryptedValue: 'signature-data' },
    ]);
    expect(JSON.stringify(messages)).not.toContain('opaque-3');
    expect(acceptedByAgUI(messages)).toBe(true);
  });

  it('gives a repeated id the run-scoped key, and lets a tool message already in the history answer its call', () => {
    const state = stateOf(
      message('run-1', 'prompt', 'user', 'First'),
      message('run-1', 'a-0', 'assistant', 'Calling.'),
      toolCall('run-1', 'call-0', { messageId: 'a-0', result: 'earlier output' }),
      message('run-1', 't-0', 'tool', 'earlier output', { toolCallId: 'call-0' }),
      message('run-2', 'prompt', 'user', 'Second'),
    );
    expect(toAgUIMessages(state, 'thread-1')).toEqual([
      { id: 'prompt', role: 'user', content: 'First' },
      {
        id: 'a-0',
        role: 'assistant',
        content: 'Calling.',
        toolCalls: [{ id: 'call-0', type: 'function', function: { name: 'search', arguments: '{"q":"x"}' } }],
      },
      { id: 't-0', role: 'tool', toolCallId: 'call-0', content: 'earlier output' },
      { id: 'run-2:prompt', role: 'user', content: 'Second' },
    ]);
  });

  it('turns structured content back into AG-UI parts, and subagent attribution into subagentRunId', () => {
    const state = stateOf(
      message('run-1', 'u-1', 'user', [
        { type: 'text', text: 'What is on this picture?' },
        { type: 'agui.image', data: { type: 'image', source: { type: 'url', value: 'https://x.test/a.png' } } },
        { type: 'image', data: 'aGk=', mediaType: 'image/png' },
        { type: 'file', url: 'https://x.test/a.pdf', mediaType: 'application/pdf' },
        { type: 'company.chart', data: { bars: 3 } },
      ]),
      message('run-1', 'msg-1', 'assistant', [{ type: 'text', text: 'A cat.' }], {
        meta: { agui: { subagentRunId: 'sub-1' } },
      }),
      toolCall('run-1', 'call-1', {
        messageId: 'msg-1',
        result: [{ type: 'text', text: 'cat: 0.98' }],
        meta: { agui: { subagentRunId: 'sub-1' } },
      }),
    );
    const messages = toAgUIMessages(state, 'thread-1');
    expect(messages).toEqual([
      {
        id: 'u-1',
        role: 'user',
        content: [
          { type: 'text', text: 'What is on this picture?' },
          { type: 'image', source: { type: 'url', value: 'https://x.test/a.png' } },
          { type: 'image', source: { type: 'data', value: 'aGk=', mimeType: 'image/png' } },
          { type: 'document', source: { type: 'url', value: 'https://x.test/a.pdf', mimeType: 'application/pdf' } },
        ],
      },
      {
        id: 'msg-1',
        role: 'assistant',
        content: 'A cat.',
        subagentRunId: 'sub-1',
        toolCalls: [{ id: 'call-1', type: 'function', function: { name: 'search', arguments: '{"q":"x"}' } }],
      },
      {
        id: 'call-1:result',
        role: 'tool',
        toolCallId: 'call-1',
        content: [{ type: 'text', text: 'cat: 0.98' }],
        subagentRunId: 'sub-1',
      },
    ]);
    expect(acceptedByAgUI(messages)).toBe(true);
  });
});

describe('toAgUIMessages: AgentState from recorded AG-UI streams through a real store', () => {
  const fixtures = fileURLToPath(new URL('../../providers/agui/__fixtures__', import.meta.url));
  const serverPromise = startFixtureServer(
    fixtures,
    (body) => (body as { forwardedProps: { fixture: string } }).forwardedProps.fixture,
  );
  afterAll(async () => (await serverPromise).close());
  const runFixture = async (fixture: string) => {
    const provider = createAgUIAgentProvider({ url: (await serverPromise).url });
    return runAgentProviderFixture(provider, { prompt: 'Plan a day in Paris', forwardedProps: { fixture } });
  };

  it('gives back the streamed conversation with the ids the agent sent', async () => {
    const { state } = await runFixture('text-and-parallel-tools.sse');
    const messages = toAgUIMessages(state, 'contract-session');
    const call = (id: string, city: string) => ({
      id,
      type: 'function',
      function: { name: 'get_weather', arguments: `{"city":"${city}"}` },
    });
    expect(messages).toEqual([
      { id: 'prompt-contract-run', role: 'user', content: 'Plan a day in Paris' },
      {
        id: 'msg-1',
        role: 'assistant',
        content: 'Checking the weather in Paris and Zürich ☀️',
        toolCalls: [call('call-a', 'Paris'), call('call-b', 'Zürich')],
      },
      { id: 'tool-msg-a', role: 'tool', toolCallId: 'call-a', content: '{"celsius":14}' },
      { id: 'tool-msg-b', role: 'tool', toolCallId: 'call-b', content: '{"celsius":9}' },
      { id: 'msg-2', role: 'assistant', content: 'Paris 14 °C, Zürich 9 °C.' },
    ]);
    expect(acceptedByAgUI(messages)).toBe(true);
  });

  it('keeps reasoning with its encrypted value and snapshot messages, and leaves activities out', async () => {
    const { state } = await runFixture('reasoning-state-snapshots.sse');
    const messages = toAgUIMessages(state, 'contract-session');
    expect(messages).toEqual([
      { id: 'prompt-contract-run', role: 'user', content: 'Plan a day in Paris' },
      { id: 'think-1', role: 'reasoning', content: 'The user wants a plan.', encryptedValue: 'gAAAAB-opaque' },
      // Hydrated from the MESSAGES_SNAPSHOT, which the prompt's run did not know.
      { id: 'u-1', role: 'user', content: 'Plan a day in Paris' },
      { id: 'a-0', role: 'assistant', content: 'Earlier answer from the server' },
      { id: 't-0', role: 'tool', toolCallId: 'call-0', content: 'earlier tool output' },
      { id: 'msg-1', role: 'assistant', content: 'Here is the plan.' },
    ]);
    expect(acceptedByAgUI(messages)).toBe(true);
  });
});
