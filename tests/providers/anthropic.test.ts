import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { createAnthropicAgentProvider } from '../../providers/anthropic/createAnthropicAgentProvider';
import type { AnthropicExtensionEvent } from '../../providers/anthropic/mapAnthropicEvent';
import { describeAgentProviderContract } from '../../providers/testing/describeAgentProviderContract';
import { runAgentProviderFixture } from '../../providers/testing/runAgentProviderFixture';
import { startFixtureServer } from '../support/fixtureServer';
import { startHttpServer } from '../support/httpServer';

const fixtures = fileURLToPath(new URL('../../providers/anthropic/__fixtures__', import.meta.url));
const server = await startFixtureServer(
  fixtures,
  (body) => (body as { metadata: { user_id: string } }).metadata.user_id,
);
afterAll(() => server.close());

const extensions: AnthropicExtensionEvent[] = [];
const provider = createAnthropicAgentProvider({
  baseURL: server.url,
  apiKey: 'sk-ant-test',
  model: 'claude-sonnet-4-5',
  maxTokens: 1024,
  onExtension: (extension) => extensions.push(extension),
});
// The fixture name rides in `metadata.user_id`, a field the Messages API accepts.
const input = (fixture: string) => ({
  messages: [{ role: 'user' as const, content: 'Weather in Paris and Rome?' }],
  system: 'Be brief.',
  body: { metadata: { user_id: fixture } },
});
const values = <T>(record: Record<string, T>) => Object.values(record);

describeAgentProviderContract('anthropic', {
  provider,
  fixtures: [
    { name: 'text', input: input('text.sse') },
    { name: 'thinking and tool use', input: input('thinking-and-tools.sse') },
    { name: 'redacted thinking', input: input('redacted-thinking.sse') },
    { name: 'web search and citations', input: input('web-search-citations.sse') },
    { name: 'overloaded_error mid-stream', input: input('overloaded-midstream.sse'), status: 'failed' },
    { name: 'invalid_request_error', input: input('invalid-request-error.sse'), status: 'failed' },
    { name: 'unicode and empty deltas', input: input('unicode-empty-deltas.sse') },
    { name: 'truncated stream', input: input('truncated.sse'), status: 'failed' },
    { name: 'cross-provider scenario', input: input('scenario.sse') },
    { name: 'tool_use with an empty id', input: input('empty-tool-use-id.sse') },
    { name: 'tool_use with an empty name', input: input('empty-tool-use-name.sse'), status: 'failed' },
    { name: 'malformed JSON frame', input: input('malformed.sse'), status: 'failed' },
    { name: 'event of the wrong shape', input: input('wrong-shape.sse'), status: 'failed' },
  ],
});

describe('Anthropic provider mapping (over SSE from a loopback server)', () => {
  it('posts a streaming Messages request with the key and version headers', async () => {
    const before = server.requests.length;
    await runAgentProviderFixture(provider, input('text.sse'));
    const request = server.requests[before];
    expect(request?.url).toBe('/v1/messages');
    expect(request?.headers).toMatchObject({ 'x-api-key': 'sk-ant-test', 'anthropic-version': '2023-06-01' });
    expect(JSON.parse(request?.body ?? '{}')).toEqual({
      metadata: { user_id: 'text.sse' },
      model: 'claude-sonnet-4-5',
      max_tokens: 1024,
      messages: [{ role: 'user', content: 'Weather in Paris and Rome?' }],
      stream: true,
      system: 'Be brief.',
    });
  });

  it('maps text, usage and the stop reason', async () => {
    const { state, events } = await runAgentProviderFixture(provider, input('text.sse'));
    expect(values(state.messages).map((message) => message.content)).toEqual(['Weather in Paris and Rome?', 'Hello!']);
    expect(state.runs['contract-run']?.usage).toEqual({
      inputTokens: 25,
      outputTokens: 15,
      totalTokens: 40,
      cacheReadTokens: 0,
      cacheWriteTokens: 0,
    });
    expect(events.at(-1)?.meta).toEqual({
      anthropic: {
        stopReason: 'end_turn',
        messageId: 'msg_01',
        model: 'claude-sonnet-4-5',
        usage: { input_tokens: 25, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: 15 },
      },
    });
  });

  it('maps thinking with its signature, and tool_use left to the application', async () => {
    const { state } = await runAgentProviderFixture(provider, input('thinking-and-tools.sse'));
    expect(values(state.reasoning)).toMatchObject([
      {
        content: 'I need the weather for two cities.',
        status: 'completed',
        meta: { anthropic: { signature: 'EqQBCgIYAhIM1gbcDa9GJwZA2b3h' } },
      },
    ]);
    expect(values(state.toolCalls).map((tool) => [tool.id, tool.parsedArguments, tool.status])).toEqual([
      ['toolu_01', { city: 'Paris' }, 'awaiting_execution'],
      ['toolu_02', {}, 'awaiting_execution'],
    ]);
    expect(state.runs['contract-run']?.pendingToolCallIds).toEqual(['toolu_01', 'toolu_02']);
  });

  it('keeps redacted thinking redacted', async () => {
    const { state } = await runAgentProviderFixture(provider, input('redacted-thinking.sse'));
    expect(values(state.reasoning)).toMatchObject([{ redacted: true, status: 'completed' }]);
  });

  it('runs server tools to their results, keeps citations, and hands the search results over', async () => {
    extensions.length = 0;
    const { state } = await runAgentProviderFixture(provider, input('web-search-citations.sse'));
    expect(values(state.toolCalls)).toMatchObject([
      {
        id: 'srvtoolu_01',
        name: 'web_search',
        status: 'completed',
        parsedArguments: { query: 'weather paris' },
        meta: { anthropic: { serverTool: true } },
      },
    ]);
    expect(state.runs['contract-run']?.pendingToolCallIds).toBeUndefined();
    expect(values(state.messages)[1]).toMatchObject({
      content: 'It is 14 °C in Paris.',
      meta: { anthropic: { citations: [{ type: 'web_search_result_location', cited_text: '14 °C' }] } },
    });
    expect(extensions.map((extension) => extension.name)).toEqual(['anthropic.web_search_tool_result']);
  });

  it('classifies error events: overloaded is retryable, an invalid request is not', async () => {
    const overloaded = await runAgentProviderFixture(provider, input('overloaded-midstream.sse'));
    expect(overloaded.state.runs['contract-run']?.error).toEqual({
      message: 'Overloaded',
      code: 'overloaded_error',
      retryable: true,
    });
    expect(values(overloaded.state.messages)[1]).toMatchObject({ status: 'failed', content: 'Partial' });
    const invalid = await runAgentProviderFixture(provider, input('invalid-request-error.sse'));
    expect(invalid.state.runs['contract-run']?.error).toEqual({
      message: 'max_tokens: Field required',
      code: 'invalid_request_error',
      retryable: false,
    });
  });

  it('fails a stream that ends before message_stop', async () => {
    const { state } = await runAgentProviderFixture(provider, input('truncated.sse'));
    expect(state.runs['contract-run']?.error?.code).toBe('incomplete_stream');
  });
});

describe('Anthropic provider: what it keeps', () => {
  const fixtureNames = [
    'text.sse',
    'thinking-and-tools.sse',
    'web-search-citations.sse',
    'scenario.sse',
    'empty-tool-use-id.sse',
    'unicode-empty-deltas.sse',
  ];

  it("names, in each tool call's messageId, a message the run started", async () => {
    let toolCalls = 0;
    for (const name of fixtureNames) {
      const { events } = await runAgentProviderFixture(provider, input(name));
      const messageIds = new Set(
        events.flatMap((event) => (event.type === 'message.started' ? [event.payload.messageId] : [])),
      );
      for (const event of events) {
        if (event.type !== 'tool.requested' || event.payload.messageId === undefined) continue;
        toolCalls += 1;
        expect(messageIds, `${name}: ${event.payload.toolCallId}`).toContain(event.payload.messageId);
      }
    }
    expect(toolCalls).toBeGreaterThan(2);
    const { state } = await runAgentProviderFixture(provider, input('thinking-and-tools.sse'));
    expect(values(state.toolCalls).map((tool) => tool.messageId)).toEqual(['msg_01:1', 'msg_01:1']);
    expect(state.messages['contract-run:msg_01:1']?.content).toBe('Checking.');
  });

  it('normalizes usage, cache counters included, and keeps the wire usage in meta.anthropic.usage', async () => {
    const { events } = await runAgentProviderFixture(provider, input('empty-tool-use-id.sse'));
    const completed = events.at(-1);
    expect(completed?.type === 'run.completed' && completed.payload.usage).toEqual({
      // Every input token: 12 uncached, 4,096 read from the cache, 2,048 written to it.
      inputTokens: 6_156,
      outputTokens: 30,
      totalTokens: 6_186,
      cacheReadTokens: 4096,
      cacheWriteTokens: 2048,
    });
    expect((completed?.meta?.anthropic as { usage?: unknown } | undefined)?.usage).toEqual({
      input_tokens: 12,
      cache_creation_input_tokens: 2048,
      cache_read_input_tokens: 4096,
      output_tokens: 30,
      service_tier: 'standard',
      server_tool_use: { web_search_requests: 0 },
    });
  });

  it('gives a tool_use block with an empty id a generated id', async () => {
    const { state, result } = await runAgentProviderFixture(provider, input('empty-tool-use-id.sse'));
    expect(result.status).toBe('completed');
    expect(values(state.toolCalls).map((tool) => [tool.id, tool.name, tool.parsedArguments, tool.status])).toEqual([
      ['toolu-contract-run-0', 'get_weather', { city: 'Paris' }, 'awaiting_execution'],
    ]);
    expect(state.runs['contract-run']?.pendingToolCallIds).toEqual(['toolu-contract-run-0']);
  });

  it('fails the run, not the caller, on a tool_use block with an empty name', async () => {
    const { state, result } = await runAgentProviderFixture(provider, input('empty-tool-use-name.sse'));
    expect(result.status).toBe('failed');
    expect(state.runs['contract-run']?.error).toEqual({
      message: expect.stringMatching(
        /^Invalid event from the Anthropic Messages API at content_block\.name: a tool_use block must name its tool, and the API sent ""; the frame was \{"type":"content_block_start"/,
      ),
      code: 'invalid_anthropic_event',
      retryable: false,
    });
  });

  it('fails the run on a malformed frame or an event of the wrong shape, naming the provider and the frame', async () => {
    const malformed = await runAgentProviderFixture(provider, input('malformed.sse'));
    expect(malformed.state.runs['contract-run']?.error).toEqual({
      message:
        'Invalid event from the Anthropic Messages API: the frame is not JSON; the frame was {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hel"',
      code: 'invalid_anthropic_event',
      retryable: false,
    });
    const wrong = await runAgentProviderFixture(provider, input('wrong-shape.sse'));
    expect(wrong.state.runs['contract-run']?.error?.message).toBe(
      'Invalid event from the Anthropic Messages API at delta: expected an object; the frame was {"type":"content_block_delta","index":0,"delta":"Hello"}',
    );
  });

  it("fails the run with the API's message on an HTTP error, keeping the status and body", async () => {
    const body = { type: 'error', error: { type: 'authentication_error', message: 'invalid x-api-key' } };
    const denied = await startHttpServer((_request, response) => {
      response.writeHead(401, { 'content-type': 'application/json' });
      response.end(JSON.stringify(body));
    });
    try {
      const deniedProvider = createAnthropicAgentProvider({ baseURL: denied.url, model: 'm', maxTokens: 10 });
      const { state } = await runAgentProviderFixture(deniedProvider, input('text.sse'));
      expect(state.runs['contract-run']?.error).toEqual({
        message: `${denied.url}/v1/messages answered 401: invalid x-api-key`,
        code: 'http_error',
        retryable: false,
        data: { status: 401, body },
      });
    } finally {
      await denied.close();
    }
  });

  it('calls a headers function per request, keeping the version and key headers', async () => {
    let token = 0;
    const refreshing = createAnthropicAgentProvider({
      baseURL: server.url,
      apiKey: 'sk-ant-test',
      model: 'claude-sonnet-4-5',
      maxTokens: 1024,
      headers: () => ({ authorization: `Bearer token-${++token}` }),
    });
    const before = server.requests.length;
    await runAgentProviderFixture(refreshing, input('text.sse'));
    await runAgentProviderFixture(refreshing, input('text.sse'));
    expect(
      server.requests
        .slice(before)
        .map((request) => [
          request.headers.authorization,
          request.headers['x-api-key'],
          request.headers['anthropic-version'],
        ]),
    ).toEqual([
      ['Bearer token-1', 'sk-ant-test', '2023-06-01'],
      ['Bearer token-2', 'sk-ant-test', '2023-06-01'],
    ]);
  });
});
