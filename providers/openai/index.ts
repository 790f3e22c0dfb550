export type {
  OpenAIChatInput,
  OpenAIChatMessage,
  OpenAIChatRequest,
  OpenAICompatibleAgentProviderOptions,
  OpenAIContext,
} from './createOpenAICompatibleAgentProvider';
export { createOpenAICompatibleAgentProvider, OpenAIStreamError } from './createOpenAICompatibleAgentProvider';
