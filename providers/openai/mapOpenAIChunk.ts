import type { AgentErrorInfo, AgentEvent, AgentUsage } from '../../protocol/eventSchemas';
import type { SSEChunk } from '../../transports/createSSETransport';
import type { AgentProviderContextOptions } from '../AgentProvider';
import type { AgentRunEmitter } from '../createAgentRunEmitter';
import { type OpenAIChunkDelta, OpenAIChunkError, OpenAIStreamError, readOpenAIChunk } from './readOpenAIChunk';

/** How a run fails when the stream ends before a `finish_reason`. */
export const OPENAI_INCOMPLETE_STREAM: AgentErrorInfo = {
  message: 'The stream ended before a finish_reason',
  code: 'incomplete_stream',
};

interface ToolSlot {
  id: string;
  name: string;
}

export interface OpenAIContext {
  events: AgentRunEmitter;
  /** The session's AgentState as the run started: the request's conversation, unless the input gives messages. */
  history: AgentProviderContextOptions['history'];
  /** Given when the run continues one that ended waiting for input: the request sends no new prompt. */
  continuation: AgentProviderContextOptions['continuation'];
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

/** A fresh context for one run, keeping the conversation it continues. */
export function createOpenAIContext(
  events: AgentRunEmitter,
  options: Pick<AgentProviderContextOptions, 'history' | 'continuation'> = {},
): OpenAIContext {
  return {
    events,
    history: options.history,
    continuation: options.continuation,
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
  };
}

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
    if (events.tracker.isOpen('toolCall', id) && !events.tracker.toolCallsAwaitingExecution().includes(id)) {
      out.push(events.emit('tool.arguments_completed', { toolCallId: id }));
    }
  }
  return out;
}

/**
 * The run's end after `finish_reason`: completed, with usage, and the tool calls it leaves
 * awaiting execution. Nothing before a `finish_reason`: the stream is then incomplete.
 */
export function endOpenAIRun(context: OpenAIContext): AgentEvent[] {
  const { events } = context;
  if (events.tracker.hasEnded) return [];
  if (context.finishReason === undefined) return events.close({ type: 'failed', error: OPENAI_INCOMPLETE_STREAM });
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

/**
 * One SSE frame of a Chat Completions stream as events: text, reasoning and tool-call
 * fragments, `finish_reason`, usage, and `[DONE]`, which ends the run. An error object
 * the server sent throws an `OpenAIStreamError`; a frame that is not a chunk, an `OpenAIChunkError`.
 */
export function mapOpenAIChunk(chunk: SSEChunk, context: OpenAIContext): AgentEvent[] {
  if (context.done) return [];
  if (chunk.data.trim() === '[DONE]') {
    context.done = true;
    return endOpenAIRun(context);
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
