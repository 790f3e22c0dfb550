import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import type { AgentState } from '../../machines/agentState';
import { createAgUIAgentProvider } from '../../providers/agui/createAgUIAgentProvider';
import { createAnthropicAgentProvider } from '../../providers/anthropic/createAnthropicAgentProvider';
import { createOpenAICompatibleAgentProvider } from '../../providers/openai/createOpenAICompatibleAgentProvider';
import { runAgentProviderFixture } from '../../providers/testing/runAgentProviderFixture';
import { startFixtureServer } from '../support/fixtureServer';

const directory = (name: string) => fileURLToPath(new URL(`../../providers/${name}/__fixtures__`, import.meta.url));
const servers = await Promise.all([
  startFixtureServer(directory('agui'), () => 'scenario.sse'),
  startFixtureServer(directory('openai'), () => 'scenario.sse'),
  startFixtureServer(directory('anthropic'), () => 'scenario.sse'),
]);
afterAll(() => Promise.all(servers.map((server) => server.close())));
const [agui, openai, anthropic] = servers.map((server) => server.url) as [string, string, string];
const question = 'Weather in Paris and Rome?';

/**
 * What the three formats must agree on. Compared: each message's role, content and status;
 * each reasoning's content, status and redaction; each tool call's name, parsed arguments
 * and status; the run's status and its pending tool calls (by name and arguments); the
 * protocol issues. Left out: ids and keys, timestamps, meta, usage, and the run input,
 * which are each provider's own.
 */
function comparable(state: AgentState) {
  const run = Object.values(state.runs)[0];
  const tools = Object.values(state.toolCalls);
  return {
    messages: Object.values(state.messages).map(({ role, content, status }) => ({ role, content, status })),
    reasoning: Object.values(state.reasoning).map(({ content, status, redacted }) => ({ content, status, redacted })),
    toolCalls: tools.map(({ name, parsedArguments, status }) => ({ name, parsedArguments, status })),
    run: {
      status: run?.status,
      pending: (run?.pendingToolCallIds ?? []).map((id) => {
        const tool = tools.find((candidate) => candidate.id === id);
        return [tool?.name, tool?.parsedArguments];
      }),
    },
    issues: state.issues,
  };
}

describe('one scenario in three wire formats', () => {
  it('AG-UI, OpenAI-compatible and Anthropic streams reduce to the same AgentState', async () => {
    const runs = await Promise.all([
      runAgentProviderFixture(createAgUIAgentProvider({ url: agui }), {
        messages: [{ id: 'u1', role: 'user', content: question }],
      }),
      runAgentProviderFixture(createOpenAICompatibleAgentProvider({ baseURL: openai, model: 'deepseek-reasoner' }), {
        messages: [{ role: 'user', content: question }],
      }),
      runAgentProviderFixture(
        createAnthropicAgentProvider({ baseURL: anthropic, model: 'claude-sonnet-4-5', maxTokens: 1024 }),
        {
          messages: [{ role: 'user', content: question }],
        },
      ),
    ]);
    const [fromAgUI, fromOpenAI, fromAnthropic] = runs.map((run) => comparable(run.state));
    expect(fromAgUI).toEqual({
      messages: [
        { role: 'user', content: question, status: 'completed' },
        { role: 'assistant', content: 'Let me check both cities.', status: 'completed' },
      ],
      reasoning: [{ content: 'Two cities, two lookups.', status: 'completed', redacted: false }],
      toolCalls: [
        { name: 'get_weather', parsedArguments: { city: 'Paris' }, status: 'awaiting_execution' },
        { name: 'get_weather', parsedArguments: { city: 'Rome' }, status: 'awaiting_execution' },
      ],
      run: {
        status: 'completed',
        pending: [
          ['get_weather', { city: 'Paris' }],
          ['get_weather', { city: 'Rome' }],
        ],
      },
      issues: [],
    });
    expect(fromOpenAI).toEqual(fromAgUI);
    expect(fromAnthropic).toEqual(fromAgUI);
  });
});
