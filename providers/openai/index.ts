export type {
  OpenAIChatInput,
  OpenAIChatMessage,
  OpenAIChatRequest,
  OpenAICompatibleAgentProviderOptions,
} from './createOpenAICompatibleAgentProvider';
export { createOpenAICompatibleAgentProvider } from './createOpenAICompatibleAgentProvider';
export type { OpenAIContext } from './mapOpenAIChunk';
export { openAICompletionChunkSchema } from './openAICompletionChunkSchema';
export type { OpenAIContentPart } from './openAIContent';
export { fromOpenAIContent, toOpenAIContent } from './openAIContent';
export type { OpenAIChunkDelta, OpenAICompletionChunk, OpenAIToolCallFragment } from './readOpenAIChunk';
export { OpenAIChunkError, OpenAIStreamError, readOpenAIChunk } from './readOpenAIChunk';
export { toOpenAIMessages } from './toOpenAIMessages';
