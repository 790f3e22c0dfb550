// Client tools by definition: createXChatRuntime({ tools }) runs the tools given with
// `execute` when a run waits for them, and submits their results, against a loopback server
// that speaks the OpenAI-compatible wire format and behaves like a model.
import { afterEach, describe, expect, it } from 'vitest';
import * as z from 'zod/mini';
import { createMemoryAgentCheckpointStorage } from '../checkpoint/createMemoryAgentCheckpointStorage';
import { selectPendingInput } from '../machines/selectors';
import { getAgentEntityKey } from '../protocol/getAgentEntityKey';
import { createAgent } from '../providers/agent/createAgent';
import { type AgentToolExecuteOptions, defineAgentTool } from '../providers/agent/defineAgentTool';
import { createOpenAICompatibleAgentProvider } from '../providers/openai/createOpenAICompatibleAgentProvider';
import { createXChatRuntime, type XChatRuntime } from '../runtime/createXChatRuntime';
import type { XChatSnapshot } from '../runtime/xChatSnapshot';
import { type ModelReply, type ModelRequest, type ModelServer, startModelServer } from './support/modelServer';

const servers: ModelServer[] = [];
const chats: XChatRuntime<unknown>[] = [];
afterEach(async () => {
  for (const chat of chats.splice(0)) chat.destroy();
  await Promise.all(servers.splice(0).map((server) => server.close()));
});

async function modelServer(reply: (request: ModelRequest) => ModelReply) {
  const server = await startModelServer('openai', reply);
  servers.push(server);
  const model = createOpenAICompatibleAgentProvider({
    baseURL: server.baseURL,
    apiKey: 'sk-test',
    model: 'gpt-4o-mini',
  });
  return { server, model };
}

function track<Input>(chat: XChatRuntime<Input>): XChatRuntime<Input> {
  chats.push(chat as XChatRuntime<unknown>);
  return chat;
}

/** Resolves with the first snapshot for which `predicate` holds, as the runtime notifies its listeners. */
function when(chat: XChatRuntime<unknown>, predicate: (snapshot: XChatSnapshot) => boolean): Promise<XChatSnapshot> {
  return new Promise((resolve) => {
    const check = () => {
      const snapshot = chat.getSnapshot();
      if (!predicate(snapshot)) return;
      unsubscribe();
      resolve(snapshot);
    };
    const unsubscribe = chat.subscribe(check);
    check();
  });
}

const continuedOf = (runId: string) => (snapshot: XChatSnapshot) =>
  Object.values(snapshot.agentState.runs).some((run) => run.continuesRunId === runId && run.status !== 'running');

/** Lets every task queued so far run: what would have been submitted has been. */
const nextTask = () => new Promise((resolve) => setTimeout(resolve, 0));

/** A promise and its resolve (Node 20 has no `Promise.withResolvers`). */
function deferred<Value = void>() {
  let resolve!: (value: Value) => void;
  const promise = new Promise<Value>((done) => {
    resolve = done;
  });
  return { promise, resolve };
}

/** The tool as the server's agent knows it: no `execute`, so the client runs it. */
const location = {
  name: 'get_location',
  description: 'Where the user is',
  inputSchema: z.object({ precision: z.enum(['city', 'country']) }),
};

/** A model that asks where the user is, then says what the tool answered (or that it failed). */
const locationModel = (request: ModelRequest): ModelReply => {
  const [result] = request.toolResults;
  if (result === undefined) {
    return { toolCalls: [{ id: 'call_loc', name: 'get_location', arguments: { precision: 'city' } }] };
  }
  if (result.isError) return { text: `I could not tell: ${result.content}` };
  return { text: `You are in ${(JSON.parse(result.content) as { city: string }).city}.` };
};

describe('client tools given to the runtime', () => {
  it('runs a client tool with execute, submits its result, and the conversation goes on to the answer', async () => {
    const { server, model } = await modelServer(locationModel);
    const calls: Array<{ input: unknown; runId: string; toolCallId: string; aborted: boolean }> = [];
    const getLocation = defineAgentTool({
      ...location,
      execute: (input, { signal, runId, toolCallId }: AgentToolExecuteOptions) => {
        calls.push({ input, runId, toolCallId, aborted: signal.aborted });
        return { city: 'Paris' };
      },
    });
    const agent = createAgent({ model, tools: [defineAgentTool(location)] });
    const chat = track(createXChatRuntime({ provider: agent, sessionId: 'chat', tools: [getLocation] }));
    expect(chat.tools.get('get_location')).toBe(getLocation);

    const first = await chat.request({ prompt: 'Where am I?' });
    expect(first.status).toBe('completed');
    const settled = await when(chat as XChatRuntime<unknown>, continuedOf(first.runId));

    expect(calls).toEqual([
      { input: { precision: 'city' }, runId: first.runId, toolCallId: 'call_loc', aborted: false },
    ]);
    expect(server.modelRequests()[1]?.toolResults).toEqual([
      { toolCallId: 'call_loc', content: '{"city":"Paris"}', isError: false },
    ]);
    expect(settled.messages.map(({ message }) => [message.role, message.content])).toEqual([
      ['user', 'Where am I?'],
      ['assistant', 'You are in Paris.'],
    ]);
    expect(settled.agentState.toolCalls[getAgentEntityKey(first.runId, 'call_loc')]).toMatchObject({
      status: 'completed',
      result: { city: 'Paris' },
      meta: { agentMachines: { executedBy: 'client' } },
    });
    expect(Object.values(settled.agentState.runs).map((run) => run.status)).toEqual(['completed', 'completed']);
    expect(settled.agentState.issues).toEqual([]);
  });

  it('leaves a tool without execute to the application: the conversation goes on once it submits', async () => {
    const { server, model } = await modelServer((request) => {
      if (request.toolResults.length === 0) {
        return {
          toolCalls: [
            { id: 'call_loc', name: 'get_location', arguments: { precision: 'country' } },
            { id: 'call_pick', name: 'pick_file', arguments: {} },
          ],
        };
      }
      return { text: request.toolResults.map((result) => result.content).join(' + ') };
    });
    const pickFile = defineAgentTool({ name: 'pick_file', description: 'Asks for a file', inputSchema: z.object({}) });
    const getLocation = defineAgentTool({ ...location, execute: ({ precision }) => `${precision}: France` });
    const agent = createAgent({ model, tools: [defineAgentTool(location), pickFile] });
    const chat = track(createXChatRuntime({ provider: agent, sessionId: 'chat', tools: [getLocation, pickFile] }));

    const first = await chat.request({ prompt: 'Where am I, and which file?' });
    const located = await when(
      chat as XChatRuntime<unknown>,
      (snapshot) => snapshot.agentState.toolCalls[getAgentEntityKey(first.runId, 'call_loc')]?.status === 'completed',
    );
    // The UI's tool is still waiting, so nothing continued the run.
    expect(selectPendingInput(located.agentState, first.runId).toolCalls.map((call) => call.id)).toEqual(['call_pick']);
    expect(server.modelRequests()).toHaveLength(1);
    expect(chat.tools.get('pick_file')?.description).toBe('Asks for a file');

    await chat.agentActions.submitToolResult({ runId: first.runId, toolCallId: 'call_pick', result: 'notes.txt' });
    const settled = await when(chat as XChatRuntime<unknown>, continuedOf(first.runId));
    expect(server.modelRequests()[1]?.toolResults).toEqual([
      { toolCallId: 'call_loc', content: 'country: France', isError: false },
      { toolCallId: 'call_pick', content: 'notes.txt', isError: false },
    ]);
    expect(settled.messages.at(-1)?.message.content).toBe('country: France + notes.txt');
  });

  it('submits what a throwing execute threw as the call’s error, which the model reads', async () => {
    const { server, model } = await modelServer(locationModel);
    const getLocation = defineAgentTool({
      ...location,
      execute: () => {
        throw Object.assign(new Error('Location services are off'), { code: 'location_off' });
      },
    });
    const agent = createAgent({ model, tools: [defineAgentTool(location)] });
    const chat = track(createXChatRuntime({ provider: agent, sessionId: 'chat', tools: [getLocation] }));

    const first = await chat.request({ prompt: 'Where am I?' });
    const settled = await when(chat as XChatRuntime<unknown>, continuedOf(first.runId));
    expect(settled.agentState.toolCalls[getAgentEntityKey(first.runId, 'call_loc')]).toMatchObject({
      status: 'failed',
      error: { message: 'Location services are off', code: 'location_off' },
    });
    expect(server.modelRequests()[1]?.toolResults).toEqual([
      { toolCallId: 'call_loc', content: 'Error: Location services are off', isError: true },
    ]);
    expect(settled.messages.at(-1)?.message.content).toBe('I could not tell: Error: Location services are off');
    expect(settled.agentState.issues).toEqual([]);
  });

  it('submits invalid arguments as an error naming the issues, without running execute', async () => {
    // The OpenAI-compatible provider alone leaves every call to the application, unchecked.
    const { server, model } = await modelServer((request) =>
      request.toolResults.length === 0
        ? { toolCalls: [{ id: 'call_loc', name: 'get_location', arguments: { precision: 'street' } }] }
        : { text: `Noted: ${request.toolResults[0]?.content}` },
    );
    let executed = 0;
    const getLocation = defineAgentTool({
      ...location,
      execute: () => {
        executed += 1;
        return { city: 'Paris' };
      },
    });
    const chat = track(createXChatRuntime({ provider: model, sessionId: 'chat', tools: [getLocation] }));

    const first = await chat.request({ prompt: 'Where am I?' });
    const settled = await when(chat as XChatRuntime<unknown>, continuedOf(first.runId));
    expect(executed).toBe(0);
    const failed = settled.agentState.toolCalls[getAgentEntityKey(first.runId, 'call_loc')];
    expect(failed).toMatchObject({
      status: 'failed',
      error: {
        code: 'invalid_arguments',
        message: expect.stringMatching(/^Invalid arguments for get_location: precision: /),
        data: { issues: [{ path: 'precision', message: expect.any(String) }] },
      },
    });
    expect(server.modelRequests()[1]?.toolResults).toEqual([
      { toolCallId: 'call_loc', content: `Error: ${failed?.error?.message}`, isError: true },
    ]);
  });

  it('aborts execute’s signal on abort() and destroy(): nothing is submitted, the call still waits', async () => {
    const { server, model } = await modelServer(locationModel);
    const started = deferred<AbortSignal>();
    const late = deferred<{ city: string }>();
    const getLocation = defineAgentTool({
      ...location,
      // Ignores its signal and answers late, as a slow API would.
      execute: (_input, { signal }) => {
        started.resolve(signal);
        return late.promise;
      },
    });
    const agent = createAgent({ model, tools: [defineAgentTool(location)] });
    const chat = track(createXChatRuntime({ provider: agent, sessionId: 'chat', tools: [getLocation] }));

    const first = await chat.request({ prompt: 'Where am I?' });
    const signal = await started.promise;
    expect(signal.aborted).toBe(false);
    chat.abort(new DOMException('The user stopped', 'AbortError'));
    expect(signal.aborted).toBe(true);
    expect((signal.reason as DOMException).message).toBe('The user stopped');
    await nextTask();

    const state = chat.getSnapshot().agentState;
    expect(state.toolCalls[getAgentEntityKey(first.runId, 'call_loc')]?.status).toBe('awaiting_execution');
    expect(selectPendingInput(state, first.runId).toolCalls.map((call) => call.id)).toEqual(['call_loc']);
    expect(chat.getSnapshot().commandStates).toEqual({});
    expect(server.modelRequests()).toHaveLength(1);

    // destroy() aborts the same way.
    const destroyedStart = deferred<AbortSignal>();
    const other = track(
      createXChatRuntime({
        provider: agent,
        sessionId: 'other',
        tools: [
          defineAgentTool({
            ...location,
            execute: (_input, { signal }) => {
              destroyedStart.resolve(signal);
              return late.promise;
            },
          }),
        ],
      }),
    );
    await other.request({ prompt: 'Where am I?' });
    const otherSignal = await destroyedStart.promise;
    other.destroy();
    expect(otherSignal.aborted).toBe(true);
    late.resolve({ city: 'Paris' });
    await nextTask();
    expect(chat.getSnapshot().commandStates).toEqual({});
    expect(server.modelRequests()).toHaveLength(2);
  });

  it('leaves a call an approval is about to the approval, even with a client tool of its name', async () => {
    const { model } = await modelServer((request) =>
      request.toolResults.length === 0
        ? { toolCalls: [{ id: 'call_del', name: 'delete_files', arguments: { glob: '*.log' } }] }
        : { text: 'Done.' },
    );
    const deletion = {
      name: 'delete_files',
      description: 'Deletes files',
      inputSchema: z.object({ glob: z.string() }),
    };
    let clientRuns = 0;
    const agent = createAgent({
      model,
      tools: [defineAgentTool({ ...deletion, needsApproval: true, execute: () => ({ deleted: 3 }) })],
    });
    const clientDeletion = defineAgentTool({
      ...deletion,
      execute: () => {
        clientRuns += 1;
      },
    });
    const chat = track(createXChatRuntime({ provider: agent, sessionId: 'chat', tools: [clientDeletion] }));

    const first = await chat.request({ prompt: 'Clean up' });
    await nextTask();
    const pending = selectPendingInput(chat.getSnapshot().agentState, first.runId);
    expect(pending.approvals.map((approval) => approval.toolCallId)).toEqual(['call_del']);
    expect(pending.toolCalls.map((call) => call.status)).toEqual(['awaiting_execution']);
    expect(clientRuns).toBe(0);
  });

  it('runs the calls of a run restored waiting from the checkpoint', async () => {
    const { server, model } = await modelServer(locationModel);
    const agent = createAgent({ model, tools: [defineAgentTool(location)] });
    const checkpointStorage = createMemoryAgentCheckpointStorage();
    const before = track(createXChatRuntime({ provider: agent, sessionId: 'chat', checkpointStorage }));
    const first = await before.request({ prompt: 'Where am I?' });
    await before.flushCheckpoint();
    before.destroy();

    const getLocation = defineAgentTool({ ...location, execute: () => ({ city: 'Lyon' }) });
    const after = track(
      createXChatRuntime({ provider: agent, sessionId: 'chat', checkpointStorage, tools: [getLocation] }),
    );
    const settled = await when(after as XChatRuntime<unknown>, continuedOf(first.runId));
    expect(server.modelRequests()[1]?.toolResults).toEqual([
      { toolCallId: 'call_loc', content: '{"city":"Lyon"}', isError: false },
    ]);
    expect(settled.messages.at(-1)?.message.content).toBe('You are in Lyon.');
  });

  it('refuses two tools of one name', () => {
    const { model } = { model: createOpenAICompatibleAgentProvider({ baseURL: 'http://127.0.0.1:1/v1', model: 'm' }) };
    const tool = defineAgentTool(location);
    expect(() => createXChatRuntime({ provider: model, tools: [tool, tool] })).toThrow(
      'two tools are named get_location',
    );
    const chat = track(createXChatRuntime({ provider: model, tools: [tool] }));
    expect(() => chat.setTools([tool, tool])).toThrow('two tools are named get_location');
    chat.setTools([]);
    expect([...chat.tools.keys()]).toEqual([]);
  });
});
