import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  convertToModelMessages,
  createUIMessageStream,
  createUIMessageStreamResponse,
  DefaultChatTransport,
  jsonSchema,
  type ModelMessage,
  readUIMessageStream,
  simulateReadableStream,
  stepCountIs,
  streamText,
  type ToolSet,
  tool,
  type UIMessage,
  type UIMessageChunk,
} from 'ai';
import { MockLanguageModelV3 } from 'ai/test';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import type { AgentState } from '../../machines/agentState';
import { createAgentStore } from '../../machines/createAgentStore';
import type { AgentEvent } from '../../protocol/eventSchemas';
import type { AgentApprovalAnswer } from '../../providers/AgentProvider';
import type { AISDKChatInput } from '../../providers/ai-sdk';
import { createAISDKAgentProvider, toAISDKMessages } from '../../providers/ai-sdk';
import { createClientToolResultEvent } from '../../providers/clientToolResultEvent';
import { runAgentProvider } from '../../providers/runAgentProvider';

type ScriptedStream = Extract<ConstructorParameters<typeof MockLanguageModelV3>[0], object>['doStream'];
type StreamPart =
  Awaited<ReturnType<Extract<ScriptedStream, (...args: never[]) => unknown>>>['stream'] extends ReadableStream<
    infer Part
  >
    ? Part
    : never;

const TIMEOUT_MS = 10_000;

// A loopback server runs the real `ai` package: each request goes to the scenario's handler,
// and every byte of every answer is kept, to read again with the `ai` package's own reader.
type Handler = (request: IncomingMessage, body: string, response: ServerResponse) => Promise<void>;
let handler: Handler = async () => {
  throw new Error('no scenario');
};
const requests: Array<{ method: string; url: string; body: string }> = [];
const answers: Array<Uint8Array<ArrayBuffer>> = [];
const server = createServer((request, response) => {
  const chunks: Buffer[] = [];
  request.on('data', (chunk: Buffer) => chunks.push(chunk));
  request.on('end', () => {
    const body = Buffer.concat(chunks).toString('utf8');
    requests.push({ method: request.method ?? '', url: request.url ?? '', body });
    handler(request, body, response).catch((error: unknown) => {
      if (!response.headersSent) response.writeHead(500);
      response.end(String(error));
    });
  });
});
await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
const api = `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/chat`;
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));
beforeEach(() => {
  requests.length = 0;
  answers.length = 0;
});

/** Streams a web Response into the node one, keeping its bytes in `answers`; stops when the client goes. */
async function send(response: ServerResponse, answer: Response, cut?: number): Promise<void> {
  answer.headers.forEach((value, name) => {
    response.setHeader(name, value);
  });
  response.writeHead(answer.status);
  const reader = (answer.body as ReadableStream<Uint8Array>).getReader();
  response.on('close', () => void reader.cancel().catch(() => undefined));
  const kept: Uint8Array[] = [];
  let written = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    kept.push(value);
    if (cut !== undefined && written + value.length > cut) {
      // A connection dropped mid-stream: what was written reaches the client, then the socket goes.
      answers.push(Buffer.concat(kept));
      await new Promise<void>((resolve) => response.write(value.subarray(0, cut - written), () => resolve()));
      response.destroy();
      return;
    }
    written += value.length;
    response.write(value);
  }
  answers.push(Buffer.concat(kept));
  response.end();
}

const usage = {
  inputTokens: { total: 10, noCache: 10, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 5, text: 5, reasoning: undefined },
};
const finish = (reason: 'stop' | 'tool-calls'): StreamPart => ({
  type: 'finish',
  finishReason: { unified: reason, raw: reason },
  usage,
});
const text = (id: string, ...deltas: string[]): StreamPart[] => [
  { type: 'text-start', id },
  ...deltas.map((delta): StreamPart => ({ type: 'text-delta', id, delta })),
  { type: 'text-end', id },
];

/** A model that streams the script's parts for each call, the call's prompt picking the step. */
function scriptedModel(script: (prompt: ModelMessage[], call: number) => StreamPart[], delayMs = 0) {
  let call = 0;
  return new MockLanguageModelV3({
    doStream: async ({ prompt }) => {
      call += 1;
      const chunks = [{ type: 'stream-start', warnings: [] } as StreamPart, ...script(prompt as ModelMessage[], call)];
      return { stream: simulateReadableStream({ chunks, initialDelayInMs: 0, chunkDelayInMs: delayMs }) };
    },
  });
}

/** How many tool results the prompt holds: which step of a tool round trip the model is at. */
const toolResults = (prompt: ModelMessage[]) =>
  prompt.filter((message) => message.role === 'tool').flatMap((message) => message.content).length;

/**
 * The message the `ai` package's own reader builds from the kept bytes of the given answers,
 * continuing `message` when given (as `useChat` continues its last assistant message).
 */
async function readWithAISDK(
  bytes: ReadonlyArray<Uint8Array<ArrayBuffer>>,
  from?: UIMessage,
): Promise<{ message: UIMessage; errors: string[] }> {
  let message = from;
  const errors: string[] = [];
  for (const answer of bytes) {
    const transport = new DefaultChatTransport<UIMessage>({
      api: 'http://replay.invalid/api/chat',
      fetch: async () => new Response(answer, { headers: { 'content-type': 'text/event-stream' } }),
    });
    const stream: ReadableStream<UIMessageChunk> = await transport.sendMessages({
      chatId: 'replay',
      messages: [],
      trigger: 'submit-message',
      messageId: undefined,
      abortSignal: undefined,
    });
    const read = readUIMessageStream({
      ...(message === undefined ? {} : { message }),
      stream,
      onError: (error) => errors.push((error as Error).message),
    });
    for await (const snapshot of read) message = snapshot;
  }
  if (message === undefined) throw new Error('the answers held no message');
  return { message, errors };
}

/** The parts that both sides must agree on: text, reasoning, tools (input, output, state), sources, files, data. */
function essentials(parts: ReadonlyArray<Record<string, unknown>>): unknown[] {
  return parts.flatMap((part) => {
    const type = part.type as string;
    if (type === 'text' || type === 'reasoning') return [{ type, text: part.text }];
    if (type.startsWith('tool-') || type === 'dynamic-tool') {
      const approval = part.approval as { id: string; approved?: boolean } | undefined;
      return [
        {
          type,
          toolCallId: part.toolCallId,
          state: part.state,
          input: part.input,
          output: part.output,
          errorText: part.errorText,
          approval: approval === undefined ? undefined : { id: approval.id, approved: approval.approved },
        },
      ];
    }
    if (type === 'source-url') return [{ type, sourceId: part.sourceId, url: part.url, title: part.title }];
    if (type === 'file') return [{ type, url: part.url, mediaType: part.mediaType }];
    if (type.startsWith('data-')) return [{ type, id: part.id, data: part.data }];
    if (type === 'step-start') return [{ type }];
    return [{ type, unexpected: true }];
  });
}

/** The session's assistant messages, as this provider put them into AgentState. */
function assistantOf(state: AgentState, sessionId: string) {
  return toAISDKMessages(state, sessionId).filter((message) => message.role === 'assistant');
}

const provider = createAISDKAgentProvider({ api, headers: { authorization: 'Bearer test-token' } });

function runner(sessionId: string) {
  const store = createAgentStore();
  const events: AgentEvent[] = [];
  const run = (
    runId: string,
    input: AISDKChatInput,
    options: { continues?: string; approvals?: AgentApprovalAnswer[]; signal?: AbortSignal } = {},
  ) =>
    runAgentProvider({
      provider,
      input,
      sessionId,
      runId,
      history: store.getSnapshot(),
      ...(options.continues === undefined
        ? {}
        : { continuation: { runId: options.continues, approvals: options.approvals ?? [] } }),
      signal: options.signal ?? AbortSignal.timeout(TIMEOUT_MS),
      reconnect: false,
      onEvent: (event) => {
        events.push(event);
        store.dispatch(event);
      },
    });
  return { store, events, run };
}

/** The kept answers read by the `ai` package agree with AgentState: the same parts, in the same order. */
async function expectAgreement(state: AgentState, sessionId: string) {
  const { message } = await readWithAISDK(answers);
  const ours = assistantOf(state, sessionId);
  expect(ours).toHaveLength(1);
  expect(essentials(ours[0]?.parts ?? [])).toEqual(essentials(message.parts as Array<Record<string, unknown>>));
  return message;
}

const weatherTool = tool({
  description: 'Current temperature in a city.',
  inputSchema: jsonSchema<{ city: string }>({ type: 'object', properties: { city: { type: 'string' } } }),
  execute: async ({ city }) => ({ city, celsius: 14 }),
});

/** A route handler: `streamText` over the model and tools, answered with `toUIMessageStreamResponse`. */
function chatRoute<Tools extends ToolSet>(
  model: MockLanguageModelV3,
  tools: Tools = {} as Tools,
  streamOptions: Parameters<ReturnType<typeof streamText>['toUIMessageStreamResponse']>[0] = {},
): Handler {
  return async (_request, body, response) => {
    const { messages } = JSON.parse(body) as { messages: UIMessage[] };
    const result = streamText({
      model,
      messages: await convertToModelMessages(messages, { tools }),
      tools,
      stopWhen: stepCountIs(5),
      // The error reaches the client in the stream; the default would also log it.
      onError: () => undefined,
    });
    const answer = result.toUIMessageStreamResponse({
      originalMessages: messages,
      generateMessageId: () => `msg-${requests.length}`,
      ...streamOptions,
    });
    await send(response, answer);
  };
}

describe('AI SDK provider against the real `ai` package (streamText, MockLanguageModelV3)', () => {
  it('streams text and reasoning; AgentState agrees with readUIMessageStream, and the request is DefaultChatTransport’s', async () => {
    handler = chatRoute(
      scriptedModel(() => [
        { type: 'reasoning-start', id: 'r1' },
        { type: 'reasoning-delta', id: 'r1', delta: 'Think ' },
        { type: 'reasoning-delta', id: 'r1', delta: 'first.' },
        { type: 'reasoning-end', id: 'r1' },
        ...text('t1', 'Hello', ', ', 'world'),
        finish('stop'),
      ]),
      {},
      { sendReasoning: true },
    );
    const { store, run } = runner('chat-text');
    expect(await run('run-1', { prompt: 'Say hello' })).toEqual({ runId: 'run-1', status: 'completed' });

    const request = JSON.parse(requests[0]?.body ?? '{}');
    expect(requests[0]?.method).toBe('POST');
    expect(request).toEqual({
      id: 'chat-text',
      messages: [{ id: 'user-run-1', role: 'user', parts: [{ type: 'text', text: 'Say hello' }] }],
      trigger: 'submit-message',
    });
    const state = store.getSnapshot();
    expect(state.issues).toEqual([]);
    const assistant = Object.values(state.messages).filter((message) => message.role === 'assistant');
    expect(assistant.map((message) => [message.content, message.status])).toEqual([['Hello, world', 'completed']]);
    expect(Object.values(state.reasoning).map((reasoning) => reasoning.content)).toEqual(['Think first.']);
    const message = await expectAgreement(state, 'chat-text');
    expect(message.id).toBe('msg-1');
    expect(assistantOf(state, 'chat-text')[0]?.id).toBe('msg-1');
  });

  it('runs a server tool (with execute) over two steps; the tool’s input and output agree', async () => {
    handler = chatRoute(
      scriptedModel((prompt) =>
        toolResults(prompt) === 0
          ? [
              { type: 'tool-input-start', id: 'call-1', toolName: 'weather' },
              { type: 'tool-input-delta', id: 'call-1', delta: '{"city":' },
              { type: 'tool-input-delta', id: 'call-1', delta: '"Oslo"}' },
              { type: 'tool-input-end', id: 'call-1' },
              { type: 'tool-call', toolCallId: 'call-1', toolName: 'weather', input: '{"city":"Oslo"}' },
              finish('tool-calls'),
            ]
          : [...text('t1', 'It is 14 °C in Oslo.'), finish('stop')],
      ),
      { weather: weatherTool },
    );
    const { store, run } = runner('chat-server-tool');
    expect((await run('run-1', { prompt: 'Weather in Oslo?' })).status).toBe('completed');
    const state = store.getSnapshot();
    expect(state.issues).toEqual([]);
    const toolCall = Object.values(state.toolCalls)[0];
    expect(toolCall).toMatchObject({
      id: 'call-1',
      name: 'weather',
      status: 'completed',
      parsedArguments: { city: 'Oslo' },
      result: { city: 'Oslo', celsius: 14 },
    });
    expect(state.runs['run-1']?.pendingToolCallIds).toBeUndefined();
    expect(Object.values(state.tasks).map((task) => [task.id, task.status])).toEqual([
      ['step-1', 'completed'],
      ['step-2', 'completed'],
    ]);
    await expectAgreement(state, 'chat-server-tool');
  });

  it('waits on a client tool (no execute), then the client’s result continues the run', async () => {
    // No execute: the client runs it. (Its output type is `never`, which ToolSet refuses under
    // exactOptionalPropertyTypes, hence the widening.)
    const tools: ToolSet = {
      location: tool({
        description: 'The user’s location, asked in the browser.',
        inputSchema: jsonSchema<{ precise: boolean }>({ type: 'object', properties: { precise: { type: 'boolean' } } }),
      }) as unknown as ToolSet[string],
    };
    handler = chatRoute(
      scriptedModel((prompt) =>
        toolResults(prompt) === 0
          ? [
              { type: 'tool-call', toolCallId: 'loc-1', toolName: 'location', input: '{"precise":true}' },
              finish('tool-calls'),
            ]
          : [...text('t2', 'You are in Oslo.'), finish('stop')],
      ),
      tools,
    );
    const { store, run } = runner('chat-client-tool');
    expect((await run('run-1', { prompt: 'Where am I?' })).status).toBe('completed');
    let state = store.getSnapshot();
    expect(state.runs['run-1']?.pendingToolCallIds).toEqual(['loc-1']);
    expect(Object.values(state.toolCalls)[0]?.status).toBe('awaiting_execution');

    store.dispatch(
      createClientToolResultEvent({
        sessionId: 'chat-client-tool',
        runId: 'run-1',
        afterSequence: state.lastSequenceByRun['run-1'] ?? 0,
        timestamp: Date.now(),
        toolCallId: 'loc-1',
        result: { city: 'Oslo' },
      }),
    );
    expect((await run('run-2', {}, { continues: 'run-1' })).status).toBe('completed');

    const sent = JSON.parse(requests[1]?.body ?? '{}') as { messages: UIMessage[] };
    expect(sent.messages.map((message) => message.role)).toEqual(['user', 'assistant']);
    expect(sent.messages[1]?.parts.find((part) => part.type === 'tool-location')).toMatchObject({
      toolCallId: 'loc-1',
      state: 'output-available',
      input: { precise: true },
      output: { city: 'Oslo' },
    });
    state = store.getSnapshot();
    expect(state.issues).toEqual([]);
    expect(state.runs['run-2']?.continuesRunId).toBe('run-1');
    // Both answers continue one AI SDK message: the `ai` reader, given the first, agrees.
    const first = await readWithAISDK([answers[0] as Uint8Array<ArrayBuffer>]);
    const locationPart = first.message.parts.find((part) => part.type === 'tool-location') as { state: string };
    expect(locationPart.state).toBe('input-available');
    const ours = assistantOf(state, 'chat-client-tool');
    expect(ours).toHaveLength(1);
    expect(essentials(ours[0]?.parts ?? []).filter((part) => (part as { type: string }).type === 'text')).toEqual([
      { type: 'text', text: 'You are in Oslo.' },
    ]);
  });

  for (const decision of ['approved', 'rejected'] as const) {
    it(`asks for approval (needsApproval), and the continuation carries the answer (${decision})`, async () => {
      const sent: string[] = [];
      const tools = {
        send_email: tool({
          description: 'Sends an email.',
          inputSchema: jsonSchema<{ to: string }>({ type: 'object', properties: { to: { type: 'string' } } }),
          needsApproval: true,
          execute: async ({ to }) => {
            sent.push(to);
            return { sent: true };
          },
        }),
      };
      handler = chatRoute(
        scriptedModel((prompt) =>
          prompt.some((message) => message.role === 'tool')
            ? [...text('t2', decision === 'approved' ? 'Sent.' : 'Not sent.'), finish('stop')]
            : [
                { type: 'tool-call', toolCallId: 'mail-1', toolName: 'send_email', input: '{"to":"team@example.com"}' },
                finish('tool-calls'),
              ],
        ),
        tools,
      );
      const sessionId = `chat-approval-${decision}`;
      const { store, run, events } = runner(sessionId);
      expect((await run('run-1', { prompt: 'Email the team' })).status).toBe('completed');
      let state = store.getSnapshot();
      const approval = Object.values(state.approvals)[0];
      expect(approval).toMatchObject({ toolCallId: 'mail-1', status: 'waiting' });
      expect(state.runs['run-1']?.pendingApprovalIds).toEqual([approval?.id]);
      expect(state.runs['run-1']?.pendingToolCallIds).toEqual(['mail-1']);
      const firstAnswer = await readWithAISDK([answers[0] as Uint8Array<ArrayBuffer>]);
      expect(essentials(assistantOf(state, sessionId)[0]?.parts ?? [])).toEqual(
        essentials(firstAnswer.message.parts as Array<Record<string, unknown>>),
      );

      const approvalId = approval?.id as string;
      const answer: AgentApprovalAnswer = { approvalId, status: 'resolved', decision, data: 'checked' };
      expect((await run('run-2', {}, { continues: 'run-1', approvals: [answer] })).status).toBe('completed');

      const request = JSON.parse(requests[1]?.body ?? '{}') as { messages: UIMessage[] };
      expect(request.messages[1]?.parts.find((part) => part.type === 'tool-send_email')).toMatchObject({
        toolCallId: 'mail-1',
        state: 'approval-responded',
        approval: { id: approvalId, approved: decision === 'approved', reason: 'checked' },
      });
      expect(sent).toEqual(decision === 'approved' ? ['team@example.com'] : []);
      state = store.getSnapshot();
      expect(state.issues).toEqual([]);
      expect(Object.values(state.approvals)[0]).toMatchObject({ status: 'resolved', decision });
      expect(Object.values(state.toolCalls)[0]).toMatchObject(
        decision === 'approved'
          ? { status: 'completed', result: { sent: true } }
          : { status: 'cancelled', reason: 'denied' },
      );
      expect(events.filter((event) => event.type === 'approval.resolved').map((event) => event.runId)).toEqual([
        'run-2',
      ]);
      // The `ai` reader agrees, given the first answer, then the user's answer as `addToolApprovalResponse`
      // records it, then the second answer.
      const answered = structuredClone(firstAnswer.message);
      const part = answered.parts.find((entry) => entry.type === 'tool-send_email') as Record<string, unknown>;
      part.state = 'approval-responded';
      part.approval = { id: approvalId, approved: decision === 'approved', reason: 'checked' };
      const both = await readWithAISDK([answers[1] as Uint8Array<ArrayBuffer>], answered);
      const ours = assistantOf(state, sessionId);
      expect(ours).toHaveLength(1);
      expect(essentials(ours[0]?.parts ?? [])).toEqual(
        essentials(both.message.parts as Array<Record<string, unknown>>),
      );
    });
  }

  it('keeps data parts (same id replaces, transient not kept) and sources, written with createUIMessageStream', async () => {
    handler = async (_request, body, response) => {
      const { messages } = JSON.parse(body) as { messages: UIMessage[] };
      const result = streamText({
        model: scriptedModel(() => [
          { type: 'source', sourceType: 'url', id: 'src-1', url: 'https://example.com/oslo', title: 'Oslo' },
          ...text('t1', 'Sunny.'),
          finish('stop'),
        ]),
        messages: await convertToModelMessages(messages),
      });
      const stream = createUIMessageStream({
        execute: async ({ writer }) => {
          writer.write({ type: 'data-weather', id: 'w1', data: { status: 'loading' } });
          writer.write({ type: 'data-notice', data: 'looking it up', transient: true });
          writer.merge(result.toUIMessageStream({ sendSources: true }));
          await result.consumeStream();
          writer.write({ type: 'data-weather', id: 'w1', data: { status: 'done', celsius: 14 } });
        },
      });
      await send(response, createUIMessageStreamResponse({ stream }));
    };
    const { store, run, events } = runner('chat-data');
    expect((await run('run-1', { prompt: 'Weather?' })).status).toBe('completed');
    const state = store.getSnapshot();
    expect(state.issues).toEqual([]);
    expect(Object.values(state.activities).map(({ id, activityType, content }) => [id, activityType, content])).toEqual(
      [['data-weather:w1', 'data-weather', { status: 'done', celsius: 14 }]],
    );
    expect(state.extensions['run-1']?.filter((record) => record.name === 'ai-sdk.transient-data')).toMatchObject([
      { data: { type: 'data-notice', data: 'looking it up' } },
    ]);
    expect(Object.values(state.artifacts)).toMatchObject([
      { id: 'src-1', uri: 'https://example.com/oslo', title: 'Oslo' },
    ]);
    expect(events.filter((event) => event.type === 'activity.snapshot')).toHaveLength(2);
    await expectAgreement(state, 'chat-data');
  });

  it('fails the run with the error chunk’s text; the `ai` reader reports the same error', async () => {
    handler = chatRoute(
      scriptedModel(() => [
        ...text('t1', 'Partial answer'),
        { type: 'error', error: new Error('the model broke') },
        finish('stop'),
      ]),
      {},
      { onError: (error) => `Backend error: ${(error as Error).message}` },
    );
    const { store, run } = runner('chat-error');
    const result = await run('run-1', { prompt: 'Go' });
    expect(result.status).toBe('failed');
    const state = store.getSnapshot();
    expect(state.runs['run-1']?.error).toEqual({ message: 'Backend error: the model broke', code: 'ai_sdk_error' });
    const { errors } = await readWithAISDK(answers);
    expect(errors).toEqual(['Backend error: the model broke']);
    await expectAgreement(state, 'chat-error');
  });

  it('cancels the run on an abort chunk (the server aborted streamText)', async () => {
    handler = async (_request, body, response) => {
      const { messages } = JSON.parse(body) as { messages: UIMessage[] };
      const controller = new AbortController();
      const result = streamText({
        model: scriptedModel(() => [...text('t1', 'one ', 'two ', 'three ', 'four'), finish('stop')], 5),
        messages: await convertToModelMessages(messages),
        abortSignal: controller.signal,
        onChunk: ({ chunk }) => {
          if (chunk.type === 'text-delta' && chunk.text === 'two ') controller.abort();
        },
      });
      await send(response, result.toUIMessageStreamResponse());
    };
    const { store, run } = runner('chat-abort-chunk');
    expect((await run('run-1', { prompt: 'Count' })).status).toBe('cancelled');
    const state = store.getSnapshot();
    const chunks = Buffer.concat(answers).toString('utf8');
    expect(chunks).toContain('"type":"abort"');
    expect(state.runs['run-1']?.status).toBe('cancelled');
    const { message } = await readWithAISDK(answers);
    const theirs = essentials(message.parts as Array<Record<string, unknown>>).filter(
      (part) => (part as { type: string }).type === 'text',
    );
    const ours = Object.values(state.messages)
      .filter((entry) => entry.role === 'assistant')
      .map((entry) => ({ type: 'text', text: entry.content }));
    expect(ours).toEqual(theirs);
  });

  it('cancels the run when the client aborts mid-stream, keeping the text that arrived', async () => {
    let closed!: () => void;
    const serverSawClose = new Promise<void>((resolve) => {
      closed = resolve;
    });
    handler = async (request, body, response) => {
      request.socket.on('close', () => closed());
      const { messages } = JSON.parse(body) as { messages: UIMessage[] };
      const deltas = Array.from({ length: 200 }, (_, index) => `w${index} `);
      const result = streamText({
        model: scriptedModel(() => [...text('t1', ...deltas), finish('stop')], 5),
        messages: await convertToModelMessages(messages),
      });
      await send(response, result.toUIMessageStreamResponse());
    };
    const controller = new AbortController();
    const timeout = AbortSignal.timeout(TIMEOUT_MS);
    const signal = AbortSignal.any([controller.signal, timeout]);
    const store = createAgentStore();
    const result = await runAgentProvider({
      provider,
      input: { prompt: 'Count' },
      sessionId: 'chat-abort',
      runId: 'run-1',
      signal,
      reconnect: false,
      onEvent: (event) => {
        store.dispatch(event);
        if (event.type === 'message.delta' && event.payload.delta === 'w2 ') controller.abort();
      },
    });
    expect(result.status).toBe('cancelled');
    await serverSawClose;
    const message = Object.values(store.getSnapshot().messages).find((entry) => entry.role === 'assistant');
    expect(message?.status).toBe('cancelled');
    expect(message?.content).toBe('w0 w1 w2 ');
  });
});

describe('AI SDK provider: resuming with GET {api}/{chatId}/stream', () => {
  /** The whole answer of a streamText run, as bytes, to serve cut and then again whole. */
  async function recordedAnswer(): Promise<Uint8Array<ArrayBuffer>> {
    const deltas = Array.from({ length: 30 }, (_, index) => `part${index} `);
    const result = streamText({
      model: scriptedModel(() => [...text('t1', ...deltas), finish('stop')]),
      prompt: 'Count',
    });
    return new Uint8Array(await result.toUIMessageStreamResponse().arrayBuffer());
  }
  const fullText = Array.from({ length: 30 }, (_, index) => `part${index} `).join('');

  /** POST answers the first `cut` bytes and drops the connection; GET .../stream replays the whole stream. */
  function droppingRoute(bytes: Uint8Array<ArrayBuffer>, cut: number, resumeStatus = 200): Handler {
    return async (request, _body, response) => {
      const headers = { 'content-type': 'text/event-stream', 'x-vercel-ai-ui-message-stream': 'v1' };
      if (request.method === 'GET') {
        if (resumeStatus === 204) {
          response.writeHead(204);
          return void response.end();
        }
        return send(response, new Response(bytes, { headers }));
      }
      await send(response, new Response(bytes, { headers }), cut);
    };
  }

  it('reconnects after a drop, reads the replay from the start, and applies nothing twice', async () => {
    const bytes = await recordedAnswer();
    handler = droppingRoute(bytes, Math.floor(bytes.length / 2));
    const store = createAgentStore();
    const result = await runAgentProvider({
      provider,
      input: { prompt: 'Count' },
      sessionId: 'chat/resume 1',
      runId: 'run-1',
      signal: AbortSignal.timeout(TIMEOUT_MS),
      reconnect: { maxAttempts: 2, initialDelay: 0, maxDelay: 0 },
      sleep: async () => undefined,
      onEvent: store.dispatch,
    });
    expect(result.status).toBe('completed');
    expect(requests.map(({ method, url }) => [method, url])).toEqual([
      ['POST', '/api/chat'],
      ['GET', '/api/chat/chat%2Fresume%201/stream'],
    ]);
    const state = store.getSnapshot();
    expect(state.issues).toEqual([]);
    const texts = Object.values(state.messages).filter((message) => message.role === 'assistant');
    expect(texts.map((message) => message.content)).toEqual([fullText]);
  });

  it('resumes in a new call from the saved cursor: the replay is mapped again and absorbed up to the last sequence', async () => {
    const bytes = await recordedAnswer();
    handler = droppingRoute(bytes, Math.floor(bytes.length / 2));
    const store = createAgentStore();
    let cursor: string | undefined;
    // The first call's process goes down with the connection: what it applied before the drop is
    // all the log has (the failure it would have written never is).
    let down = false;
    const first = await runAgentProvider({
      provider,
      input: { prompt: 'Count' },
      sessionId: 'chat-resume-2',
      runId: 'run-1',
      signal: AbortSignal.timeout(TIMEOUT_MS),
      reconnect: false,
      onCursor: (value) => {
        if (!down) cursor = value;
      },
      onEvent: (event, admission) => {
        if (event.type.endsWith('.failed')) down = true;
        if (!down) store.dispatch(event, admission);
      },
    });
    expect(first).toMatchObject({ status: 'failed', error: { code: 'network_error' } });
    const partial = Object.values(store.getSnapshot().messages).find((message) => message.role === 'assistant');
    expect(partial?.content.length).toBeGreaterThan(0);
    expect(fullText.startsWith(partial?.content as string)).toBe(true);
    expect(partial?.content).not.toBe(fullText);

    const lastSequence = store.getSnapshot().lastSequenceByRun['run-1'] ?? 0;
    const resumed = await runAgentProvider({
      provider,
      input: { prompt: 'Count' },
      sessionId: 'chat-resume-2',
      runId: 'run-1',
      resume: { cursor: cursor as string, lastSequence },
      history: store.getSnapshot(),
      signal: AbortSignal.timeout(TIMEOUT_MS),
      onEvent: store.dispatch,
    });
    expect(resumed.status).toBe('completed');
    const state = store.getSnapshot();
    expect(state.issues).toEqual([]);
    const texts = Object.values(state.messages).filter((message) => message.role === 'assistant');
    expect(texts.map((message) => message.content)).toEqual([fullText]);
    expect(Object.values(state.messages).filter((message) => message.role === 'user')).toHaveLength(1);
  });

  it('fails the run with nothing_to_resume when the server answers 204', async () => {
    const bytes = await recordedAnswer();
    handler = droppingRoute(bytes, Math.floor(bytes.length / 2), 204);
    const store = createAgentStore();
    const result = await runAgentProvider({
      provider,
      input: { prompt: 'Count' },
      sessionId: 'chat-resume-3',
      runId: 'run-1',
      signal: AbortSignal.timeout(TIMEOUT_MS),
      reconnect: { maxAttempts: 2, initialDelay: 0, maxDelay: 0 },
      sleep: async () => undefined,
      onEvent: store.dispatch,
    });
    expect(result.status).toBe('failed');
    expect(store.getSnapshot().runs['run-1']?.error?.code).toBe('nothing_to_resume');
  });
});
