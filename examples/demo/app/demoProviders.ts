import type { AgentProvider } from '../../../providers/AgentProvider';
import {
  type AgentHostRunInput,
  createAgentEventProvider,
} from '../../../providers/agent-event/createAgentEventProvider';
import { createAgUIAgentProvider } from '../../../providers/agui/createAgUIAgentProvider';
import { createAISDKAgentProvider } from '../../../providers/ai-sdk/createAISDKAgentProvider';
import { createAnthropicAgentProvider } from '../../../providers/anthropic/createAnthropicAgentProvider';
import { createLocalAgentProvider } from '../../../providers/local/createLocalAgentProvider';
import { createOpenAICompatibleAgentProvider } from '../../../providers/openai/createOpenAICompatibleAgentProvider';
import { localAgentScript } from './localAgentScript';

export type DemoProviderId = 'local' | 'openai' | 'anthropic' | 'agui' | 'aisdk' | 'host';

/** The page's conversation key, which is also its session on the server's agent-machines host. */
export const DEMO_CONVERSATION_KEY = 'agent-machines-demo';
/** The path the demo server mounts its agent-machines host at. */
export const DEMO_HOST_PATH = '/api/agent';
/** Where the demo server's AI SDK backend (`streamText` over a scripted model) answers DefaultChatTransport's POSTs. */
export const AI_SDK_DEMO_PATH = '/api/ai-sdk';
/** The name of the host's provider: an agent whose tools run on the server (examples/demo/hostAgent.ts). */
export const DEMO_HOST_PROVIDER = 'assistant';

/**
 * What the page sends: a prompt, plus each wire's own tool definitions; for the host, the
 * name of one of its providers and that provider's input.
 */
export type DemoInput = ({ prompt: string } & Record<string, unknown>) | AgentHostRunInput;
// biome-ignore lint/suspicious/noExplicitAny: one chat runs providers of different requests and chunks
export type DemoProvider = AgentProvider<DemoInput, any, any, any>;

export const DEMO_PROVIDER_LABELS: Record<DemoProviderId, string> = {
  local: 'Local runtime',
  openai: 'OpenAI-compatible',
  anthropic: 'Anthropic',
  agui: 'AG-UI',
  aisdk: 'AI SDK backend',
  host: 'agent-machines host (server-side runs)',
};

/** The local script's first turn, and the slow turn ("slowly" in the prompt): the host's agent answers both too. */
const LOCAL_PROMPTS = [
  'What is the weather in Paris and Rome? Email it to the team.',
  'What is the weather in Oslo? Answer slowly.',
];

/**
 * What each provider answers. The recorded ones replay one scenario whatever is asked (the
 * OpenAI-compatible and Anthropic ones only while the server holds no key for the real
 * service): their prompts are the questions the recordings answer. The AI SDK backend's
 * model is scripted: it plays its script whatever is asked, so it lists its prompt too. The local script has a turn for each of its prompts,
 * and the host's agent (on its scripted model without a key) answers the same two.
 */
export const DEMO_SCENARIOS: Record<
  DemoProviderId,
  { recorded: 'always' | 'without-key' | 'never' | 'scripted'; prompts: string[] }
> = {
  local: { recorded: 'never', prompts: LOCAL_PROMPTS },
  openai: { recorded: 'without-key', prompts: ['What is the weather in Paris and Rome?'] },
  anthropic: { recorded: 'without-key', prompts: ['What is the weather in Paris and Rome?'] },
  agui: { recorded: 'always', prompts: ['Clean up the old log files to free some disk space.'] },
  aisdk: { recorded: 'scripted', prompts: ['What is the weather in Paris? Email it to the team.'] },
  host: { recorded: 'never', prompts: LOCAL_PROMPTS },
};

/** Whether `providerId` replays a recording, given `/api/config` (`live` when the server proxies the real service). */
export function isRecorded(providerId: DemoProviderId, config: Readonly<Record<string, string>>): boolean {
  const { recorded } = DEMO_SCENARIOS[providerId];
  return recorded === 'always' || (recorded === 'without-key' && config[providerId] !== 'live');
}

const weatherParameters = {
  type: 'object',
  properties: { city: { type: 'string', description: 'A city name' } },
  required: ['city'],
};
const weatherDescription = 'Current temperature in a city, in °C (run by the page).';

/**
 * The six providers, made once. Each talks to this page's own server, which replays a
 * recording, runs the AI SDK's `streamText` over a scripted model (`aisdk`), or proxies the
 * real service with the key it holds: no key reaches the page.
 * `host` is the server's agent-machines host, which runs an agent and its tools server-side; its
 * session is the conversation's, so `sessionId` must be the chat's `conversationKey`.
 */
export function createDemoProviders(origin: string, sessionId: string): Record<DemoProviderId, DemoProvider> {
  const providers = {
    local: createLocalAgentProvider({ script: localAgentScript }),
    openai: createOpenAICompatibleAgentProvider({ baseURL: `${origin}/v1`, model: 'gpt-4o-mini' }),
    anthropic: createAnthropicAgentProvider({ baseURL: origin, model: 'claude-sonnet-4-5', maxTokens: 1024 }),
    agui: createAgUIAgentProvider({ url: `${origin}/agui` }),
    aisdk: createAISDKAgentProvider({ api: `${origin}${AI_SDK_DEMO_PATH}` }),
    host: createAgentEventProvider({ baseURL: `${origin}${DEMO_HOST_PATH}`, sessionId }),
  };
  // The inputs differ per wire (tools); `inputFor` builds the one each provider takes.
  return providers as unknown as Record<DemoProviderId, DemoProvider>;
}

/** The request input for a prompt, with `get_weather` declared in the wire's own format. */
export function inputFor(providerId: DemoProviderId, prompt: string): DemoInput {
  switch (providerId) {
    case 'local':
    case 'agui':
    case 'aisdk':
      return { prompt };
    case 'host':
      return { provider: DEMO_HOST_PROVIDER, input: { prompt } };
    case 'openai':
      return {
        prompt,
        tools: [
          {
            type: 'function',
            function: { name: 'get_weather', description: weatherDescription, parameters: weatherParameters },
          },
        ],
      };
    case 'anthropic':
      return {
        prompt,
        tools: [{ name: 'get_weather', description: weatherDescription, input_schema: weatherParameters }],
      };
  }
}
