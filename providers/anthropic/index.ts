export type {
  AnthropicAgentProviderOptions,
  AnthropicContext,
  AnthropicExtensionEvent,
  AnthropicInput,
  AnthropicMessage,
  AnthropicRequest,
} from './createAnthropicAgentProvider';
export { AnthropicStreamError, createAnthropicAgentProvider } from './createAnthropicAgentProvider';
