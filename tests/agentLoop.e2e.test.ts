// The agent loop through the interaction runtime, against real loopback servers that speak
// the providers' wire formats: a tool call, the client's result through agentActions, the
// automatic continuation with the whole conversation on the wire.
import { fileURLToPath } from 'node:url';
import { type BaseEvent, EventType, type RunAgentInput } from '@ag-ui/core';
import { EventEncoder } from '@ag-ui/encoder';
import { afterAll, describe, expect, it } from 'vitest';
import { selectPendingInput } from '../machines/selectors';
import { getAgentEntityKey } from '../protocol/getAgentEntityKey';
import { createAgUIAgentProvider } from '../providers/agui/createAgUIAgentProvider';
import { createAnthropicAgentProvider } from '../providers/anthropic/createAnthropicAgentProvider';
import { createOpenAICompatibleAgentProvider } from '../providers/openai/createOpenAICompatibleAgentProvider';
import { createXChatRuntime, type XChatRuntime } from '../runtime/createXChatRuntime';
import { startFixtureServer } from './support/fixtureServer';
import { startHttpServer } from './support/httpServer';

function fixtureServer(provider: 'openai' | 'anthropic', replies: string[]) {
  const directory = fileURLToPath(new URL(`../providers/${provider}/__fixtures__`, import.meta.url));
  return startFixtureServer(directory, () => {
    const reply = replies.shift();
    if (reply === undefined) throw new Error('The test server got a request it has no reply for');
    return reply;
  });
}

/** Resolves once the runtime has no run in flight and the run count reached `runs`. */
async function settled(chat: XChatRuntime<unknown>, runs: number): Promise<void> {
  const deadline = Date.now() + 5_000;
  for (;;) {
    const snapshot = chat.getSnapshot();
    if (!snapshot.isRequesting && Object.keys(snapshot.agentState.runs).length >= runs) return;
    if (Date.now() > deadline) throw new Error('The conversation did not settle in 5 s');
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

describe('the agent loop over OpenAI-compatible chat completions', async () => {
  const replies: string[] = [];
  const server = await fixtureServer('openai', replies);
  afterAll(() => server.close());

  it('runs the tools the model asked for on the client, then continues with the results on the wire', async () => {
    replies.push('scenario.sse', 'text.sse');
    const provider = createOpenAICompatibleAgentProvider({ baseURL: `${server.url}/v1`, model: 'gpt-4o-mini' });
    const chat = createXChatRuntime({ provider, sessionId: 'trip' });
    const tools = [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object' } } }];
    const first = await chat.request({ prompt: 'Weather in Paris and Rome?', tools });
    expect(first.status).toBe('completed');
    const pending = selectPendingInput(chat.getSnapshot().agentState, first.runId).toolCalls;
    expect(pending.map((call) => [call.id, call.parsedArguments])).toEqual([
      ['call_a', { city: 'Paris' }],
      ['call_b', { city: 'Rome' }],
    ]);
    // The application runs each tool; the second result completes the run's input.
    const celsius: Record<string, number> = { Paris: 14, Rome: 21 };
    for (const call of pending) {
      const { city } = call.parsedArguments as { city: string };
      await chat.agentActions.submitToolResult({
        runId: first.runId,
        toolCallId: call.id,
        result: { celsius: celsius[city] },
      });
    }
    await settled(chat, 2);
    expect(server.requests).toHaveLength(2);
    const body = JSON.parse(server.requests[1]?.body ?? '{}');
    expect(body.tools).toEqual(tools);
    expect(body.messages).toEqual([
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
      { role: 'tool', tool_call_id: 'call_b', content: '{"celsius":21}' },
    ]);
    const state = chat.getSnapshot().agentState;
    const continuation = Object.values(state.runs).find((run) => run.continuesRunId === first.runId);
    expect(continuation?.status).toBe('completed');
    expect(Object.values(state.toolCalls).map((call) => [call.id, call.status, call.meta?.agentMachines])).toEqual([
      ['call_a', 'completed', expect.objectContaining({ executedBy: 'client' })],
      ['call_b', 'completed', expect.objectContaining({ executedBy: 'client' })],
    ]);
    expect(chat.getSnapshot().messages.map(({ message }) => [message.role, message.content])).toEqual([
      ['user', 'Weather in Paris and Rome?'],
      ['assistant', 'Let me check both cities.'],
      ['assistant', 'Hello, world'],
    ]);
    expect(state.issues).toEqual([]);
    // Both runs have finished: no command state is kept.
    expect(chat.getSnapshot().commandStates).toEqual({});
  });
});

describe('the agent loop over Anthropic Messages', async () => {
  const replies: string[] = [];
  const server = await fixtureServer('anthropic', replies);
  afterAll(() => server.close());

  it('sends the thinking block with its signature, the tool uses and the client results back', async () => {
    replies.push('thinking-and-tools.sse', 'text.sse');
    const provider = createAnthropicAgentProvider({
      baseURL: server.url,
      apiKey: 'test-key',
      model: 'claude-sonnet-4-5',
      maxTokens: 1024,
    });
    const chat = createXChatRuntime({ provider, sessionId: 'trip' });
    const first = await chat.request({ prompt: 'Weather and time in Paris?' });
    expect(first.status).toBe('completed');
    const pending = selectPendingInput(chat.getSnapshot().agentState, first.runId).toolCalls;
    expect(pending.map((call) => call.id)).toEqual(['toolu_01', 'toolu_02']);
    await chat.agentActions.submitToolResult({ runId: first.runId, toolCallId: 'toolu_01', result: { celsius: 14 } });
    expect(server.requests).toHaveLength(1);
    await chat.agentActions.submitToolResult({
      runId: first.runId,
      toolCallId: 'toolu_02',
      error: { message: 'clock unavailable' },
    });
    await settled(chat, 2);
    const messages = JSON.parse(server.requests[1]?.body ?? '{}').messages as Array<{ role: string; content: unknown }>;
    expect(messages.map((message) => message.role)).toEqual(['user', 'assistant', 'user']);
    const assistant = messages[1]?.content as Array<Record<string, unknown>>;
    expect(assistant.map((block) => block.type)).toEqual(['thinking', 'text', 'tool_use', 'tool_use']);
    expect(assistant[0]).toMatchObject({ type: 'thinking', signature: expect.any(String) });
    expect(messages[2]?.content).toEqual([
      { type: 'tool_result', tool_use_id: 'toolu_01', content: '{"celsius":14}' },
      { type: 'tool_result', tool_use_id: 'toolu_02', content: 'clock unavailable', is_error: true },
    ]);
    expect(chat.getSnapshot().agentState.issues).toEqual([]);
  });
});

describe('the agent loop over AG-UI: an interrupt, the user’s answer, the resumed run', async () => {
  const encoder = new EventEncoder();
  /** An agent that stops for approval before deleting files, and deletes them when resumed with an approval. */
  const server = await startHttpServer(async (request, response) => {
    const input = JSON.parse(request.body) as RunAgentInput;
    const { threadId, runId } = input;
    const answer = input.resume?.[0];
    const events: BaseEvent[] =
      answer === undefined
        ? [
            { type: EventType.RUN_STARTED, threadId, runId } as BaseEvent,
            { type: EventType.TOOL_CALL_START, toolCallId: 'call-del', toolCallName: 'delete_files' } as BaseEvent,
            { type: EventType.TOOL_CALL_ARGS, toolCallId: 'call-del', delta: '{"glob":"*.log"}' } as BaseEvent,
            { type: EventType.TOOL_CALL_END, toolCallId: 'call-del' } as BaseEvent,
            {
              type: EventType.RUN_FINISHED,
              threadId,
              runId,
              outcome: {
                type: 'interrupt',
                interrupts: [
                  { id: 'int-1', reason: 'confirmation', message: 'Delete 12 logs?', toolCallId: 'call-del' },
                ],
              },
            } as BaseEvent,
          ]
        : [
            { type: EventType.RUN_STARTED, threadId, runId } as BaseEvent,
            {
              type: EventType.TOOL_CALL_RESULT,
              messageId: 'result-1',
              toolCallId: 'call-del',
              content: answer.status === 'resolved' ? 'deleted 12 files' : 'skipped',
            } as BaseEvent,
            { type: EventType.RUN_FINISHED, threadId, runId, outcome: { type: 'success' } } as BaseEvent,
          ];
    response.writeHead(200, { 'content-type': encoder.getContentType() });
    for (const event of events) response.write(encoder.encodeSSE(event));
    response.end();
  });
  afterAll(() => server.close());

  it('resolveApproval on the waiting run resumes it with resume entries; the resumed run settles it', async () => {
    const chat = createXChatRuntime({ provider: createAgUIAgentProvider({ url: server.url }), sessionId: 'ops' });
    const first = await chat.request({ prompt: 'Clean up the logs' });
    const waiting = selectPendingInput(chat.getSnapshot().agentState, first.runId);
    expect(waiting.approvals.map((approval) => [approval.id, approval.description, approval.toolCallId])).toEqual([
      ['int-1', 'Delete 12 logs?', 'call-del'],
    ]);
    const answered = await chat.agentActions.resolveApproval({
      runId: first.runId,
      approvalId: 'int-1',
      decision: 'approved',
    });
    await settled(chat, 2);
    expect(server.requests).toHaveLength(2);
    const resumedInput = JSON.parse(server.requests[1]?.body ?? '{}') as RunAgentInput;
    expect(resumedInput.threadId).toBe('ops');
    expect(resumedInput.resume).toEqual([
      { interruptId: 'int-1', status: 'resolved', payload: { decision: 'approved' } },
    ]);
    expect(resumedInput.messages.map((message) => message.role)).toEqual(['user', 'assistant']);
    expect(resumedInput.messages[1]).toMatchObject({
      toolCalls: [
        { id: 'call-del', type: 'function', function: { name: 'delete_files', arguments: '{"glob":"*.log"}' } },
      ],
    });
    const state = chat.getSnapshot().agentState;
    expect(state.approvals[getAgentEntityKey(first.runId, 'int-1')]).toMatchObject({
      status: 'resolved',
      decision: 'approved',
    });
    expect(state.toolCalls[getAgentEntityKey(first.runId, 'call-del')]).toMatchObject({
      status: 'completed',
      result: 'deleted 12 files',
    });
    expect(selectPendingInput(state, first.runId)).toEqual({ toolCalls: [], approvals: [] });
    const resumed = Object.values(state.runs).find((run) => run.continuesRunId === first.runId);
    expect(resumed?.status).toBe('completed');
    expect(state.issues).toEqual([]);
    // The answer succeeded once the resumed run resolved it; then both runs finished and its state was dropped.
    expect(answered.commandId).toEqual(expect.any(String));
    expect(chat.getSnapshot().commandStates).toEqual({});
  });

  it('continueRun dismisses an unanswered interrupt: the resume entry is cancelled, the approval rejected', async () => {
    const chat = createXChatRuntime({
      provider: createAgUIAgentProvider({ url: server.url }),
      sessionId: 'ops-2',
      autoContinue: false,
    });
    const first = await chat.request({ prompt: 'Clean up the logs' });
    const before = server.requests.length;
    await chat.agentActions.continueRun({ runId: first.runId });
    expect(JSON.parse(server.requests[before]?.body ?? '{}').resume).toEqual([
      { interruptId: 'int-1', status: 'cancelled' },
    ]);
    const state = chat.getSnapshot().agentState;
    expect(state.approvals[getAgentEntityKey(first.runId, 'int-1')]).toMatchObject({ decision: 'rejected' });
    expect(state.toolCalls[getAgentEntityKey(first.runId, 'call-del')]).toMatchObject({ result: 'skipped' });
    expect(state.issues).toEqual([]);
  });
});
