import { AgentError } from '../../protocol/errors';
import type { AgentEvent, AgentUsage } from '../../protocol/eventSchemas';
import { isAbortError } from '../../transports/AgentTransportError';
import { createSSETransport, type SSEChunk } from '../../transports/createSSETransport';
import type { AgentProvider, AgentTransport } from '../AgentProvider';
import { type AgentRunEmitter, createAgentRunEmitter } from '../createAgentRunEmitter';
import { eventTypesOf } from '../eventTypeGroups';
import { toAgentErrorInfo } from '../toAgentErrorInfo';

/** A chat message as the Chat Completions API takes it. */
export interface OpenAIChatMessage {
  role: 'system' | 'developer' | 'user' | 'assistant' | 'tool';
  content: string | null | Array<Record<string, unknown>>;
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
  headers?: Record<string, string>;
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
  usage: AgentUsage | undefined;
  model: string | undefined;
  completionId: string | undefined;
  done: boolean;
  counter: number;
  refused: boolean;
}

interface ChunkDelta {
  role?: string;
  content?: string | null;
  reasoning_content?: string | null;
  reasoning?: string | null;
  refusal?: string | null;
  tool_calls?: Array<{ index?: number; id?: string; type?: string; function?: { name?: string; arguments?: string } }>;
}

interface CompletionChunk {
  id?: string;
  model?: string;
  choices?: Array<{ index?: number; delta?: ChunkDelta; finish_reason?: string | null }>;
  usage?: Record<string, unknown> | null;
  error?: { message?: string; code?: string | number | null; type?: string };
}

const OPENAI_EVENT_TYPES = eventTypesOf(['run', 'message', 'reasoning', 'tool'], {
  // The application executes the tool calls: they never run or complete in this stream.
  except: ['tool.running', 'tool.completed'],
});

function closeReasoning(context: OpenAIContext): AgentEvent[] {
  if (context.reasoningId === undefined || !context.events.tracker.isOpen('reasoning', context.reasoningId)) return [];
  return [context.events.emit('reasoning.completed', { reasoningId: context.reasoningId })];
}

function usageOf(usage: Record<string, unknown>): AgentUsage {
  const result: AgentUsage = { ...usage };
  if (typeof usage.prompt_tokens === 'number') result.inputTokens = usage.prompt_tokens;
  if (typeof usage.completion_tokens === 'number') result.outputTokens = usage.completion_tokens;
  if (typeof usage.total_tokens === 'number') result.totalTokens = usage.total_tokens;
  return result;
}

function mapDelta(delta: ChunkDelta, context: OpenAIContext): AgentEvent[] {
  const { events } = context;
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
  const text = typeof delta.content === 'string' && delta.content !== '' ? delta.content : delta.refusal;
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
    const name = fragment.function?.name;
    // Some backends repeat index 0 for every call: a new id with a name is a new call.
    const startsAnother =
      slot !== undefined && fragment.id !== undefined && fragment.id !== slot.id && name !== undefined;
    if (slot === undefined || startsAnother) {
      if (slot !== undefined) out.push(events.emit('tool.arguments_completed', { toolCallId: slot.id }));
      const id = fragment.id ?? `call-${context.events.runId}-${index}-${++context.counter}`;
      slot = { id, name: name ?? 'unknown' };
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
  if (context.usage !== undefined) payload.usage = context.usage;
  // The application executes the tool calls: the run ends with them awaiting execution.
  const pending = events.tracker.toolCallsAwaitingExecution();
  if (pending.length > 0) payload.pendingToolCallIds = pending;
  const meta: Record<string, unknown> = { finishReason: context.finishReason };
  if (context.model !== undefined) meta.model = context.model;
  if (context.completionId !== undefined) meta.completionId = context.completionId;
  return [events.emit('run.completed', payload, { meta: { openai: meta } })];
}

function mapChunk(chunk: SSEChunk, context: OpenAIContext): AgentEvent[] {
  if (context.done) return [];
  if (chunk.data.trim() === '[DONE]') {
    context.done = true;
    return endRun(context);
  }
  const parsed = JSON.parse(chunk.data) as CompletionChunk;
  if (parsed.error !== undefined && parsed.error !== null) {
    const { message, code, type } = parsed.error;
    throw new OpenAIStreamError(
      message ?? 'The server reported an error',
      code === null || code === undefined ? undefined : String(code),
      type,
    );
  }
  if (parsed.model !== undefined) context.model = parsed.model;
  if (parsed.id !== undefined) context.completionId ??= parsed.id;
  if (parsed.usage) context.usage = usageOf(parsed.usage);
  const choice = parsed.choices?.find((candidate) => (candidate.index ?? 0) === 0);
  if (choice === undefined) return [];
  const out = choice.delta ? mapDelta(choice.delta, context) : [];
  if (typeof choice.finish_reason === 'string') out.push(...finish(choice.finish_reason, context));
  return out;
}

/**
 * A provider for any OpenAI-compatible Chat Completions endpoint (OpenAI, Azure, vLLM,
 * Ollama, DeepSeek, OpenRouter, ...): streamed text, reasoning (`reasoning_content` or
 * `reasoning`), tool calls by index with stable ids, usage, and errors sent mid-stream.
 * A `tool_calls` finish ends the run with the calls awaiting execution by the application.
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
  const headers: Record<string, string> = { ...options.headers };
  if (options.apiKey !== undefined) headers.authorization = `Bearer ${options.apiKey}`;
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
        const content = typeof last.content === 'string' ? last.content : JSON.stringify(last.content);
        out.push(
          events.emit('message.started', { messageId: 'prompt', role: 'user', content }),
          events.emit('message.completed', { messageId: 'prompt' }),
        );
      }
      return out;
    },
    prepareRequest(input) {
      const request: OpenAIChatRequest = {
        ...input.body,
        model: options.model,
        messages: input.messages,
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

/** Rate limits, overloads, server errors and dropped connections are worth retrying. */
function classify(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false;
  const { code, status } = error as { code?: unknown; status?: unknown };
  if (typeof status === 'number') return status === 429 || status >= 500;
  return code === 'network_error' || code === 'rate_limit_exceeded' || code === 'server_error' || code === 'overloaded';
}
