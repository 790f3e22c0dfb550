export type {
  AnthropicAgentProviderOptions,
  AnthropicContext,
  AnthropicExtensionEvent,
  AnthropicInput,
  AnthropicMessage,
  AnthropicRequest,
} from './createAnthropicAgentProvider';
export { AnthropicStreamError, createAnthropicAgentProvider } from './createAnthropicAgentProvider';
export type { AnthropicStreamEvent } from './readAnthropicEvent';
export { AnthropicEventError, readAnthropicEvent } from './readAnthropicEvent';
