import { AgentValidationError } from '../../protocol/errors';
import type { AgentEvent } from '../../protocol/eventSchemas';
import type { AgentTransport } from '../../transports/AgentTransport';
import { createSSETransport, type SSEChunk, type SSETransportOptions } from '../../transports/createSSETransport';
import type { AgentProvider } from '../AgentProvider';
import { defineAgentProvider } from '../defineAgentProvider';
import { eventTypesOf } from '../eventTypeGroups';
import {
  createOpenAIContext,
  endOpenAIRun,
  mapOpenAIChunk,
  OPENAI_INCOMPLETE_STREAM,
  type OpenAIContext,
} from './mapOpenAIChunk';
import { fromOpenAIContent, type OpenAIChatMessage, toOpenAIContent } from './openAIContent';
import { toOpenAIMessages } from './toOpenAIMessages';

export type { OpenAIContext } from './mapOpenAIChunk';
export type { OpenAIChatMessage } from './openAIContent';
export { OpenAIStreamError } from './readOpenAIChunk';

/**
 * What one request sends. Either the whole conversation (`messages`, sent as they are), or
 * the user's new `prompt`, sent after the conversation so far, which the provider builds from
 * the session's AgentState (`toOpenAIMessages`). A run that continues one waiting for input
 * needs neither: its request is the conversation, tool results included.
 */
export interface OpenAIChatInput {
  /** The conversation to send as it is; given, it wins over the session's history and `prompt`. */
  messages?: OpenAIChatMessage[];
  /** The user's new message, sent after the session's conversation so far. */
  prompt?: string;
  /** Instructions sent first, as a system message, before the messages (given or built). */
  system?: string;
  tools?: Array<Record<string, unknown>>;
  toolChoice?: unknown;
  /** Extra request fields (temperature, reasoning_effort, ...), sent as they are. */
  body?: Record<string, unknown>;
}

export interface OpenAIChatRequest extends Record<string, unknown> {
  model: string;
  messages: OpenAIChatMessage[];
  stream: true;
  stream_options: { include_usage: true };
}

export interface OpenAICompatibleAgentProviderOptions {
  /** e.g. `https://api.openai.com/v1`, `http://localhost:11434/v1`; `/chat/completions` is appended. */
  baseURL: string;
  apiKey?: string;
  model: string;
  /** Extra headers, or a function called per request that makes them (a refreshed token, say). */
  headers?: SSETransportOptions<OpenAIChatRequest>['headers'];
  fetch?: typeof fetch;
  /** Replaces the SSE transport (a recorded fixture, say). */
  transport?: AgentTransport<OpenAIChatRequest, SSEChunk>;
}

const OPENAI_EVENT_TYPES = eventTypesOf(['run', 'message', 'reasoning', 'toolCall'], {
  // The application executes the tool calls: they never run or complete in this stream.
  except: ['tool.running', 'tool.completed'],
});

/**
 * A provider for any OpenAI-compatible Chat Completions endpoint (OpenAI, Azure, vLLM,
 * Ollama, DeepSeek, OpenRouter, ...): streamed text, reasoning (`reasoning_content` or
 * `reasoning`), tool calls by index with stable ids, usage (normalized, the server's object
 * in `meta.openai.usage`), and errors sent mid-stream. A `tool_calls` finish ends the run
 * with the calls awaiting execution by the application. The user's message keeps its parts
 * (`image_url`, `input_audio`, `file` as our `image` and `file`). A frame that is not a
 * chunk, or a tool call without a name, fails the run with an `OpenAIChunkError`; a tool
 * call without an id (or with an empty one) gets one.
 *
 * The request's messages are the input's `messages` when it gives them; otherwise the
 * session's conversation so far (from `history`, see `toOpenAIMessages`) and the input's
 * `prompt`, which a continuing run does not send. An input with nothing to send fails the
 * run with an `AgentValidationError` (code `invalid_input`).
 *
 * @example
 * const provider = createOpenAICompatibleAgentProvider({
 *   baseURL: 'https://api.openai.com/v1',
 *   apiKey: process.env.OPENAI_API_KEY,
 *   model: 'gpt-4o-mini',
 * });
 * await runAgentProvider({
 *   provider,
 *   input: { prompt: 'Weather in Paris?', tools },
 *   sessionId: 'chat-1',
 *   history: store.getSnapshot(),
 *   onEvent: store.dispatch,
 * });
 */
export function createOpenAICompatibleAgentProvider(
  options: OpenAICompatibleAgentProviderOptions,
): AgentProvider<OpenAIChatInput, OpenAIChatRequest, SSEChunk, OpenAIContext> {
  const userHeaders = options.headers;
  // Made per request, so a headers function gives each request its current token.
  const headers = async (): Promise<Headers> => {
    const made = new Headers(typeof userHeaders === 'function' ? await userHeaders() : userHeaders);
    if (options.apiKey !== undefined) made.set('authorization', `Bearer ${options.apiKey}`);
    return made;
  };
  const transport =
    options.transport ??
    createSSETransport<OpenAIChatRequest>({
      url: `${options.baseURL.replace(/\/+$/, '')}/chat/completions`,
      headers,
      ...(options.fetch ? { fetch: options.fetch } : {}),
    });
  return defineAgentProvider({
    id: 'openai-compatible',
    capabilities: { eventTypes: OPENAI_EVENT_TYPES },
    transport,
    createContext: createOpenAIContext,
    start(input, { events, continuation }) {
      const out: AgentEvent[] = [events.emit('run.started', { input })];
      // A continuing run says nothing new: its request carries the conversation.
      if (continuation !== undefined) return out;
      const last = input.messages === undefined ? promptMessage(input.prompt) : input.messages.at(-1);
      if (last?.role === 'user') {
        const content = fromOpenAIContent(last.content);
        out.push(
          events.emit(
            'message.started',
            content === undefined
              ? { messageId: 'prompt', role: 'user' }
              : { messageId: 'prompt', role: 'user', content },
          ),
          events.emit('message.completed', { messageId: 'prompt' }),
        );
      }
      return out;
    },
    prepareRequest(input, context) {
      const request: OpenAIChatRequest = {
        ...input.body,
        model: options.model,
        messages: requestMessages(input, context),
        stream: true,
        stream_options: { include_usage: true },
      };
      if (input.tools !== undefined) request.tools = input.tools;
      if (input.toolChoice !== undefined) request.tool_choice = input.toolChoice;
      return request;
    },
    transformChunk: mapOpenAIChunk,
    // A `finish_reason` without `[DONE]` still ends the run.
    finish: (context) => (context.done ? [] : endOpenAIRun(context)),
    incompleteStream: OPENAI_INCOMPLETE_STREAM,
    isRetryable: classify,
  });
}

function promptMessage(prompt: string | undefined): OpenAIChatMessage | undefined {
  return prompt === undefined ? undefined : { role: 'user', content: prompt };
}

/** The request's messages: the input's system instructions, then the conversation. */
function requestMessages(input: OpenAIChatInput, context: OpenAIContext): OpenAIChatMessage[] {
  const conversation = conversationOf(input, context);
  return input.system === undefined ? conversation : [{ role: 'system', content: input.system }, ...conversation];
}

/**
 * The input's messages when it gives them; else the session's conversation and the prompt
 * (a continuing run sends no prompt). Throws when that leaves nothing to send.
 */
function conversationOf(input: OpenAIChatInput, context: OpenAIContext): OpenAIChatMessage[] {
  if (input.messages !== undefined) return input.messages.map(toOpenAIMessage);
  const { history, continuation, events } = context;
  const messages = history === undefined ? [] : toOpenAIMessages(history, events.sessionId);
  const prompt = continuation === undefined ? promptMessage(input.prompt) : undefined;
  if (prompt !== undefined) messages.push(prompt);
  if (messages.length === 0) {
    throw new AgentValidationError('OpenAI chat input', {
      path: 'prompt',
      reason: 'expected messages or a prompt',
      message: 'nothing to send: no messages, no prompt, and no conversation in the session to continue',
    });
  }
  return messages;
}

/** A message with our content parts turned into OpenAI's; string or null content stays as it is. */
function toOpenAIMessage(message: OpenAIChatMessage): OpenAIChatMessage {
  if (!Array.isArray(message.content)) return message;
  return { ...message, content: toOpenAIContent(message.content) };
}

/** Rate limits, overloads, server errors, dropped connections and stalled streams are worth retrying. */
function classify(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false;
  const { code, status } = error as { code?: unknown; status?: unknown };
  if (typeof status === 'number') return status === 429 || status >= 500;
  return (
    code === 'network_error' ||
    code === 'timeout' ||
    code === 'rate_limit_exceeded' ||
    code === 'server_error' ||
    code === 'overloaded'
  );
}
