// The host serves the AI SDK's chat wire: the `ai` package's own DefaultChatTransport posts to
// `POST /api/agent/chat` and resumes with `GET /api/agent/chat/:chatId/stream` on a real host
// (node:http on loopback), and readUIMessageStream builds the assistant message from the
// stream, as useChat does. Runs are an agent (createAgent) over a loopback OpenAI-compatible
// model for tools and approvals, and the local provider with a runtime held at a gate for a
// run caught mid-way.
import { DefaultChatTransport, readUIMessageStream, type UIMessage, type UIMessageChunk } from 'ai';
import { afterEach, describe, expect, it } from 'vitest';
import * as z from 'zod/mini';
import type { AgentState } from '../machines/agentState';
import { createAgentStore } from '../machines/createAgentStore';
import type { AnyAgentProvider } from '../providers/AgentProvider';
import { createAgent } from '../providers/agent/createAgent';
import { defineAgentTool } from '../providers/agent/defineAgentTool';
import { followAgentSession } from '../providers/agent-event/followAgentSession';
import { createLocalAgentProvider } from '../providers/local/createLocalAgentProvider';
import type { LocalAgentChunk } from '../providers/local/localAgentChunks';
import { createOpenAICompatibleAgentProvider } from '../providers/openai/createOpenAICompatibleAgentProvider';
import { type AgentHostOptions, createAgentHost } from '../server/createAgentHost';
import { serveHost } from './support/hostClient';
import { type ModelReply, type ModelRequest, startModelServer } from './support/modelServer';
import { until } from './support/until';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A promise with its resolve, for gates a test opens. */
function gate<Value = void>() {
  let open!: (value: Value) => void;
  const promise = new Promise<Value>((resolve) => {
    open = resolve;
  });
  return { promise, open };
}

/** A host at `/api/agent` whose `/chat` runs `provider`, served on loopback. */
async function startHost(provider: AnyAgentProvider, options: Partial<AgentHostOptions> = {}) {
  const host = createAgentHost({
    providers: { assistant: provider },
    basePath: '/api/agent',
    uiMessageStream: { provider: 'assistant' },
    onError: () => {},
    ...options,
  });
  const served = await serveHost(host.fetch);
  cleanups.push(async () => {
    await served.close();
    await host.close();
  });
  const api = `${served.url}/api/agent/chat`;
  return {
    host,
    api,
    baseURL: `${served.url}/api/agent`,
    transport: new DefaultChatTransport<UIMessage>({ api }),
    state: async (sessionId: string) => (await host.getState(sessionId)).state,
  };
}

/** An agent on a loopback OpenAI-compatible model that answers with `reply`. */
async function startModel(reply: (request: ModelRequest) => ModelReply | Promise<ModelReply>) {
  const model = await startModelServer('openai', reply);
  cleanups.push(() => model.close());
  return {
    model,
    provider: (tools: Parameters<typeof createAgent>[0]['tools']) =>
      createAgent({
        model: createOpenAICompatibleAgentProvider({ baseURL: model.baseURL, apiKey: 'sk-test', model: 'gpt-4o-mini' }),
        tools,
      }),
  };
}

/** Every chunk of a stream, until it ends. */
async function readAll(stream: ReadableStream<UIMessageChunk>): Promise<UIMessageChunk[]> {
  const chunks: UIMessageChunk[] = [];
  const reader = stream.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return chunks;
    chunks.push(value);
  }
}

/** Reads chunks into `chunks` until `enough` holds; the stream stays open for the rest. */
async function readUntil(
  reader: ReadableStreamDefaultReader<UIMessageChunk>,
  chunks: UIMessageChunk[],
  enough: (chunks: UIMessageChunk[]) => boolean,
): Promise<void> {
  while (!enough(chunks)) {
    const { done, value } = await reader.read();
    if (done) throw new Error(`The stream ended before the test saw what it waited for: ${JSON.stringify(chunks)}`);
    chunks.push(value);
  }
}

/** The message the `ai` package builds from the chunks, onto `message` when the stream continues one. */
async function messageOf(chunks: UIMessageChunk[], message?: UIMessage): Promise<UIMessage> {
  const errors: unknown[] = [];
  const stream = new ReadableStream<UIMessageChunk>({
    start(controller) {
      for (const chunk of chunks) controller.enqueue(chunk);
      controller.close();
    },
  });
  let last: UIMessage | undefined;
  for await (const snapshot of readUIMessageStream<UIMessage>({
    stream,
    ...(message === undefined ? {} : { message: structuredClone(message) }),
    onError: (error) => errors.push(error),
  })) {
    last = snapshot;
  }
  expect(errors).toEqual([]);
  return last as UIMessage;
}

const userMessage = (text: string): UIMessage => ({
  id: `user-${text}`,
  role: 'user',
  parts: [{ type: 'text', text }],
});

const textsOf = (message: UIMessage) =>
  message.parts.filter((part) => part.type === 'text').map((part) => (part as { text: string }).text);

const send = (transport: DefaultChatTransport<UIMessage>, chatId: string, messages: UIMessage[]) =>
  transport.sendMessages({ chatId, messages, trigger: 'submit-message', messageId: undefined, abortSignal: undefined });

/** A local runtime: reasoning, then text in two deltas with `held` between them. */
function heldRuntime(held: Promise<void>) {
  return createLocalAgentProvider({
    runtime: async function* (): AsyncGenerator<LocalAgentChunk> {
      yield { type: 'reasoning.start', id: 'thinking' };
      yield { type: 'reasoning.delta', id: 'thinking', delta: 'The user greets me.' };
      yield { type: 'reasoning.end', id: 'thinking' };
      yield { type: 'text.start', id: 'answer' };
      yield { type: 'text.delta', id: 'answer', delta: 'Hello ' };
      await held;
      yield { type: 'text.delta', id: 'answer', delta: 'world' };
      yield { type: 'text.end', id: 'answer' };
      yield { type: 'done' };
    },
  });
}

/** Follows the session with followAgentSession into a store until `ready` holds of its state. */
async function followed(baseURL: string, sessionId: string, ready: (state: AgentState) => boolean) {
  const store = createAgentStore();
  const controller = new AbortController();
  const done = followAgentSession({ baseURL, sessionId, store, signal: controller.signal }).catch(() => undefined);
  try {
    await until(() => ready(store.getSnapshot()), 'the follower to catch up');
    return store.getSnapshot();
  } finally {
    controller.abort();
    await done;
  }
}

function deleteFilesTool(deleted: string[]) {
  return defineAgentTool({
    name: 'delete_files',
    description: 'Deletes the files that match a glob',
    inputSchema: z.object({ glob: z.string() }),
    needsApproval: true,
    execute: ({ glob }) => {
      deleted.push(glob);
      return { deleted: glob };
    },
  });
}

/** The message as useChat's addToolApprovalResponse leaves it: the approval's part answered. */
function approve(message: UIMessage, approved: boolean): UIMessage {
  return {
    ...message,
    parts: message.parts.map((part) =>
      'approval' in part && part.state === 'approval-requested'
        ? { ...part, state: 'approval-responded', approval: { id: part.approval.id, approved } }
        : part,
    ),
  } as UIMessage;
}

describe('a useChat client on the host', () => {
  it('streams a run: reasoning and text in one assistant message whose id is the run id', async () => {
    const { transport, state } = await startHost(heldRuntime(Promise.resolve()));
    const chunks = await readAll(await send(transport, 'hello', [userMessage('Hi')]));
    expect(chunks[0]).toMatchObject({ type: 'start' });
    expect(chunks.at(-1)).toEqual({ type: 'finish', finishReason: 'stop' });
    expect(chunks.filter((chunk) => chunk.type === 'text-delta').map((chunk) => chunk.delta)).toEqual([
      'Hello ',
      'world',
    ]);
    const message = await messageOf(chunks);
    expect(message.role).toBe('assistant');
    expect(message.parts).toMatchObject([
      { type: 'step-start' },
      { type: 'reasoning', text: 'The user greets me.', state: 'done' },
      { type: 'text', text: 'Hello world', state: 'done' },
    ]);
    // The user's own message is the host's too, and not echoed back.
    const session = await state('hello');
    expect(Object.keys(session.runs)).toEqual([message.id]);
    expect(Object.values(session.messages).map((entry) => [entry.role, entry.content])).toEqual([
      ['user', 'Hi'],
      ['assistant', 'Hello world'],
    ]);
  });

  it('goes through an approval: the stream ends asking, the answered POST continues the run once, however often it is sent', async () => {
    const deleted: string[] = [];
    const secondReply = gate();
    const { model, provider } = await startModel(async (request) => {
      const [result] = request.toolResults;
      if (result === undefined) {
        return {
          text: 'Deleting.',
          toolCalls: [{ id: 'call_delete', name: 'delete_files', arguments: { glob: '*.log' } }],
        };
      }
      await secondReply.promise;
      return { text: `Done: ${result.content}` };
    });
    const { transport, state, baseURL } = await startHost(provider([deleteFilesTool(deleted)]));
    const user = userMessage('Clean up the logs');

    const first = await readAll(await send(transport, 'approval', [user]));
    expect(first.at(-1)).toEqual({ type: 'finish', finishReason: 'tool-calls' });
    const asked = await messageOf(first);
    expect(asked.parts).toContainEqual(
      expect.objectContaining({
        type: 'tool-delete_files',
        toolCallId: 'call_delete',
        state: 'approval-requested',
        input: { glob: '*.log' },
        approval: { id: 'approval-call_delete' },
      }),
    );
    expect(textsOf(asked)).toEqual(['Deleting.']);
    expect(deleted).toEqual([]);

    // The answer, sent twice at once (a double click, a retry): one continuation, one deletion.
    const answered = approve(asked, true);
    const streams = await Promise.all([
      send(transport, 'approval', [user, answered]),
      send(transport, 'approval', [user, answered]),
    ]);
    const readers = streams.map((stream) => readAll(stream));

    // Caught while the continuation waits for the model, a reload replays the whole message.
    await until(() => deleted.length === 1, 'the approved tool to run');
    const resumed = await transport.reconnectToStream({ chatId: 'approval' });
    expect(resumed).not.toBeNull();
    secondReply.open();
    const [once, twice] = await Promise.all(readers);
    const replayed = await messageOf(await readAll(resumed as ReadableStream<UIMessageChunk>));

    const continued = await messageOf(once as UIMessageChunk[], answered);
    expect(await messageOf(twice as UIMessageChunk[], answered)).toEqual(continued);
    expect(continued.id).toBe(asked.id);
    expect(continued.parts).toContainEqual(
      expect.objectContaining({
        type: 'tool-delete_files',
        state: 'output-available',
        output: { deleted: '*.log' },
      }),
    );
    expect(textsOf(continued)).toEqual(['Deleting.', 'Done: {"deleted":"*.log"}']);
    expect(once?.at(-1)).toEqual({ type: 'finish', finishReason: 'stop' });
    expect(replayed.id).toBe(asked.id);
    expect(textsOf(replayed)).toEqual(['Deleting.', 'Done: {"deleted":"*.log"}']);
    expect(replayed.parts).toContainEqual(
      expect.objectContaining({ type: 'tool-delete_files', state: 'output-available', output: { deleted: '*.log' } }),
    );

    // Sent again once all is done: the same stream from the log, nothing applied again.
    const again = await messageOf(await readAll(await send(transport, 'approval', [user, answered])), answered);
    expect(again).toEqual(continued);
    expect(deleted).toEqual(['*.log']);
    expect(model.modelRequests()).toHaveLength(2);
    const session = await state('approval');
    const runs = Object.values(session.runs);
    expect(runs.map((run) => [run.status, run.continuesRunId])).toEqual([
      ['completed', undefined],
      ['completed', asked.id],
    ]);
    expect(session.issues).toEqual([]);

    // A client following the session with the host's own protocol sees the same conversation.
    const follower = await followed(
      baseURL,
      'approval',
      (followedState) => Object.values(followedState.runs).filter((run) => run.status === 'completed').length === 2,
    );
    expect(
      Object.values(follower.messages)
        .filter((entry) => entry.role === 'assistant')
        .map((entry) => entry.content),
    ).toEqual(textsOf(continued));
    expect(Object.values(follower.toolCalls).map((call) => [call.id, call.name, call.status, call.result])).toEqual([
      ['call_delete', 'delete_files', 'completed', { deleted: '*.log' }],
    ]);
    expect(Object.values(follower.approvals).map((approval) => [approval.id, approval.decision])).toEqual([
      ['approval-call_delete', 'approved'],
    ]);
  });

  it('denies a rejected tool call and the run answers without it', async () => {
    const deleted: string[] = [];
    const { provider } = await startModel((request) => {
      const [result] = request.toolResults;
      if (result === undefined) {
        return { toolCalls: [{ id: 'call_delete', name: 'delete_files', arguments: { glob: '*.log' } }] };
      }
      return { text: result.isError ? 'Nothing was deleted.' : 'Deleted.' };
    });
    const { transport } = await startHost(provider([deleteFilesTool(deleted)]));
    const user = userMessage('Clean up');
    const asked = await messageOf(await readAll(await send(transport, 'reject', [user])));
    const answered = approve(asked, false);
    const continued = await messageOf(await readAll(await send(transport, 'reject', [user, answered])), answered);
    expect(continued.parts).toContainEqual(
      expect.objectContaining({ type: 'tool-delete_files', state: 'output-denied' }),
    );
    expect(textsOf(continued)).toEqual(['Nothing was deleted.']);
    expect(deleted).toEqual([]);
  });

  it("continues a run with a client tool's output", async () => {
    const pickFile = defineAgentTool({
      name: 'pick_file',
      description: 'Asks the user to pick a file',
      inputSchema: z.object({}),
    });
    const { model, provider } = await startModel((request) => {
      const [result] = request.toolResults;
      if (result === undefined) return { toolCalls: [{ id: 'call_pick', name: 'pick_file', arguments: {} }] };
      return { text: `You picked ${(JSON.parse(result.content) as { file: string }).file}.` };
    });
    const { transport, state } = await startHost(provider([pickFile]));
    const user = userMessage('Open a file');
    const first = await readAll(await send(transport, 'pick', [user]));
    expect(first.at(-1)).toEqual({ type: 'finish', finishReason: 'tool-calls' });
    const asked = await messageOf(first);
    expect(asked.parts).toContainEqual(
      expect.objectContaining({ type: 'tool-pick_file', toolCallId: 'call_pick', state: 'input-available' }),
    );
    // As useChat's addToolOutput leaves the message.
    const withOutput = {
      ...asked,
      parts: asked.parts.map((part) =>
        part.type === 'tool-pick_file' ? { ...part, state: 'output-available', output: { file: 'report.pdf' } } : part,
      ),
    } as UIMessage;
    const continued = await messageOf(await readAll(await send(transport, 'pick', [user, withOutput])), withOutput);
    expect(continued.id).toBe(asked.id);
    expect(textsOf(continued)).toEqual(['You picked report.pdf.']);
    expect(model.modelRequests()[1]?.toolResults).toEqual([
      { toolCallId: 'call_pick', content: '{"file":"report.pdf"}', isError: false },
    ]);
    expect((await state('pick')).issues).toEqual([]);
  });

  it('resumes a run caught mid-way from its start, without duplicated text; 204 once nothing runs', async () => {
    const held = gate();
    // Keep-alive comments while the run is held: the transports below read through them.
    const { transport, api } = await startHost(heldRuntime(held.promise), { heartbeatMs: 5 });
    const reader = (await send(transport, 'reload', [userMessage('Hi')])).getReader();
    const before: UIMessageChunk[] = [];
    await readUntil(reader, before, (chunks) => chunks.some((chunk) => chunk.type === 'text-delta'));
    const partial = await messageOf(before);
    expect(textsOf(partial)).toEqual(['Hello ']);

    // The wire as it is: the protocol's headers, data frames, and comments while the run is silent.
    const controller = new AbortController();
    const raw = await fetch(`${api}/reload/stream`, { signal: controller.signal });
    expect([raw.status, raw.headers.get('content-type'), raw.headers.get('x-vercel-ai-ui-message-stream')]).toEqual([
      200,
      'text/event-stream',
      'v1',
    ]);
    const rawReader = (raw.body as ReadableStream<Uint8Array>).getReader();
    const decoder = new TextDecoder();
    let text = '';
    while (!text.includes(': keep-alive\n\n')) {
      const { done, value } = await rawReader.read();
      if (done) break;
      text += decoder.decode(value, { stream: true });
    }
    expect(text).toContain(': keep-alive\n\n');
    expect(text.startsWith(`data: {"type":"start","messageId":"${partial.id}"}\n\n`)).toBe(true);
    controller.abort();

    // The page reloads: useChat's resume reads the stream again, replayed from the run's start.
    const resumed = await transport.reconnectToStream({ chatId: 'reload' });
    expect(resumed).not.toBeNull();
    held.open();
    const replayed = await readAll(resumed as ReadableStream<UIMessageChunk>);
    const rest = [...before];
    await readUntil(reader, rest, (chunks) => chunks.some((chunk) => chunk.type === 'finish'));
    expect(replayed[0]).toEqual({ type: 'start', messageId: partial.id });
    expect(replayed.filter((chunk) => chunk.type === 'text-delta').map((chunk) => chunk.delta)).toEqual([
      'Hello ',
      'world',
    ]);
    const fromReplay = await messageOf(replayed);
    expect(textsOf(fromReplay)).toEqual(['Hello world']);
    expect(fromReplay).toEqual(await messageOf(rest));

    expect(await transport.reconnectToStream({ chatId: 'reload' })).toBeNull();
    expect(await transport.reconnectToStream({ chatId: 'never-used' })).toBeNull();
  });

  it('refuses what it cannot take: 415, 400 with the reason, 403 from authorize, 405', async () => {
    const { api, transport } = await startHost(heldRuntime(Promise.resolve()), {
      authorize: (_request, { sessionId }) => sessionId !== 'someone-elses',
    });
    const asText = await fetch(api, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: '{}' });
    expect([asText.status, ((await asText.json()) as { error: { code: string } }).error.code]).toEqual([
      415,
      'unsupported_media_type',
    ]);

    const post = (body: unknown) =>
      fetch(api, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    const refusal = async (response: Response) => [
      response.status,
      ((await response.json()) as { error: { code: string; message: string } }).error,
    ];
    expect(await refusal(await post({ id: 'c1', trigger: 'submit-message' }))).toEqual([
      400,
      { code: 'invalid_request', message: 'Invalid chat request: messages: missing (expected array)' },
    ]);
    expect(await refusal(await post({ id: 'c1', messages: [], trigger: 'submit-message' }))).toEqual([
      400,
      { code: 'invalid_request', message: 'Invalid chat request: messages: send at least one message' },
    ]);
    expect(
      await refusal(await post({ id: 'c1', messages: [{ id: 'm', role: 'user' }], trigger: 'submit-message' })),
    ).toEqual([
      400,
      { code: 'invalid_request', message: 'Invalid chat request: messages.0.parts: missing (expected array)' },
    ]);
    const assistantOnly = { id: 'a', role: 'assistant', parts: [{ type: 'text', text: 'Hello' }] };
    const [status, error] = await refusal(
      await post({ id: 'c1', messages: [userMessage('Hi'), assistantOnly], trigger: 'submit-message' }),
    );
    expect([status, (error as { message: string }).message]).toEqual([
      400,
      expect.stringContaining('answers nothing this chat waits for'),
    ]);

    // DefaultChatTransport throws the host's answer as it is.
    await expect(send(transport, 'someone-elses', [userMessage('Hi')])).rejects.toThrow(
      /"code":"forbidden","message":"Not allowed to run in this session"/,
    );
    await expect(transport.reconnectToStream({ chatId: 'someone-elses' })).rejects.toThrow(/forbidden/);

    const wrongMethod = await fetch(api);
    expect([wrongMethod.status, wrongMethod.headers.get('allow')]).toEqual([405, 'POST']);
  });
});
