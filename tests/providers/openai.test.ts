import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { createOpenAICompatibleAgentProvider } from '../../providers/openai/createOpenAICompatibleAgentProvider';
import { describeAgentProviderContract } from '../../providers/testing/describeAgentProviderContract';
import { runAgentProviderFixture } from '../../providers/testing/runAgentProviderFixture';
import { startFixtureServer } from '../support/fixtureServer';

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
    expect(state.runs['contract-run']).toMatchObject({
      status: 'completed',
      usage: { inputTokens: 25, outputTokens: 12, totalTokens: 37 },
    });
    expect(events.at(-1)?.meta).toEqual({
      openai: { finishReason: 'stop', model: 'gpt-4o-mini', completionId: 'chatcmpl-1' },
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

  it('answers 429 with a failed run marked retryable', async () => {
    const { startHttpServer } = await import('../support/httpServer');
    const limited = await startHttpServer((_request, response) => {
      response.writeHead(429, { 'content-type': 'application/json' });
      response.end('{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}');
    });
    try {
      const limitedProvider = createOpenAICompatibleAgentProvider({ baseURL: limited.url, model: 'm' });
      const { state } = await runAgentProviderFixture(limitedProvider, input('text.sse'));
      expect(state.runs['contract-run']?.error).toMatchObject({ code: 'http_error', retryable: true });
    } finally {
      await limited.close();
    }
  });
});
