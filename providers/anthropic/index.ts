export type { AnthropicContentBlock } from './anthropicContent';
export { toAnthropicContent } from './anthropicContent';
export { anthropicStreamEventSchema } from './anthropicStreamEventSchema';
export type {
  AnthropicAgentProviderOptions,
  AnthropicInput,
  AnthropicMessage,
  AnthropicRequest,
} from './createAnthropicAgentProvider';
export { createAnthropicAgentProvider } from './createAnthropicAgentProvider';
export type { AnthropicContext, AnthropicExtensionEvent } from './mapAnthropicEvent';
export type { AnthropicStreamEvent } from './readAnthropicEvent';
export { AnthropicEventError, AnthropicStreamError, readAnthropicEvent } from './readAnthropicEvent';
export { toAnthropicMessages, toAnthropicSystem } from './toAnthropicMessages';
