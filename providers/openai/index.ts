export type {
  OpenAIChatInput,
  OpenAIChatMessage,
  OpenAIChatRequest,
  OpenAICompatibleAgentProviderOptions,
  OpenAIContext,
} from './createOpenAICompatibleAgentProvider';
export { createOpenAICompatibleAgentProvider, OpenAIStreamError } from './createOpenAICompatibleAgentProvider';
export type { OpenAIContentPart } from './openAIContent';
export { fromOpenAIContent, toOpenAIContent } from './openAIContent';
export type { OpenAIChunkDelta, OpenAICompletionChunk, OpenAIToolCallFragment } from './readOpenAIChunk';
export { OpenAIChunkError, readOpenAIChunk } from './readOpenAIChunk';
