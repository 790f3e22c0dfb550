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

/** A message as the Messages API takes it. */
export interface AnthropicMessage {
  role: 'user' | 'assistant';
  content: string | Array<Record<string, unknown>>;
}

export interface AnthropicInput {
  messages: AnthropicMessage[];
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
  return code === 'network_error';
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
 * @example
 * const provider = createAnthropicAgentProvider({
 *   apiKey: process.env.ANTHROPIC_API_KEY,
 *   model: 'claude-sonnet-4-5',
 *   maxTokens: 2048,
 * });
 * await runAgentProvider({
 *   provider,
 *   input: { messages: [{ role: 'user', content: 'Weather in Paris?' }], tools },
 *   sessionId: 'chat-1',
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
    start(input, { events }) {
      const out: AgentEvent[] = [events.emit('run.started', { input })];
      const last = input.messages.at(-1);
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
    prepareRequest(input) {
      const request: AnthropicRequest = {
        ...input.body,
        model: options.model,
        max_tokens: options.maxTokens,
        messages: input.messages,
        stream: true,
      };
      if (input.system !== undefined) request.system = input.system;
      if (input.tools !== undefined) request.tools = input.tools;
      return request;
    },
    transformChunk: (chunk, context) => mapAnthropicEvent(chunk, context, options.onExtension),
    incompleteStream: ANTHROPIC_INCOMPLETE_STREAM,
    isRetryable,
  });
}
