// createAgent against loopback servers that speak the OpenAI-compatible and Anthropic wire
// formats and behave like a model: a tool call first, then text that uses its result.
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import * as z from 'zod/mini';
import { selectPendingInput } from '../machines/selectors';
import type { AgentEvent } from '../protocol/eventSchemas';
import { getAgentEntityKey } from '../protocol/getAgentEntityKey';
import type { AnyAgentProvider } from '../providers/AgentProvider';
import { type AgentOptions, createAgent } from '../providers/agent/createAgent';
import { defineAgentTool } from '../providers/agent/defineAgentTool';
import { createAnthropicAgentProvider } from '../providers/anthropic/createAnthropicAgentProvider';
import { createOpenAICompatibleAgentProvider } from '../providers/openai/createOpenAICompatibleAgentProvider';
import { describeAgentProviderContract } from '../providers/testing/describeAgentProviderContract';
import { createXChatRuntime, type XChatRuntime } from '../runtime/createXChatRuntime';
import type { XChatSnapshot } from '../runtime/xChatSnapshot';
import {
  type ModelReply,
  type ModelRequest,
  type ModelServer,
  type ModelWireFormat,
  startModelServer,
} from './support/modelServer';

const servers: ModelServer[] = [];
const chats: XChatRuntime<unknown>[] = [];
afterEach(async () => {
  vi.useRealTimers();
  for (const chat of chats.splice(0)) chat.destroy();
  await Promise.all(servers.splice(0).map((server) => server.close()));
});

async function model(format: ModelWireFormat, reply: (request: ModelRequest) => ModelReply | Promise<ModelReply>) {
  const server = await startModelServer(format, reply);
  servers.push(server);
  const provider: AnyAgentProvider =
    format === 'openai'
      ? createOpenAICompatibleAgentProvider({ baseURL: server.baseURL, apiKey: 'sk-test', model: 'gpt-4o-mini' })
      : createAnthropicAgentProvider({
          baseURL: server.baseURL,
          apiKey: 'test-key',
          model: 'claude-sonnet-4-5',
          maxTokens: 1024,
        });
  return { server, provider };
}

/** A runtime over the agent, recording every event the store was given. */
function chatWith(options: AgentOptions) {
  const chat = createXChatRuntime({ provider: createAgent(options), sessionId: 'chat' });
  chats.push(chat as XChatRuntime<unknown>);
  const events: AgentEvent[] = [];
  const dispatch = chat.store.dispatch;
  // The runtime dispatches through its command runner into the store: the store sees every event.
  chat.store.dispatch = (event, admission) => {
    events.push(event as AgentEvent);
    return dispatch(event, admission);
  };
  return { chat, events };
}

/** Resolves with the first snapshot for which `predicate` holds, as the runtime notifies its listeners. */
function when(chat: XChatRuntime<unknown>, predicate: (snapshot: XChatSnapshot) => boolean): Promise<XChatSnapshot> {
  return new Promise((resolve) => {
    let unsubscribe: (() => void) | undefined;
    let done = false;
    const check = () => {
      const snapshot = chat.getSnapshot();
      if (done || !predicate(snapshot)) return;
      done = true;
      unsubscribe?.();
      resolve(snapshot);
    };
    unsubscribe = chat.subscribe(check);
    check();
    if (done) unsubscribe();
  });
}

/** A promise and its resolve (Node 20 has no `Promise.withResolvers`). */
function deferred<Value>() {
  let resolve!: (value: Value) => void;
  const promise = new Promise<Value>((done) => {
    resolve = done;
  });
  return { promise, resolve };
}

const weatherTool = (celsius: Record<string, number>, calls: string[] = []) =>
  defineAgentTool({
    name: 'get_weather',
    description: 'The current weather in a city',
    inputSchema: z.object({ city: z.string() }),
    execute: ({ city }) => {
      calls.push(city);
      return { city, celsius: celsius[city] ?? null };
    },
  });

/** A model that calls `get_weather` for Paris, then says what the result was. */
const weatherModel = (request: ModelRequest): ModelReply => {
  const [result] = request.toolResults;
  if (result === undefined) {
    return {
      reasoning: 'The user wants Paris.',
      text: 'Let me check.',
      toolCalls: [{ id: 'call_paris', name: 'get_weather', arguments: { city: 'Paris' } }],
    };
  }
  const { celsius } = JSON.parse(result.content) as { celsius: number };
  return { text: `It is ${celsius} °C in Paris.` };
};

const typesOf = (events: AgentEvent[], prefix: string) =>
  events.filter((event) => event.type.startsWith(prefix)).map((event) => event.type);

describe.each<ModelWireFormat>(['openai', 'anthropic'])('createAgent over %s', (format) => {
  it('runs a server tool and answers with its result, in one run of two steps', async () => {
    const { server, provider } = await model(format, weatherModel);
    const calls: string[] = [];
    const { chat, events } = chatWith({
      model: provider,
      tools: [weatherTool({ Paris: 14 }, calls)],
      system: 'Be brief.',
    });
    const result = await chat.request({ prompt: 'Weather in Paris?' });
    expect(result.status).toBe('completed');
    expect(calls).toEqual(['Paris']);
    const state = chat.getSnapshot().agentState;
    expect(Object.keys(state.runs)).toEqual([result.runId]);
    expect(state.runs[result.runId]).toMatchObject({
      status: 'completed',
      usage: { inputTokens: 40 },
      output: { stoppedBy: 'answer', steps: 2 },
    });
    expect(state.toolCalls[getAgentEntityKey(result.runId, 'call_paris')]).toMatchObject({
      status: 'completed',
      result: { city: 'Paris', celsius: 14 },
      meta: { agentMachines: { step: 1 } },
    });
    expect(typesOf(events, 'tool.')).toEqual([
      'tool.requested',
      'tool.arguments_delta',
      'tool.arguments_delta',
      'tool.arguments_completed',
      'tool.running',
      'tool.completed',
    ]);
    expect(chat.getSnapshot().messages.map(({ message }) => [message.role, message.content])).toEqual([
      ['user', 'Weather in Paris?'],
      ['assistant', 'Let me check.'],
      ['assistant', 'It is 14 °C in Paris.'],
    ]);
    // The second request: the first step as a turn of its own, then the tool's result.
    const [first, second] = server.modelRequests();
    expect(second?.toolResults).toEqual([
      { toolCallId: 'call_paris', content: '{"city":"Paris","celsius":14}', isError: false },
    ]);
    if (format === 'openai') {
      expect(first?.messages).toEqual([
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'Weather in Paris?' },
      ]);
      expect(first?.body.tools).toEqual([
        {
          type: 'function',
          function: {
            name: 'get_weather',
            description: 'The current weather in a city',
            parameters: {
              type: 'object',
              properties: { city: { type: 'string' } },
              required: ['city'],
            },
          },
        },
      ]);
      expect(second?.messages.slice(1)).toEqual([
        { role: 'user', content: 'Weather in Paris?' },
        {
          role: 'assistant',
          content: 'Let me check.',
          tool_calls: [
            { id: 'call_paris', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } },
          ],
        },
        { role: 'tool', tool_call_id: 'call_paris', content: '{"city":"Paris","celsius":14}' },
      ]);
    } else {
      expect(first?.body.system).toBe('Be brief.');
      expect(first?.body.tools).toEqual([
        {
          name: 'get_weather',
          description: 'The current weather in a city',
          input_schema: {
            type: 'object',
            properties: { city: { type: 'string' } },
            required: ['city'],
          },
        },
      ]);
      expect(second?.messages).toEqual([
        { role: 'user', content: 'Weather in Paris?' },
        {
          role: 'assistant',
          content: [
            // The thinking block goes back with its signature, kept through the agent's run.
            { type: 'thinking', thinking: 'The user wants Paris.', signature: 'sig-0' },
            { type: 'text', text: 'Let me check.' },
            { type: 'tool_use', id: 'call_paris', name: 'get_weather', input: { city: 'Paris' } },
          ],
        },
        {
          role: 'user',
          content: [{ type: 'tool_result', tool_use_id: 'call_paris', content: '{"city":"Paris","celsius":14}' }],
        },
      ]);
    }
    expect(state.issues).toEqual([]);
  });

  it('sends each step of an earlier run as a turn of its own in the next user turn', async () => {
    const { server, provider } = await model(format, (request) =>
      request.index === 2 ? { text: 'Rome is warmer.' } : weatherModel(request),
    );
    const { chat } = chatWith({ model: provider, tools: [weatherTool({ Paris: 14 })] });
    await chat.request({ prompt: 'Weather in Paris?' });
    const second = await chat.request({ prompt: 'And Rome?' });
    expect(second.status).toBe('completed');
    const messages = server.modelRequests()[2]?.messages;
    if (format === 'openai') {
      expect(messages?.map((message) => [message.role, message.content])).toEqual([
        ['user', 'Weather in Paris?'],
        ['assistant', 'Let me check.'],
        ['tool', '{"city":"Paris","celsius":14}'],
        ['assistant', 'It is 14 °C in Paris.'],
        ['user', 'And Rome?'],
      ]);
    } else {
      expect(messages).toEqual([
        { role: 'user', content: 'Weather in Paris?' },
        {
          role: 'assistant',
          content: [
            // The thinking block goes back with its signature, kept through the agent's run.
            { type: 'thinking', thinking: 'The user wants Paris.', signature: 'sig-0' },
            { type: 'text', text: 'Let me check.' },
            { type: 'tool_use', id: 'call_paris', name: 'get_weather', input: { city: 'Paris' } },
          ],
        },
        {
          role: 'user',
          content: [{ type: 'tool_result', tool_use_id: 'call_paris', content: '{"city":"Paris","celsius":14}' }],
        },
        { role: 'assistant', content: 'It is 14 °C in Paris.' },
        { role: 'user', content: 'And Rome?' },
      ]);
    }
  });

  it('runs the calls of one step concurrently, and sends both results', async () => {
    const { server, provider } = await model(format, (request) =>
      request.toolResults.length === 0
        ? {
            toolCalls: [
              { id: 'call_paris', name: 'get_weather', arguments: { city: 'Paris' } },
              { id: 'call_rome', name: 'get_weather', arguments: { city: 'Rome' } },
            ],
          }
        : { text: `${request.toolResults.length} cities checked.` },
    );
    const started = { Paris: deferred<void>(), Rome: deferred<void>() };
    const weather = defineAgentTool({
      name: 'get_weather',
      description: 'The current weather in a city',
      inputSchema: z.object({ city: z.enum(['Paris', 'Rome']) }),
      // Each call returns only once the other has started: run one after the other, they never would.
      execute: async ({ city }) => {
        started[city].resolve();
        await started[city === 'Paris' ? 'Rome' : 'Paris'].promise;
        return { city };
      },
    });
    const { chat, events } = chatWith({ model: provider, tools: [weather] });
    const result = await chat.request({ prompt: 'Paris and Rome?' });
    expect(result.status).toBe('completed');
    const lifecycle = events
      .filter((event) => event.type === 'tool.running' || event.type === 'tool.completed')
      .map((event) => [event.type, (event.payload as { toolCallId: string }).toolCallId]);
    expect(lifecycle.slice(0, 2)).toEqual([
      ['tool.running', 'call_paris'],
      ['tool.running', 'call_rome'],
    ]);
    expect(lifecycle.slice(2).map(([type]) => type)).toEqual(['tool.completed', 'tool.completed']);
    expect(server.modelRequests()[1]?.toolResults).toEqual([
      { toolCallId: 'call_paris', content: '{"city":"Paris"}', isError: false },
      { toolCallId: 'call_rome', content: '{"city":"Rome"}', isError: false },
    ]);
    expect(chat.getSnapshot().messages.at(-1)?.message.content).toBe('2 cities checked.');
  });

  it('fails calls with invalid arguments or of an unknown tool, and the model reads why at the next step', async () => {
    const { server, provider } = await model(format, (request) =>
      request.toolResults.length === 0
        ? {
            toolCalls: [
              { id: 'call_number', name: 'get_weather', arguments: { city: 42 } },
              { id: 'call_broken', name: 'get_weather', arguments: '{"city": "Par' },
              { id: 'call_unknown', name: 'get_time', arguments: { city: 'Paris' } },
            ],
          }
        : { text: `${request.toolResults.filter((result) => result.isError).length} calls failed.` },
    );
    const calls: string[] = [];
    const { chat } = chatWith({ model: provider, tools: [weatherTool({ Paris: 14 }, calls)] });
    const result = await chat.request({ prompt: 'Weather?' });
    expect(result.status).toBe('completed');
    expect(calls).toEqual([]);
    const state = chat.getSnapshot().agentState;
    const failure = (toolCallId: string) => state.toolCalls[getAgentEntityKey(result.runId, toolCallId)]?.error;
    expect(failure('call_number')).toMatchObject({
      code: 'invalid_arguments',
      message: 'Invalid arguments for get_weather: city: Invalid input: expected string, received number',
      data: { issues: [{ path: 'city' }] },
    });
    expect(failure('call_broken')).toMatchObject({
      code: 'invalid_arguments',
      message: expect.stringMatching(/^The arguments of get_weather are not valid JSON: /),
    });
    expect(failure('call_unknown')).toEqual({
      code: 'unknown_tool',
      message: 'There is no tool named get_time; the tools are: get_weather',
    });
    const results = server.modelRequests()[1]?.toolResults ?? [];
    expect(results.map((toolResult) => [toolResult.toolCallId, toolResult.isError])).toEqual([
      ['call_number', true],
      ['call_broken', true],
      ['call_unknown', true],
    ]);
    expect(results[0]?.content).toContain('city: Invalid input: expected string, received number');
    expect(results[2]?.content).toContain('There is no tool named get_time');
    expect(chat.getSnapshot().messages.at(-1)?.message.content).toBe('3 calls failed.');
    expect(state.runs[result.runId]?.status).toBe('completed');
  });

  it.each([
    ['approved', undefined, ['*.log']],
    ['rejected', undefined, []],
    ['modified', { glob: '*.tmp' }, ['*.tmp']],
  ] as const)('asks before a gated tool runs; %s through resolveApproval', async (decision, data, expected) => {
    const { server, provider } = await model(format, (request) => {
      const [result] = request.toolResults;
      if (result === undefined) {
        return {
          text: 'Deleting.',
          toolCalls: [{ id: 'call_delete', name: 'delete_files', arguments: { glob: '*.log' } }],
        };
      }
      return { text: result.isError ? 'Nothing was deleted.' : `Done: ${result.content}` };
    });
    const deleted: string[] = [];
    const deleteFiles = defineAgentTool({
      name: 'delete_files',
      description: 'Deletes the files that match a glob',
      inputSchema: z.object({ glob: z.string() }),
      needsApproval: true,
      execute: ({ glob }) => {
        deleted.push(glob);
        return { deleted: glob };
      },
    });
    const { chat } = chatWith({ model: provider, tools: [deleteFiles] });
    const first = await chat.request({ prompt: 'Clean up the logs' });
    expect(first.status).toBe('completed');
    expect(deleted).toEqual([]);
    let state = chat.getSnapshot().agentState;
    expect(state.runs[first.runId]).toMatchObject({
      pendingToolCallIds: ['call_delete'],
      pendingApprovalIds: ['approval-call_delete'],
      output: { stoppedBy: 'input', steps: 1 },
    });
    const pending = selectPendingInput(state, first.runId);
    expect(pending.approvals.map((approval) => [approval.id, approval.toolCallId, approval.data])).toEqual([
      ['approval-call_delete', 'call_delete', { glob: '*.log' }],
    ]);
    await chat.agentActions.resolveApproval({
      runId: first.runId,
      approvalId: 'approval-call_delete',
      decision,
      ...(data === undefined ? {} : { data }),
    });
    state = chat.getSnapshot().agentState;
    expect(deleted).toEqual(expected);
    const continuation = Object.values(state.runs).find((run) => run.continuesRunId === first.runId);
    expect(continuation).toMatchObject({ status: 'completed', output: { stoppedBy: 'answer', steps: 1 } });
    expect(state.approvals[getAgentEntityKey(first.runId, 'approval-call_delete')]).toMatchObject({
      status: 'resolved',
      decision,
    });
    const toolCall = state.toolCalls[getAgentEntityKey(first.runId, 'call_delete')];
    const requests = server.modelRequests();
    expect(requests).toHaveLength(2);
    const [toolResult] = requests[1]?.toolResults ?? [];
    if (decision === 'rejected') {
      expect(toolCall).toMatchObject({ status: 'failed', error: { code: 'approval_rejected' } });
      expect(toolResult).toMatchObject({ toolCallId: 'call_delete', isError: true });
      expect(toolResult?.content).toContain('The user did not approve this call of delete_files; it did not run');
      expect(chat.getSnapshot().messages.at(-1)?.message.content).toBe('Nothing was deleted.');
    } else {
      expect(toolCall).toMatchObject({ status: 'completed', result: { deleted: expected[0] } });
      expect(toolResult).toEqual({
        toolCallId: 'call_delete',
        content: JSON.stringify({ deleted: expected[0] }),
        isError: false,
      });
    }
    // The model reads the call as it ran: with the modified input.
    const assistant = requests[1]?.messages.find((message) => message.role === 'assistant');
    const toolCalls = (assistant?.tool_calls ?? []) as Array<{ function: { arguments: string } }>;
    const blocks = (assistant?.content ?? []) as Array<{ type: string; input?: unknown }>;
    const sentArguments =
      format === 'openai'
        ? JSON.parse(toolCalls[0]?.function.arguments ?? '')
        : blocks.find((block) => block.type === 'tool_use')?.input;
    expect(sentArguments).toEqual(data ?? { glob: '*.log' });
    expect(state.issues).toEqual([]);
    expect(chat.getSnapshot().commandStates).toEqual({});
  });

  it('leaves a client tool to the client: the run waits, submitToolResult continues the loop', async () => {
    const { server, provider } = await model(format, (request) => {
      const [result] = request.toolResults;
      if (result === undefined) return { toolCalls: [{ id: 'call_pick', name: 'pick_file', arguments: {} }] };
      return { text: `You picked ${(JSON.parse(result.content) as { file: string }).file}.` };
    });
    const pickFile = defineAgentTool({
      name: 'pick_file',
      description: 'Asks the user for a file',
      inputSchema: z.object({}),
    });
    const { chat } = chatWith({ model: provider, tools: [pickFile] });
    const first = await chat.request({ prompt: 'Open a file' });
    const pending = selectPendingInput(chat.getSnapshot().agentState, first.runId);
    expect(pending.toolCalls.map((call) => [call.id, call.name, call.status])).toEqual([
      ['call_pick', 'pick_file', 'awaiting_execution'],
    ]);
    expect(pending.approvals).toEqual([]);
    await chat.agentActions.submitToolResult({
      runId: first.runId,
      toolCallId: 'call_pick',
      result: { file: 'report.pdf' },
    });
    const settled = await when(chat as XChatRuntime<unknown>, (snapshot) =>
      Object.values(snapshot.agentState.runs).some(
        (run) => run.continuesRunId === first.runId && run.status !== 'running',
      ),
    );
    expect(server.modelRequests()[1]?.toolResults).toEqual([
      { toolCallId: 'call_pick', content: '{"file":"report.pdf"}', isError: false },
    ]);
    expect(settled.messages.map(({ message }) => [message.role, message.content])).toEqual([
      ['user', 'Open a file'],
      ['assistant', 'You picked report.pdf.'],
    ]);
    expect(settled.agentState.toolCalls[getAgentEntityKey(first.runId, 'call_pick')]).toMatchObject({
      status: 'completed',
      meta: { agentMachines: { step: 1, executedBy: 'client' } },
    });
  });

  it("stops after maxSteps steps, saying so in the run's output", async () => {
    // A model that never stops calling the tool, and gives each call the same id, as some servers do.
    const { server, provider } = await model(format, () => ({
      toolCalls: [{ id: 'call_0', name: 'get_weather', arguments: { city: 'Paris' } }],
    }));
    const calls: string[] = [];
    const { chat } = chatWith({ model: provider, tools: [weatherTool({ Paris: 14 }, calls)], maxSteps: 2 });
    const result = await chat.request({ prompt: 'Weather?' });
    expect(result.status).toBe('completed');
    expect(server.modelRequests()).toHaveLength(2);
    expect(calls).toEqual(['Paris', 'Paris']);
    const run = chat.getSnapshot().agentState.runs[result.runId];
    expect(run?.output).toEqual({ stoppedBy: 'max_steps', steps: 2 });
    expect(run?.pendingToolCallIds).toBeUndefined();
    expect(
      Object.values(chat.getSnapshot().agentState.toolCalls).map((call) => [
        call.id,
        call.status,
        call.meta?.agentMachines,
      ]),
    ).toEqual([
      ['call_0', 'completed', { step: 1 }],
      ['call_0_2', 'completed', { step: 2 }],
    ]);
  });

  it.each(['abort', 'cancelRun'] as const)(
    '%s during execute aborts its signal; the call and the run end cancelled',
    async (how) => {
      const { server, provider } = await model(format, () => ({
        toolCalls: [{ id: 'call_slow', name: 'slow', arguments: {} }],
      }));
      const started = deferred<void>();
      const aborted = deferred<unknown>();
      const slow = defineAgentTool({
        name: 'slow',
        description: 'Takes its time',
        inputSchema: z.object({}),
        execute: (_input, { signal }) =>
          new Promise((_resolve, reject) => {
            signal.addEventListener('abort', () => {
              aborted.resolve(signal.reason);
              reject(signal.reason);
            });
            started.resolve();
          }),
      });
      const { chat } = chatWith({ model: provider, tools: [slow] });
      const running = chat.request({ prompt: 'Go' });
      await started.promise;
      const [runId] = Object.keys(chat.getSnapshot().agentState.runs) as [string];
      if (how === 'abort') chat.abort();
      else await chat.agentActions.cancelRun({ runId, reason: 'user stop' });
      expect(await aborted.promise).toBeInstanceOf(DOMException);
      const result = await running;
      expect(result.status).toBe('cancelled');
      const state = chat.getSnapshot().agentState;
      const reason = how === 'abort' ? 'aborted' : 'user stop';
      expect(state.toolCalls[getAgentEntityKey(runId, 'call_slow')]).toMatchObject({ status: 'cancelled', reason });
      expect(state.runs[runId]).toMatchObject({ status: 'cancelled', reason });
      expect(server.modelRequests()).toHaveLength(1);
      expect(state.issues).toEqual([]);
    },
  );

  it('fails the run when a model step fails, keeping what the steps before did', async () => {
    const { provider } = await model(format, (request) =>
      request.index === 0 ? weatherModel(request) : { error: { status: 400, message: 'context too long' } },
    );
    const calls: string[] = [];
    const { chat } = chatWith({ model: provider, tools: [weatherTool({ Paris: 14 }, calls)] });
    const result = await chat.request({ prompt: 'Weather in Paris?' });
    expect(result.status).toBe('failed');
    expect(calls).toEqual(['Paris']);
    const state = chat.getSnapshot().agentState;
    expect(state.runs[result.runId]).toMatchObject({
      status: 'failed',
      error: { code: 'http_error', message: expect.stringContaining('context too long') },
    });
    expect(state.toolCalls[getAgentEntityKey(result.runId, 'call_paris')]?.status).toBe('completed');
    expect(state.issues).toEqual([]);
  });

  it('fails a call past its timeoutMs with code timeout, aborting its signal, and goes on (fake timers)', async () => {
    // Only the timers: the loopback server and the HTTP client run on their own.
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const { server, provider } = await model(format, (request) => {
      const [result] = request.toolResults;
      if (result === undefined) return { toolCalls: [{ id: 'call_slow', name: 'slow', arguments: {} }] };
      return { text: `The tool said: ${result.content}` };
    });
    const started = deferred<void>();
    const aborted = deferred<unknown>();
    const slow = defineAgentTool({
      name: 'slow',
      description: 'Takes its time',
      inputSchema: z.object({}),
      timeoutMs: 30_000,
      execute: (_input, { signal }) =>
        new Promise(() => {
          signal.addEventListener('abort', () => aborted.resolve(signal.reason));
          started.resolve();
        }),
    });
    const { chat } = chatWith({ model: provider, tools: [slow] });
    const running = chat.request({ prompt: 'Go' });
    await started.promise;
    await vi.advanceTimersByTimeAsync(29_999);
    const [runId] = Object.keys(chat.getSnapshot().agentState.runs) as [string];
    expect(chat.getSnapshot().agentState.toolCalls[getAgentEntityKey(runId, 'call_slow')]?.status).toBe('running');
    await vi.advanceTimersByTimeAsync(1);
    expect(await aborted.promise).toMatchObject({ name: 'TimeoutError' });
    const result = await running;
    expect(result.status).toBe('completed');
    const state = chat.getSnapshot().agentState;
    expect(state.toolCalls[getAgentEntityKey(runId, 'call_slow')]).toMatchObject({
      status: 'failed',
      error: { code: 'timeout', message: 'slow did not finish within 30000 ms' },
    });
    expect(server.modelRequests()[1]?.toolResults).toEqual([
      {
        toolCallId: 'call_slow',
        content: expect.stringContaining('slow did not finish within 30000 ms'),
        isError: true,
      },
    ]);
  });

  it('runs a server tool at once and leaves a client tool of the same step to the client', async () => {
    const { server, provider } = await model(format, (request) => {
      if (request.toolResults.length === 0) {
        return {
          toolCalls: [
            { id: 'call_paris', name: 'get_weather', arguments: { city: 'Paris' } },
            { id: 'call_pick', name: 'pick_file', arguments: {} },
          ],
        };
      }
      return { text: request.toolResults.map((result) => result.content).join(' + ') };
    });
    const calls: string[] = [];
    const pickFile = defineAgentTool({ name: 'pick_file', description: 'Asks for a file', inputSchema: z.object({}) });
    const { chat } = chatWith({ model: provider, tools: [weatherTool({ Paris: 14 }, calls), pickFile] });
    const first = await chat.request({ prompt: 'Weather, then a file' });
    expect(calls).toEqual(['Paris']);
    let state = chat.getSnapshot().agentState;
    expect(state.runs[first.runId]?.pendingToolCallIds).toEqual(['call_pick']);
    expect(state.toolCalls[getAgentEntityKey(first.runId, 'call_paris')]?.status).toBe('completed');
    await chat.agentActions.submitToolResult({ runId: first.runId, toolCallId: 'call_pick', result: 'notes.txt' });
    const settled = await when(chat as XChatRuntime<unknown>, (snapshot) =>
      Object.values(snapshot.agentState.runs).some(
        (run) => run.continuesRunId === first.runId && run.status !== 'running',
      ),
    );
    state = settled.agentState;
    expect(calls).toEqual(['Paris']);
    expect(server.modelRequests()[1]?.toolResults.map((result) => [result.toolCallId, result.content])).toEqual([
      ['call_paris', '{"city":"Paris","celsius":14}'],
      ['call_pick', 'notes.txt'],
    ]);
    expect(settled.messages.at(-1)?.message.content).toBe('{"city":"Paris","celsius":14} + notes.txt');
    expect(state.issues).toEqual([]);
  });
});

for (const format of ['openai', 'anthropic'] as const) {
  /** A model for the contract's runs: the weather, or a file the client picks, as the prompt asks. */
  const contractServer = await startModelServer(format, (request) => {
    const [prompt] = request.messages.filter((message) => message.role === 'user');
    if (prompt?.content !== 'Pick a file') return weatherModel(request);
    return request.toolResults.length === 0
      ? { toolCalls: [{ id: 'call_pick', name: 'pick_file', arguments: {} }] }
      : { text: 'Thanks.' };
  });
  afterAll(() => contractServer.close());
  const provider: AnyAgentProvider =
    format === 'openai'
      ? createOpenAICompatibleAgentProvider({ baseURL: contractServer.baseURL, model: 'gpt-4o-mini' })
      : createAnthropicAgentProvider({ baseURL: contractServer.baseURL, model: 'claude-sonnet-4-5', maxTokens: 1024 });
  const pickFile = defineAgentTool({ name: 'pick_file', description: 'Asks for a file', inputSchema: z.object({}) });
  describeAgentProviderContract(`agent over ${format}`, {
    provider: createAgent({ model: provider, tools: [weatherTool({ Paris: 14 }), pickFile] }),
    fixtures: [
      { name: 'a server tool, then the answer', input: { prompt: 'Weather in Paris?' } },
      { name: 'a client tool: the run completes waiting for its result', input: { prompt: 'Pick a file' } },
    ],
  });
}
