import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { runAgentProvider } from '../../providers';
import { createOpenAICompatibleAgentProvider } from '../../providers/openai/createOpenAICompatibleAgentProvider';
import { fromOpenAIContent, toOpenAIContent } from '../../providers/openai/openAIContent';
import { describeAgentProviderContract } from '../../providers/testing/describeAgentProviderContract';
import { runAgentProviderFixture } from '../../providers/testing/runAgentProviderFixture';
import { startFixtureServer } from '../support/fixtureServer';
import { startHttpServer } from '../support/httpServer';

const fixtures = fileURLToPath(new URL('../../providers/openai/__fixtures__', import.meta.url));
const server = await startFixtureServer(
  fixtures,
  (body) => (body as { metadata: { fixture: string } }).metadata.fixture,
);
afterAll(() => server.close());

const provider = createOpenAICompatibleAgentProvider({
  baseURL: `${server.url}/v1/`,
  apiKey: 'sk-test',
  model: 'gpt-4o-mini',
});
const input = (fixture: string) => ({
  messages: [{ role: 'user' as const, content: 'Weather in Paris and Rome?' }],
  tools: [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object' } } }],
  body: { metadata: { fixture }, temperature: 0 },
});
const values = <T>(record: Record<string, T>) => Object.values(record);

describeAgentProviderContract('openai-compatible', {
  provider,
  fixtures: [
    { name: 'text with usage', input: input('text.sse') },
    { name: 'parallel tool calls', input: input('parallel-tool-calls.sse') },
    { name: 'reasoning_content (DeepSeek, vLLM)', input: input('reasoning-content.sse') },
    { name: 'reasoning (OpenRouter)', input: input('reasoning-field.sse') },
    { name: 'error mid-stream', input: input('error-midstream.sse'), status: 'failed' },
    { name: 'unicode, empty deltas, changing ids', input: input('unicode-changing-ids.sse') },
    { name: 'tool calls without ids, index reused', input: input('tool-calls-without-ids.sse') },
    { name: 'content filter', input: input('content-filter.sse') },
    { name: 'no [DONE]', input: input('no-done.sse') },
    { name: 'truncated stream', input: input('truncated.sse'), status: 'failed' },
    { name: 'refusal', input: input('refusal.sse') },
    { name: 'cross-provider scenario', input: input('scenario.sse') },
    { name: 'usage with details', input: input('usage-details.sse') },
    { name: 'content streamed as parts (Mistral)', input: input('content-parts.sse') },
    { name: 'empty tool call id', input: input('empty-tool-call-id.sse') },
    { name: 'empty tool call name', input: input('empty-tool-call-name.sse'), status: 'failed' },
    { name: 'malformed JSON frame', input: input('malformed.sse'), status: 'failed' },
    { name: 'chunk of the wrong shape', input: input('wrong-shape.sse'), status: 'failed' },
    { name: 'frame that is not a chunk', input: input('not-a-chunk.sse'), status: 'failed' },
  ],
});

describe('OpenAI-compatible provider mapping (over SSE from a loopback server)', () => {
  it('posts a streaming chat completion request with usage and the key', async () => {
    const before = server.requests.length;
    await runAgentProviderFixture(provider, input('text.sse'));
    const request = server.requests[before];
    expect(request?.url).toBe('/v1/chat/completions');
    expect(request?.headers.authorization).toBe('Bearer sk-test');
    expect(JSON.parse(request?.body ?? '{}')).toEqual({
      metadata: { fixture: 'text.sse' },
      temperature: 0,
      model: 'gpt-4o-mini',
      messages: [{ role: 'user', content: 'Weather in Paris and Rome?' }],
      stream: true,
      stream_options: { include_usage: true },
      tools: [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object' } } }],
    });
  });

  it('streams text and reports usage and the finish reason', async () => {
    const { state, events } = await runAgentProviderFixture(provider, input('text.sse'));
    expect(values(state.messages).map((message) => [message.role, message.content])).toEqual([
      ['user', 'Weather in Paris and Rome?'],
      ['assistant', 'Hello, world'],
    ]);
    expect(state.runs['contract-run']?.status).toBe('completed');
    expect(state.runs['contract-run']?.usage).toEqual({
      inputTokens: 25,
      outputTokens: 12,
      totalTokens: 37,
      cacheReadTokens: 0,
    });
    expect(events.at(-1)?.meta).toEqual({
      openai: {
        finishReason: 'stop',
        model: 'gpt-4o-mini',
        completionId: 'chatcmpl-1',
        usage: {
          prompt_tokens: 25,
          completion_tokens: 12,
          total_tokens: 37,
          prompt_tokens_details: { cached_tokens: 0 },
        },
      },
    });
  });

  it('assembles parallel tool calls by index and leaves them to the application', async () => {
    const { state } = await runAgentProviderFixture(provider, input('parallel-tool-calls.sse'));
    expect(
      values(state.toolCalls).map((tool) => [tool.id, tool.name, tool.arguments, tool.parsedArguments, tool.status]),
    ).toEqual([
      ['call_Paris', 'get_weather', '{"city":"Paris"}', { city: 'Paris' }, 'awaiting_execution'],
      ['call_Rome', 'get_weather', '{"city":"Rome"}', { city: 'Rome' }, 'awaiting_execution'],
    ]);
    expect(state.runs['contract-run']?.pendingToolCallIds).toEqual(['call_Paris', 'call_Rome']);
    expect(values(state.messages)).toHaveLength(1);
  });

  it('maps reasoning_content and reasoning to reasoning entities', async () => {
    const deepseek = await runAgentProviderFixture(provider, input('reasoning-content.sse'));
    expect(values(deepseek.state.reasoning).map((reasoning) => [reasoning.content, reasoning.status])).toEqual([
      ['The user greets me. I should greet back.', 'completed'],
    ]);
    expect(values(deepseek.state.messages)[1]?.content).toBe('Hi!');
    const openrouter = await runAgentProviderFixture(provider, input('reasoning-field.sse'));
    expect(values(openrouter.state.reasoning)[0]?.content).toBe('Thinking via OpenRouter.');
  });

  it('fails the run with the error object sent mid-stream, marked retryable', async () => {
    const { state } = await runAgentProviderFixture(provider, input('error-midstream.sse'));
    expect(state.runs['contract-run']?.error).toEqual({
      message: 'The server had an error while processing your request.',
      code: 'server_error',
      retryable: true,
    });
    expect(values(state.messages)[1]).toMatchObject({ status: 'failed', content: 'Partial answer' });
  });

  it('keeps one message id when the backend changes ids per frame, and joins unicode', async () => {
    const { state, events } = await runAgentProviderFixture(provider, input('unicode-changing-ids.sse'));
    expect(values(state.messages).map((message) => message.content)).toEqual([
      'Weather in Paris and Rome?',
      'Grüße 🙂 日本語',
    ]);
    expect(events.filter((event) => event.type === 'message.delta')).toHaveLength(3);
    expect(
      events.find((event) => event.type === 'message.completed' && event.payload.messageId !== 'prompt')?.meta,
    ).toEqual({
      openai: { finishReason: 'length' },
    });
  });

  it('gives ids to tool calls that have none, and tells reused indexes apart', async () => {
    const { state } = await runAgentProviderFixture(provider, input('tool-calls-without-ids.sse'));
    const tools = values(state.toolCalls);
    expect(tools.map((tool) => tool.parsedArguments)).toEqual([{ id: 1 }, { id: 2 }, { id: 3 }]);
    expect(tools[0]?.id).toMatch(/^call-contract-run-0-/);
    expect(tools.slice(1).map((tool) => tool.id)).toEqual(['call_2', 'call_3']);
  });

  it('keeps a refusal as the message text, marked in its meta', async () => {
    const { state } = await runAgentProviderFixture(provider, input('refusal.sse'));
    expect(values(state.messages)[1]).toMatchObject({
      content: "I can't help with that.",
      status: 'completed',
      meta: { openai: { finishReason: 'stop', refusal: true } },
    });
  });

  it('completes without [DONE] once a finish reason came, and fails a stream that just stops', async () => {
    const lenient = await runAgentProviderFixture(provider, input('no-done.sse'));
    expect(lenient.result.status).toBe('completed');
    const truncated = await runAgentProviderFixture(provider, input('truncated.sse'));
    expect(truncated.state.runs['contract-run']?.error?.code).toBe('incomplete_stream');
  });

  it('answers 429 with a failed run marked retryable, after the reconnect budget is spent', async () => {
    const limited = await startHttpServer((_request, response) => {
      response.writeHead(429, { 'content-type': 'application/json' });
      response.end('{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}');
    });
    try {
      const limitedProvider = createOpenAICompatibleAgentProvider({ baseURL: limited.url, model: 'm' });
      const { state, events } = await runAgentProviderFixture(limitedProvider, input('text.sse'), {
        reconnect: { maxAttempts: 2, initialDelay: 1, maxDelay: 2 },
      });
      // Retryable: the request was sent again twice before the run failed, once.
      expect(limited.requests).toHaveLength(3);
      expect(events.filter((event) => event.type === 'run.failed')).toHaveLength(1);
      expect(state.runs['contract-run']?.error).toMatchObject({
        message: `${limited.url}/chat/completions answered 429: Rate limit reached`,
        code: 'http_error',
        retryable: true,
      });
    } finally {
      await limited.close();
    }
  });
});

describe('OpenAI-compatible provider: what it keeps', () => {
  const image = { type: 'image_url', image_url: { url: 'https://example.com/cat.png' } };
  const audio = { type: 'input_audio', input_audio: { data: 'UklGRg==', format: 'wav' } };
  const pdf = { type: 'file', file: { file_data: 'data:application/pdf;base64,JVBERi0=', filename: 'a.pdf' } };

  it('keeps structured user content as parts, in AgentState and in the request', async () => {
    const before = server.requests.length;
    const content = [{ type: 'text', text: 'What is in these?' }, image, audio, pdf];
    const { state, events } = await runAgentProviderFixture(provider, {
      ...input('text.sse'),
      messages: [{ role: 'user' as const, content }],
    });
    const parts = [
      { type: 'text', text: 'What is in these?' },
      { type: 'image', url: 'https://example.com/cat.png' },
      { type: 'file', data: 'UklGRg==', mediaType: 'audio/wav' },
      { type: 'file', data: 'JVBERi0=', mediaType: 'application/pdf', name: 'a.pdf' },
    ];
    expect(events.find((event) => event.type === 'message.started')?.payload).toEqual({
      messageId: 'prompt',
      role: 'user',
      content: parts,
    });
    expect(state.messages['contract-run:prompt']?.content).toEqual(parts);
    expect(JSON.parse(server.requests[before]?.body ?? '{}').messages).toEqual([{ role: 'user', content }]);
  });

  it('sends our parts as OpenAI parts, and maps both ways without loss', async () => {
    const before = server.requests.length;
    const ours = [
      { type: 'text' as const, text: 'Look' },
      { type: 'image' as const, data: 'iVBORw0=', mediaType: 'image/png' },
      { type: 'file' as const, data: 'SUQz', mediaType: 'audio/mpeg' },
      { type: 'openai.refusal' as const, data: { type: 'refusal', refusal: 'no' } },
    ];
    await runAgentProviderFixture(provider, {
      ...input('text.sse'),
      messages: [{ role: 'user' as const, content: ours }],
    });
    const sent = [
      { type: 'text', text: 'Look' },
      { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0=' } },
      { type: 'input_audio', input_audio: { data: 'SUQz', format: 'mp3' } },
      { type: 'refusal', refusal: 'no' },
    ];
    expect(JSON.parse(server.requests[before]?.body ?? '{}').messages[0].content).toEqual(sent);
    expect(fromOpenAIContent(sent)).toEqual(ours);
    expect(toOpenAIContent(fromOpenAIContent([image, audio, pdf]) ?? [])).toEqual([image, audio, pdf]);
  });

  it('starts a user message with null content without content, never the text "null"', async () => {
    const { state, events } = await runAgentProviderFixture(provider, {
      ...input('text.sse'),
      messages: [{ role: 'user' as const, content: null }],
    });
    expect(events.find((event) => event.type === 'message.started')?.payload).toEqual({
      messageId: 'prompt',
      role: 'user',
    });
    expect(state.messages['contract-run:prompt']?.content).not.toBe('null');
  });

  it('normalizes usage to the six counters and keeps the wire usage in meta.openai.usage', async () => {
    const { events, state } = await runAgentProviderFixture(provider, input('usage-details.sse'));
    const completed = events.at(-1);
    expect(completed?.type).toBe('run.completed');
    expect(completed?.type === 'run.completed' && completed.payload.usage).toEqual({
      inputTokens: 1200,
      outputTokens: 300,
      totalTokens: 1500,
      reasoningTokens: 256,
      cacheReadTokens: 1024,
    });
    expect(state.runs['contract-run']?.usage).toEqual(completed?.type === 'run.completed' && completed.payload.usage);
    expect((completed?.meta?.openai as { usage?: unknown } | undefined)?.usage).toEqual({
      prompt_tokens: 1200,
      completion_tokens: 300,
      total_tokens: 1500,
      prompt_tokens_details: { cached_tokens: 1024, audio_tokens: 0 },
      completion_tokens_details: {
        reasoning_tokens: 256,
        audio_tokens: 0,
        accepted_prediction_tokens: 0,
        rejected_prediction_tokens: 0,
      },
    });
  });

  it("fails the run with the server's message on an HTTP error, keeping the status and body", async () => {
    const body = {
      error: { message: 'Incorrect API key provided: sk-bad.', type: 'invalid_request_error', code: 'invalid_api_key' },
    };
    const denied = await startHttpServer((_request, response) => {
      response.writeHead(401, { 'content-type': 'application/json' });
      response.end(JSON.stringify(body));
    });
    try {
      const deniedProvider = createOpenAICompatibleAgentProvider({ baseURL: denied.url, apiKey: 'sk-bad', model: 'm' });
      const { state, result } = await runAgentProviderFixture(deniedProvider, input('text.sse'));
      expect(result.status).toBe('failed');
      expect(state.runs['contract-run']?.error).toEqual({
        message: `${denied.url}/chat/completions answered 401: Incorrect API key provided: sk-bad.`,
        code: 'http_error',
        retryable: false,
        data: { status: 401, body },
      });
    } finally {
      await denied.close();
    }
  });

  it('fails the run on a malformed frame or a chunk of the wrong shape, naming the provider and the frame', async () => {
    const malformed = await runAgentProviderFixture(provider, input('malformed.sse'));
    expect(malformed.state.runs['contract-run']?.error).toEqual({
      message:
        'Invalid chunk from the OpenAI-compatible server: the frame is not JSON; the frame was {"id":"chatcmpl-9","choices":[{"index":0,"delta":{"content":"lo"}',
      code: 'invalid_openai_chunk',
      retryable: false,
    });
    expect(malformed.state.messages['contract-run:message-1']).toMatchObject({ status: 'failed', content: 'Hel' });
    const wrong = await runAgentProviderFixture(provider, input('wrong-shape.sse'));
    expect(wrong.state.runs['contract-run']?.error).toMatchObject({
      code: 'invalid_openai_chunk',
      message: expect.stringMatching(
        /^Invalid chunk from the OpenAI-compatible server at choices\.0\.delta\.content: expected a string or parts; the frame was \{"id":"chatcmpl-9"/,
      ),
    });
    const foreign = await runAgentProviderFixture(provider, input('not-a-chunk.sse'));
    expect(foreign.state.runs['contract-run']?.error?.message).toBe(
      'Invalid chunk from the OpenAI-compatible server at choices: is missing (not a chat.completion.chunk); the frame was {"type":"message_start","message":{"id":"msg_01","type":"message","role":"assistant","content":[]}}',
    );
  });

  it('reads the text parts of content streamed as parts', async () => {
    const { state } = await runAgentProviderFixture(provider, input('content-parts.sse'));
    expect(values(state.messages)[1]).toMatchObject({ content: 'Bonjour', status: 'completed' });
  });

  it('gives an empty tool call id a generated one', async () => {
    const { state, result } = await runAgentProviderFixture(provider, input('empty-tool-call-id.sse'));
    expect(result.status).toBe('completed');
    const tools = values(state.toolCalls);
    expect(tools.map((tool) => [tool.name, tool.parsedArguments, tool.status])).toEqual([
      ['get_weather', { city: 'Paris' }, 'awaiting_execution'],
    ]);
    expect(tools[0]?.id).toMatch(/^call-contract-run-0-\d+$/);
    expect(state.runs['contract-run']?.pendingToolCallIds).toEqual([tools[0]?.id]);
  });

  it('fails the run, not the caller, when a tool call has an empty name', async () => {
    const events: string[] = [];
    const result = await runAgentProvider({
      provider,
      input: input('empty-tool-call-name.sse'),
      sessionId: 's',
      runId: 'r',
      onEvent: (event) => events.push(event.type),
    });
    expect(result.status).toBe('failed');
    expect(events.at(-1)).toBe('run.failed');
    const { state } = await runAgentProviderFixture(provider, input('empty-tool-call-name.sse'));
    expect(state.runs['contract-run']?.error).toEqual({
      message:
        'Invalid chunk from the OpenAI-compatible server at tool_calls[0].function.name: a tool call must start with its function name, and the server sent ""; the frame was {"index":0,"id":"","function":{"name":""}}',
      code: 'invalid_openai_chunk',
      retryable: false,
    });
    expect(values(state.messages)[1]).toMatchObject({ content: 'Let me check.', status: 'failed' });
  });

  it('calls a headers function per request, so each request has the current token', async () => {
    let token = 0;
    const refreshing = createOpenAICompatibleAgentProvider({
      baseURL: `${server.url}/v1`,
      model: 'gpt-4o-mini',
      headers: async () => ({ authorization: `Bearer token-${++token}`, 'x-team': 'a' }),
    });
    const before = server.requests.length;
    await runAgentProviderFixture(refreshing, input('text.sse'));
    await runAgentProviderFixture(refreshing, input('text.sse'));
    expect(
      server.requests.slice(before).map((request) => [request.headers.authorization, request.headers['x-team']]),
    ).toEqual([
      ['Bearer token-1', 'a'],
      ['Bearer token-2', 'a'],
    ]);
  });
});
