import type { AgentErrorInfo, AgentEvent, AgentUsage } from '../../protocol/eventSchemas';
import type { SSEChunk } from '../../transports/createSSETransport';
import type { AgentProviderContextOptions } from '../AgentProvider';
import type { AgentRunEmitter } from '../createAgentRunEmitter';
import { anthropicUsage } from './anthropicUsage';
import {
  AnthropicEventError,
  AnthropicStreamError,
  type AnthropicStreamEvent,
  readAnthropicEvent,
} from './readAnthropicEvent';

/** How a run fails when the stream ends before `message_stop`. */
export const ANTHROPIC_INCOMPLETE_STREAM: AgentErrorInfo = {
  message: 'The stream ended before message_stop',
  code: 'incomplete_stream',
};

/** Content the event protocol has no standard home for (web search results), handed over as it is. */
export interface AnthropicExtensionEvent {
  name: `anthropic.${string}`;
  runId: string;
  data: unknown;
}

type OnExtension = ((extension: AnthropicExtensionEvent) => void) | undefined;

type Block =
  | { kind: 'text'; id: string; citations: unknown[] }
  | { kind: 'thinking'; id: string; signature: string | undefined }
  | { kind: 'tool'; id: string; hasInput: boolean }
  | { kind: 'other' };

export interface AnthropicContext {
  events: AgentRunEmitter;
  /** The session's AgentState as the run started: the request's conversation, unless the input gives messages. */
  history: AgentProviderContextOptions['history'];
  /** Given when the run continues one that ended waiting for input: the request sends no new prompt. */
  continuation: AgentProviderContextOptions['continuation'];
  /** The Messages API's id of the response (`msg_...`); its text blocks are messages `<id>:<index>`. */
  messageId: string;
  /** The last text block's message: the one the tool calls that follow it belong to. */
  textMessageId: string | undefined;
  blocks: Map<number, Block>;
  /** Server tools (web search) by the id their result blocks name. */
  serverTools: Set<string>;
  /** The usage the stream reported, as it reported it: `message_start`'s, updated by `message_delta`'s. */
  usage: Record<string, unknown>;
  stopReason: string | undefined;
  model: string | undefined;
}

/** A fresh context for one run, keeping the conversation it continues. */
export function createAnthropicContext(
  events: AgentRunEmitter,
  options: Pick<AgentProviderContextOptions, 'history' | 'continuation'> = {},
): AnthropicContext {
  return {
    events,
    history: options.history,
    continuation: options.continuation,
    messageId: `message-${events.runId}`,
    textMessageId: undefined,
    blocks: new Map(),
    serverTools: new Set(),
    usage: {},
    stopReason: undefined,
    model: undefined,
  };
}

type StreamEvent = AnthropicStreamEvent;

function addUsage(usage: Record<string, unknown>, source: Record<string, unknown> | null | undefined): void {
  if (source === undefined || source === null) return;
  // `message_delta` counts are cumulative: a later value replaces an earlier one.
  for (const [field, value] of Object.entries(source)) if (value !== null && value !== undefined) usage[field] = value;
}

function startBlock(event: StreamEvent, context: AnthropicContext, onExtension: OnExtension): AgentEvent[] {
  const { events } = context;
  const block = event.content_block;
  const index = event.index ?? 0;
  if (block === undefined) return [];
  switch (block.type) {
    case 'text': {
      const id = `${context.messageId}:${index}`;
      context.blocks.set(index, { kind: 'text', id, citations: [] });
      context.textMessageId = id;
      const out: AgentEvent[] = [events.emit('message.started', { messageId: id, role: 'assistant' })];
      if (typeof block.text === 'string' && block.text !== '')
        out.push(events.emit('message.delta', { messageId: id, delta: block.text }));
      return out;
    }
    case 'thinking': {
      const id = `${context.messageId}:${index}`;
      context.blocks.set(index, { kind: 'thinking', id, signature: undefined });
      const out: AgentEvent[] = [events.emit('reasoning.started', { reasoningId: id })];
      if (typeof block.thinking === 'string' && block.thinking !== '')
        out.push(events.emit('reasoning.delta', { reasoningId: id, delta: block.thinking }));
      return out;
    }
    case 'redacted_thinking': {
      const id = `${context.messageId}:${index}`;
      context.blocks.set(index, { kind: 'other' });
      return [
        events.emit('reasoning.started', { reasoningId: id, redacted: true, content: String(block.data ?? '') }),
        events.emit('reasoning.completed', { reasoningId: id }),
      ];
    }
    case 'tool_use':
    case 'server_tool_use': {
      if (typeof block.name !== 'string' || block.name === '') {
        throw new AnthropicEventError(
          `content_block.name`,
          `a ${block.type} block must name its tool, and the API sent ${JSON.stringify(block.name ?? null)}`,
          JSON.stringify(event),
        );
      }
      // An empty id names nothing: the call gets one of its own, as a call without an id would.
      const id = typeof block.id === 'string' && block.id !== '' ? block.id : `toolu-${events.runId}-${index}`;
      const input = block.input;
      const startsWithInput = typeof input === 'object' && input !== null && Object.keys(input).length > 0;
      context.blocks.set(index, { kind: 'tool', id, hasInput: startsWithInput });
      if (block.type === 'server_tool_use') context.serverTools.add(id);
      const payload: { toolCallId: string; name: string; messageId?: string; arguments?: string } = {
        toolCallId: id,
        name: block.name,
      };
      if (context.textMessageId !== undefined) payload.messageId = context.textMessageId;
      if (startsWithInput) payload.arguments = JSON.stringify(input);
      return [
        events.emit(
          'tool.requested',
          payload,
          block.type === 'server_tool_use' ? { meta: { anthropic: { serverTool: true } } } : undefined,
        ),
      ];
    }
    default: {
      context.blocks.set(index, { kind: 'other' });
      const toolUseId = typeof block.tool_use_id === 'string' ? block.tool_use_id : undefined;
      onExtension?.({ name: `anthropic.${block.type}`, runId: events.runId, data: block });
      // A server tool's result (web search): the call is complete, its result is the block's content.
      if (
        toolUseId !== undefined &&
        context.serverTools.has(toolUseId) &&
        events.tracker.isOpen('toolCall', toolUseId)
      ) {
        return [
          events.emit('tool.running', { toolCallId: toolUseId }),
          events.emit('tool.completed', { toolCallId: toolUseId, result: block.content }),
        ];
      }
      return [];
    }
  }
}

function blockDelta(event: StreamEvent, context: AnthropicContext): AgentEvent[] {
  const { events } = context;
  const block = context.blocks.get(event.index ?? 0);
  const delta = event.delta;
  if (block === undefined || delta === undefined) return [];
  switch (delta.type) {
    case 'text_delta':
      if (block.kind !== 'text' || typeof delta.text !== 'string' || delta.text === '') return [];
      return [events.emit('message.delta', { messageId: block.id, delta: delta.text })];
    case 'thinking_delta':
      if (block.kind !== 'thinking' || typeof delta.thinking !== 'string' || delta.thinking === '') return [];
      return [events.emit('reasoning.delta', { reasoningId: block.id, delta: delta.thinking })];
    case 'signature_delta':
      if (block.kind === 'thinking' && typeof delta.signature === 'string')
        block.signature = (block.signature ?? '') + delta.signature;
      return [];
    case 'input_json_delta':
      if (block.kind !== 'tool' || typeof delta.partial_json !== 'string' || delta.partial_json === '') return [];
      block.hasInput = true;
      return [events.emit('tool.arguments_delta', { toolCallId: block.id, delta: delta.partial_json })];
    case 'citations_delta':
      if (block.kind === 'text') block.citations.push(delta.citation);
      return [];
    default:
      return [];
  }
}

function stopBlock(event: StreamEvent, context: AnthropicContext): AgentEvent[] {
  const { events } = context;
  const index = event.index ?? 0;
  const block = context.blocks.get(index);
  context.blocks.delete(index);
  if (block === undefined) return [];
  switch (block.kind) {
    case 'text':
      return [
        events.emit(
          'message.completed',
          { messageId: block.id },
          block.citations.length > 0 ? { meta: { anthropic: { citations: block.citations } } } : undefined,
        ),
      ];
    case 'thinking':
      return [
        events.emit(
          'reasoning.completed',
          { reasoningId: block.id },
          block.signature !== undefined ? { meta: { anthropic: { signature: block.signature } } } : undefined,
        ),
      ];
    case 'tool':
      // A tool_use block that streamed no input has `{}` as its input.
      return [
        events.emit(
          'tool.arguments_completed',
          block.hasInput ? { toolCallId: block.id } : { toolCallId: block.id, arguments: '{}' },
        ),
      ];
    default:
      return [];
  }
}

function endRun(context: AnthropicContext): AgentEvent[] {
  const { events } = context;
  if (events.tracker.hasEnded) return [];
  const payload: { usage?: AgentUsage; pendingToolCallIds?: string[] } = {};
  const hasUsage = Object.keys(context.usage).length > 0;
  if (hasUsage) payload.usage = anthropicUsage(context.usage);
  // stop_reason tool_use: the application runs the client tools; server tools already ran.
  const pending = events.tracker.toolCallsAwaitingExecution().filter((id) => !context.serverTools.has(id));
  if (pending.length > 0) payload.pendingToolCallIds = pending;
  const meta: Record<string, unknown> = { stopReason: context.stopReason ?? null, messageId: context.messageId };
  if (context.model !== undefined) meta.model = context.model;
  if (hasUsage) meta.usage = context.usage;
  return [events.emit('run.completed', payload, { meta: { anthropic: meta } })];
}

/**
 * One SSE frame of a Messages API stream as events: content blocks (text, thinking,
 * redacted thinking, client and server tool use, server tool results), usage, and
 * `message_stop`, which ends the run. An `error` event throws an `AnthropicStreamError`;
 * a frame that is not a stream event, an `AnthropicEventError`.
 */
export function mapAnthropicEvent(chunk: SSEChunk, context: AnthropicContext, onExtension: OnExtension): AgentEvent[] {
  const event = readAnthropicEvent(chunk.data);
  switch (event.type) {
    case 'message_start':
      if (event.message?.id) context.messageId = event.message.id;
      if (event.message?.model !== undefined) context.model = event.message.model;
      addUsage(context.usage, event.message?.usage);
      return [];
    case 'content_block_start':
      return startBlock(event, context, onExtension);
    case 'content_block_delta':
      return blockDelta(event, context);
    case 'content_block_stop':
      return stopBlock(event, context);
    case 'message_delta':
      if (typeof event.delta?.stop_reason === 'string') context.stopReason = event.delta.stop_reason;
      addUsage(context.usage, event.usage);
      return [];
    case 'message_stop':
      return endRun(context);
    case 'error':
      throw new AnthropicStreamError(event.error?.type ?? 'error', event.error?.message ?? 'The API reported an error');
    default:
      // ping, and event types added later: nothing to map.
      return [];
  }
}
