import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import {
  type AnthropicExtensionEvent,
  createAnthropicAgentProvider,
} from '../../providers/anthropic/createAnthropicAgentProvider';
import { describeAgentProviderContract } from '../../providers/testing/describeAgentProviderContract';
import { runAgentProviderFixture } from '../../providers/testing/runAgentProviderFixture';
import { startFixtureServer } from '../support/fixtureServer';

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
    expect(state.runs['contract-run']?.usage).toMatchObject({ inputTokens: 25, outputTokens: 15, totalTokens: 40 });
    expect(events.at(-1)?.meta).toEqual({
      anthropic: { stopReason: 'end_turn', messageId: 'msg_01', model: 'claude-sonnet-4-5' },
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
