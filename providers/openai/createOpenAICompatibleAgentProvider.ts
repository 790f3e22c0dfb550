import type { AgentContentPart } from '../../protocol/contentSchemas';
import { AgentError } from '../../protocol/errors';
import type { AgentEvent, AgentUsage } from '../../protocol/eventSchemas';
import { isAbortError } from '../../transports/AgentTransportError';
import { createSSETransport, type SSEChunk, type SSETransportOptions } from '../../transports/createSSETransport';
import type { AgentProvider, AgentTransport } from '../AgentProvider';
import { type AgentRunEmitter, createAgentRunEmitter } from '../createAgentRunEmitter';
import { eventTypesOf } from '../eventTypeGroups';
import { toAgentErrorInfo } from '../toAgentErrorInfo';
import { fromOpenAIContent, type OpenAIContentPart, toOpenAIContent } from './openAIContent';
import { type OpenAIChunkDelta, OpenAIChunkError, readOpenAIChunk } from './readOpenAIChunk';

/**
 * A chat message as the Chat Completions API takes it. Content parts may be OpenAI's
 * (`image_url`, `input_audio`, `file`, ...) or ours (`image`, `file`), sent as OpenAI's.
 */
export interface OpenAIChatMessage {
  role: 'system' | 'developer' | 'user' | 'assistant' | 'tool';
  content: string | null | Array<OpenAIContentPart | AgentContentPart>;
  name?: string;
  tool_call_id?: string;
  tool_calls?: Array<{ id: string; type: 'function'; function: { name: string; arguments: string } }>;
}

export interface OpenAIChatInput {
  messages: OpenAIChatMessage[];
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

/** An error object the server sent inside the stream. */
export class OpenAIStreamError extends AgentError {
  readonly type: string | undefined;

  constructor(message: string, code: string | undefined, type: string | undefined) {
    super(code ?? type ?? 'openai_error', message);
    this.name = 'OpenAIStreamError';
    this.type = type;
  }

  /** Whether `value` is an OpenAIStreamError, from any copy of the package. */
  declare static isInstance: (value: unknown) => value is OpenAIStreamError;
}

interface ToolSlot {
  id: string;
  name: string;
}

export interface OpenAIContext {
  events: AgentRunEmitter;
  messageId: string | undefined;
  reasoningId: string | undefined;
  /** Tool calls by their `index` in the stream: the id stays what the first fragment said. */
  tools: Map<number, ToolSlot>;
  toolOrder: string[];
  finishReason: string | undefined;
  /** The last usage object the server sent, as it sent it. */
  usage: Record<string, unknown> | undefined;
  model: string | undefined;
  completionId: string | undefined;
  done: boolean;
  counter: number;
  refused: boolean;
}

const OPENAI_EVENT_TYPES = eventTypesOf(['run', 'message', 'reasoning', 'tool'], {
  // The application executes the tool calls: they never run or complete in this stream.
  except: ['tool.running', 'tool.completed'],
});

function closeReasoning(context: OpenAIContext): AgentEvent[] {
  if (context.reasoningId === undefined || !context.events.tracker.isOpen('reasoning', context.reasoningId)) return [];
  return [context.events.emit('reasoning.completed', { reasoningId: context.reasoningId })];
}

const tokenCount = (value: unknown): number | undefined =>
  Number.isSafeInteger(value) && (value as number) >= 0 ? (value as number) : undefined;

/** The counters of OpenAI's usage that the protocol names; the whole object goes to the meta. */
function usageOf(usage: Record<string, unknown>): AgentUsage {
  const prompt = usage.prompt_tokens_details as Record<string, unknown> | null | undefined;
  const completion = usage.completion_tokens_details as Record<string, unknown> | null | undefined;
  const counts: Array<[keyof AgentUsage, unknown]> = [
    ['inputTokens', usage.prompt_tokens],
    ['outputTokens', usage.completion_tokens],
    ['totalTokens', usage.total_tokens],
    ['reasoningTokens', completion?.reasoning_tokens],
    ['cacheReadTokens', prompt?.cached_tokens],
  ];
  const result: AgentUsage = {};
  for (const [field, value] of counts) {
    const count = tokenCount(value);
    if (count !== undefined) (result as Record<string, number>)[field] = count;
  }
  return result;
}

/**
 * Throws when a fragment would start a tool call without a name. Checked before the delta
 * emits anything, so a failed chunk leaves no event made and not delivered.
 */
function checkToolCallNames(delta: OpenAIChunkDelta, context: OpenAIContext): void {
  const started = new Set<number>();
  for (const fragment of delta.tool_calls ?? []) {
    const index = fragment.index ?? 0;
    if (context.tools.has(index) || started.has(index)) continue;
    if (!fragment.function?.name) {
      throw new OpenAIChunkError(
        `tool_calls[${index}].function.name`,
        `a tool call must start with its function name, and the server sent ${JSON.stringify(fragment.function?.name ?? null)}`,
        JSON.stringify(fragment),
      );
    }
    started.add(index);
  }
}

/** Some servers (Mistral) stream content as parts: their text parts are the message's text. */
function textOfParts(parts: ReadonlyArray<Record<string, unknown>>): string {
  let text = '';
  for (const part of parts) if (part.type === 'text' && typeof part.text === 'string') text += part.text;
  return text;
}

function mapDelta(delta: OpenAIChunkDelta, context: OpenAIContext): AgentEvent[] {
  const { events } = context;
  if (delta.tool_calls) checkToolCallNames(delta, context);
  const out: AgentEvent[] = [];
  const reasoning = delta.reasoning_content ?? delta.reasoning;
  if (typeof reasoning === 'string' && reasoning !== '') {
    if (context.reasoningId === undefined) {
      context.reasoningId = `reasoning-${++context.counter}`;
      out.push(events.emit('reasoning.started', { reasoningId: context.reasoningId }));
    }
    if (events.tracker.isOpen('reasoning', context.reasoningId)) {
      out.push(events.emit('reasoning.delta', { reasoningId: context.reasoningId, delta: reasoning }));
    }
  }
  // A refusal is what the model says instead of an answer: it is the message's text, marked in its meta.
  const content = Array.isArray(delta.content) ? textOfParts(delta.content) : delta.content;
  const text = typeof content === 'string' && content !== '' ? content : delta.refusal;
  if (typeof text === 'string' && text !== '') {
    out.push(...closeReasoning(context));
    if (context.messageId === undefined) {
      context.messageId = `message-${++context.counter}`;
      out.push(events.emit('message.started', { messageId: context.messageId, role: 'assistant' }));
    }
    if (text === delta.refusal) context.refused = true;
    out.push(events.emit('message.delta', { messageId: context.messageId, delta: text }));
  }
  for (const fragment of delta.tool_calls ?? []) {
    out.push(...closeReasoning(context));
    const index = fragment.index ?? 0;
    let slot = context.tools.get(index);
    // Empty strings are what some servers send for "none": they name nothing.
    const name = fragment.function?.name || undefined;
    const fragmentId = fragment.id || undefined;
    // Some backends repeat index 0 for every call: a new id with a name is a new call.
    const startsAnother =
      slot !== undefined && fragmentId !== undefined && fragmentId !== slot.id && name !== undefined;
    if (slot === undefined || startsAnother) {
      if (slot !== undefined) out.push(events.emit('tool.arguments_completed', { toolCallId: slot.id }));
      const id = fragmentId ?? `call-${context.events.runId}-${index}-${++context.counter}`;
      slot = { id, name: name as string };
      context.tools.set(index, slot);
      context.toolOrder.push(id);
      const payload: { toolCallId: string; name: string; messageId?: string } = { toolCallId: id, name: slot.name };
      if (context.messageId !== undefined) payload.messageId = context.messageId;
      out.push(events.emit('tool.requested', payload));
    }
    const text = fragment.function?.arguments;
    if (typeof text === 'string' && text !== '')
      out.push(events.emit('tool.arguments_delta', { toolCallId: slot.id, delta: text }));
  }
  return out;
}

/** Closes the message, reasoning and tool calls at `finish_reason`. */
function finish(reason: string, context: OpenAIContext): AgentEvent[] {
  const { events } = context;
  context.finishReason = reason;
  const meta = {
    meta: { openai: context.refused ? { finishReason: reason, refusal: true } : { finishReason: reason } },
  };
  const out = closeReasoning(context);
  if (context.messageId !== undefined && events.tracker.isOpen('message', context.messageId)) {
    out.push(events.emit('message.completed', { messageId: context.messageId }, meta));
  }
  for (const id of context.toolOrder) {
    if (events.tracker.isOpen('tool', id) && !events.tracker.toolCallsAwaitingExecution().includes(id)) {
      out.push(events.emit('tool.arguments_completed', { toolCallId: id }));
    }
  }
  return out;
}

function endRun(context: OpenAIContext): AgentEvent[] {
  const { events } = context;
  if (events.tracker.hasEnded) return [];
  if (context.finishReason === undefined) {
    return events.close({
      type: 'failed',
      error: { message: 'The stream ended before a finish_reason', code: 'incomplete_stream' },
    });
  }
  const payload: { usage?: AgentUsage; pendingToolCallIds?: string[] } = {};
  if (context.usage !== undefined) payload.usage = usageOf(context.usage);
  // The application executes the tool calls: the run ends with them awaiting execution.
  const pending = events.tracker.toolCallsAwaitingExecution();
  if (pending.length > 0) payload.pendingToolCallIds = pending;
  const meta: Record<string, unknown> = { finishReason: context.finishReason };
  if (context.model !== undefined) meta.model = context.model;
  if (context.completionId !== undefined) meta.completionId = context.completionId;
  if (context.usage !== undefined) meta.usage = context.usage;
  return [events.emit('run.completed', payload, { meta: { openai: meta } })];
}

function mapChunk(chunk: SSEChunk, context: OpenAIContext): AgentEvent[] {
  if (context.done) return [];
  if (chunk.data.trim() === '[DONE]') {
    context.done = true;
    return endRun(context);
  }
  const parsed = readOpenAIChunk(chunk.data);
  if (parsed.error !== undefined && parsed.error !== null) {
    const { message, code, type } = parsed.error;
    throw new OpenAIStreamError(
      message ?? 'The server reported an error',
      code === null || code === undefined ? undefined : String(code),
      type,
    );
  }
  if (typeof parsed.model === 'string') context.model = parsed.model;
  if (typeof parsed.id === 'string') context.completionId ??= parsed.id;
  if (parsed.usage) context.usage = parsed.usage;
  const choice = parsed.choices?.find((candidate) => (candidate.index ?? 0) === 0);
  if (choice === undefined) return [];
  const out = choice.delta ? mapDelta(choice.delta, context) : [];
  if (typeof choice.finish_reason === 'string') out.push(...finish(choice.finish_reason, context));
  return out;
}

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
 * @example
 * const provider = createOpenAICompatibleAgentProvider({
 *   baseURL: 'https://api.openai.com/v1',
 *   apiKey: process.env.OPENAI_API_KEY,
 *   model: 'gpt-4o-mini',
 * });
 * await runAgentProvider({
 *   provider,
 *   input: { messages: [{ role: 'user', content: 'Weather in Paris?' }], tools },
 *   sessionId: 'chat-1',
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
  return {
    id: 'openai-compatible',
    protocol: { name: 'agent-event', version: '0.1' },
    capabilities: { eventTypes: OPENAI_EVENT_TYPES, transports: [transport.kind] },
    transport,
    createContext: (context) => ({
      events: createAgentRunEmitter(context),
      messageId: undefined,
      reasoningId: undefined,
      tools: new Map(),
      toolOrder: [],
      finishReason: undefined,
      usage: undefined,
      model: undefined,
      completionId: undefined,
      done: false,
      counter: 0,
      refused: false,
    }),
    start(input, { events }) {
      const out: AgentEvent[] = [events.emit('run.started', { input })];
      const last = input.messages.at(-1);
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
    prepareRequest(input) {
      const request: OpenAIChatRequest = {
        ...input.body,
        model: options.model,
        messages: input.messages.map(toOpenAIMessage),
        stream: true,
        stream_options: { include_usage: true },
      };
      if (input.tools !== undefined) request.tools = input.tools;
      if (input.toolChoice !== undefined) request.tool_choice = input.toolChoice;
      return request;
    },
    transformChunk: mapChunk,
    flush: (context) => (context.done ? [] : endRun(context)),
    transformError: (error, { events }) =>
      events.close(
        isAbortError(error)
          ? { type: 'cancelled', reason: 'aborted' }
          : { type: 'failed', error: toAgentErrorInfo(error, classify(error)) },
      ),
    classifyError: (error) => ({ retryable: classify(error) }),
  };
}

/** A message with our content parts turned into OpenAI's; string or null content stays as it is. */
function toOpenAIMessage(message: OpenAIChatMessage): OpenAIChatMessage {
  if (!Array.isArray(message.content)) return message;
  return { ...message, content: toOpenAIContent(message.content) };
}

/** Rate limits, overloads, server errors and dropped connections are worth retrying. */
function classify(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false;
  const { code, status } = error as { code?: unknown; status?: unknown };
  if (typeof status === 'number') return status === 429 || status >= 500;
  return code === 'network_error' || code === 'rate_limit_exceeded' || code === 'server_error' || code === 'overloaded';
}
