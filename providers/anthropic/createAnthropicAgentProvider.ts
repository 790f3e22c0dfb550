import { AgentValidationError } from '../../protocol/errors';
import type { AgentEvent } from '../../protocol/eventSchemas';
import type { AgentTransport } from '../../transports/AgentTransport';
import { createSSETransport, type SSEChunk, type SSETransportOptions } from '../../transports/createSSETransport';
import type { AgentProvider } from '../AgentProvider';
import { defineAgentProvider } from '../defineAgentProvider';
import { eventTypesOf } from '../eventTypeGroups';
import {
  ANTHROPIC_INCOMPLETE_STREAM,
  type AnthropicContext,
  type AnthropicExtensionEvent,
  createAnthropicContext,
  mapAnthropicEvent,
} from './mapAnthropicEvent';
import { AnthropicStreamError } from './readAnthropicEvent';
import { type AnthropicMessage, toAnthropicMessages, toAnthropicSystem } from './toAnthropicMessages';

export type { AnthropicMessage } from './toAnthropicMessages';

/**
 * What one request sends. Either the whole conversation (`messages`, sent as they are), or
 * the user's new `prompt`, sent after the conversation so far, which the provider builds from
 * the session's AgentState (`toAnthropicMessages`). A run that continues one waiting for
 * input needs neither: its request is the conversation, tool results included.
 */
export interface AnthropicInput {
  /** The conversation to send as it is; given, it wins over the session's history and `prompt`. */
  messages?: AnthropicMessage[];
  /** The user's new message, sent after the session's conversation so far. */
  prompt?: string;
  /** The request's `system`. Missing, a conversation built from the session sends the session's system messages. */
  system?: string | Array<Record<string, unknown>>;
  tools?: Array<Record<string, unknown>>;
  /** Extra request fields (thinking, temperature, tool_choice, ...), sent as they are. */
  body?: Record<string, unknown>;
}

export interface AnthropicRequest extends Record<string, unknown> {
  model: string;
  max_tokens: number;
  messages: AnthropicMessage[];
  stream: true;
}

export interface AnthropicAgentProviderOptions {
  /** Default `https://api.anthropic.com`; `/v1/messages` is appended. */
  baseURL?: string;
  apiKey?: string;
  model: string;
  maxTokens: number;
  /** Default `2023-06-01`. */
  anthropicVersion?: string;
  /** Extra headers, or a function called per request that makes them (a refreshed token, say). */
  headers?: SSETransportOptions<AnthropicRequest>['headers'];
  fetch?: typeof fetch;
  transport?: AgentTransport<AnthropicRequest, SSEChunk>;
  onExtension?: (extension: AnthropicExtensionEvent) => void;
}

const RETRYABLE_TYPES = new Set(['overloaded_error', 'api_error', 'rate_limit_error', 'timeout_error']);

const ANTHROPIC_EVENT_TYPES = eventTypesOf(['run', 'message', 'reasoning', 'toolCall']);

function isRetryable(error: unknown): boolean {
  if (error instanceof AnthropicStreamError) return RETRYABLE_TYPES.has(error.code);
  const { code, status } = (error ?? {}) as { code?: unknown; status?: unknown };
  if (typeof status === 'number') return status === 429 || status === 529 || status >= 500;
  return code === 'network_error' || code === 'timeout';
}

/**
 * A provider for the Anthropic Messages API: text blocks, extended thinking (with its
 * signature kept in the reasoning's meta, redacted thinking as redacted reasoning), client
 * and server tool use with streamed input, citations (in the message's meta), usage, and
 * `error` events classified as retryable or not. `stop_reason: tool_use` ends the run with
 * the client tools awaiting execution. Text blocks are messages `<message id>:<index>`; a
 * tool call names the text block before it as its message. Usage is normalized (cache
 * counters included), the API's object kept in `meta.anthropic.usage`. A frame that is
 * not a stream event, or a tool_use block without a name, fails the run with an
 * `AnthropicEventError`; a tool_use block with an empty id gets one.
 *
 * The request's messages are the input's `messages` when it gives them; otherwise the
 * session's conversation so far (from `history`, thinking and its signatures included, see
 * `toAnthropicMessages`) and the input's `prompt`, which a continuing run does not send. An
 * input with nothing to send fails the run with an `AgentValidationError` (code `invalid_input`).
 *
 * @example
 * const provider = createAnthropicAgentProvider({
 *   apiKey: process.env.ANTHROPIC_API_KEY,
 *   model: 'claude-sonnet-4-5',
 *   maxTokens: 2048,
 * });
 * await runAgentProvider({
 *   provider,
 *   input: { prompt: 'Weather in Paris?', system: 'Be brief.', tools },
 *   sessionId: 'chat-1',
 *   history: store.getSnapshot(),
 *   onEvent: store.dispatch,
 * });
 */
export function createAnthropicAgentProvider(
  options: AnthropicAgentProviderOptions,
): AgentProvider<AnthropicInput, AnthropicRequest, SSEChunk, AnthropicContext> {
  const userHeaders = options.headers;
  // Made per request, so a headers function gives each request its current token.
  const headers = async (): Promise<Headers> => {
    const made = new Headers({ 'anthropic-version': options.anthropicVersion ?? '2023-06-01' });
    const extra = new Headers(typeof userHeaders === 'function' ? await userHeaders() : userHeaders);
    extra.forEach((value, name) => {
      made.set(name, value);
    });
    if (options.apiKey !== undefined) made.set('x-api-key', options.apiKey);
    return made;
  };
  const baseURL = (options.baseURL ?? 'https://api.anthropic.com').replace(/\/+$/, '');
  const transport =
    options.transport ??
    createSSETransport<AnthropicRequest>({
      url: `${baseURL}/v1/messages`,
      headers,
      ...(options.fetch ? { fetch: options.fetch } : {}),
    });
  return defineAgentProvider({
    id: 'anthropic',
    capabilities: { eventTypes: ANTHROPIC_EVENT_TYPES },
    transport,
    createContext: createAnthropicContext,
    start(input, { events, continuation }) {
      const out: AgentEvent[] = [events.emit('run.started', { input })];
      // A continuing run says nothing new: its request carries the conversation.
      if (continuation !== undefined) return out;
      const last = input.messages === undefined ? promptMessage(input.prompt) : input.messages.at(-1);
      if (last?.role === 'user') {
        const content =
          typeof last.content === 'string'
            ? last.content
            : last.content.map((part) =>
                part.type === 'text'
                  ? { type: 'text' as const, text: String(part.text) }
                  : { type: `anthropic.${String(part.type)}` as const, data: part },
              );
        out.push(
          events.emit('message.started', { messageId: 'prompt', role: 'user', content }),
          events.emit('message.completed', { messageId: 'prompt' }),
        );
      }
      return out;
    },
    prepareRequest(input, context) {
      const request: AnthropicRequest = {
        ...input.body,
        model: options.model,
        max_tokens: options.maxTokens,
        messages: requestMessages(input, context),
        stream: true,
      };
      const system =
        input.system ??
        (input.messages === undefined && context.history !== undefined
          ? toAnthropicSystem(context.history, context.events.sessionId)
          : undefined);
      if (system !== undefined) request.system = system;
      if (input.tools !== undefined) request.tools = input.tools;
      return request;
    },
    transformChunk: (chunk, context) => mapAnthropicEvent(chunk, context, options.onExtension),
    incompleteStream: ANTHROPIC_INCOMPLETE_STREAM,
    isRetryable,
  });
}

function promptMessage(prompt: string | undefined): AnthropicMessage | undefined {
  return prompt === undefined ? undefined : { role: 'user', content: prompt };
}

/**
 * The input's messages when it gives them; else the session's conversation and the prompt
 * (a continuing run sends no prompt). Throws when that leaves nothing to send.
 */
function requestMessages(input: AnthropicInput, context: AnthropicContext): AnthropicMessage[] {
  if (input.messages !== undefined) return input.messages;
  const { history, continuation, events } = context;
  const messages = history === undefined ? [] : toAnthropicMessages(history, events.sessionId);
  const prompt = continuation === undefined ? promptMessage(input.prompt) : undefined;
  if (prompt !== undefined) {
    // The API wants roles to alternate: a prompt after a user turn (tool results) joins it.
    const last = messages.at(-1);
    if (last?.role === 'user') messages[messages.length - 1] = joinUserTurns(last, prompt);
    else messages.push(prompt);
  }
  if (messages.length === 0) {
    throw new AgentValidationError('Anthropic input', {
      path: 'prompt',
      reason: 'expected messages or a prompt',
      message: 'nothing to send: no messages, no prompt, and no conversation in the session to continue',
    });
  }
  return messages;
}

/** Two user turns as one, the first one's blocks (tool results) first. */
function joinUserTurns(first: AnthropicMessage, second: AnthropicMessage): AnthropicMessage {
  const blocks = (content: AnthropicMessage['content']) =>
    typeof content === 'string' ? [{ type: 'text', text: content }] : content;
  return { role: 'user', content: [...blocks(first.content), ...blocks(second.content)] };
}
