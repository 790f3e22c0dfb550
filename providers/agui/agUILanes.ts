import type { ReasoningMessageChunkEvent, TextMessageChunkEvent, ToolCallChunkEvent } from '@ag-ui/core';
import type { AgentEvent } from '../../protocol/eventSchemas';
import type { AgUIContextState, LaneKind } from './agUIContext';
import { AgUIEventError } from './parseAgUIEvent';

export function lanesToClose(context: AgUIContextState, lane: string): AgentEvent[] {
  const open = context.lanes.get(lane);
  if (open === undefined) return [];
  context.lanes.delete(lane);
  const { events } = context;
  if (open.kind === 'text') return [events.emit('message.completed', { messageId: open.id })];
  if (open.kind === 'reasoning') return [events.emit('reasoning.completed', { reasoningId: open.id })];
  return [events.emit('tool.arguments_completed', { toolCallId: open.id })];
}

/** Closes the lane's open chunk stream (if any), then emits the event: the common case allocates one array. */
export function closeLaneThen(context: AgUIContextState, lane: string, emit: () => AgentEvent): AgentEvent[] {
  if (context.lanes.size === 0) return [emit()];
  const out = lanesToClose(context, lane);
  out.push(emit());
  return out;
}

export function closeAllLanes(context: AgUIContextState): AgentEvent[] {
  return [...context.lanes.keys()].flatMap((lane) => lanesToClose(context, lane));
}

/** Expands TEXT_MESSAGE_CHUNK, TOOL_CALL_CHUNK and REASONING_MESSAGE_CHUNK with AG-UI's lane rules. */
export function mapChunk(
  event: TextMessageChunkEvent | ToolCallChunkEvent | ReasoningMessageChunkEvent,
  context: AgUIContextState,
  lane: string,
  extra: { meta: Record<string, unknown> } | undefined,
): AgentEvent[] {
  const { events } = context;
  const kind: LaneKind =
    event.type === 'TEXT_MESSAGE_CHUNK' ? 'text' : event.type === 'TOOL_CALL_CHUNK' ? 'tool' : 'reasoning';
  const id = event.type === 'TOOL_CALL_CHUNK' ? event.toolCallId : event.messageId;
  const open = context.lanes.get(lane);
  const out: AgentEvent[] = [];
  let current = open;
  // A chunk continues the open stream of its lane unless it names another id.
  if (open === undefined || open.kind !== kind || (id !== undefined && id !== open.id)) {
    out.push(...lanesToClose(context, lane));
    if (id === undefined) {
      throw new AgUIEventError(
        event.type,
        kind === 'tool' ? 'toolCallId' : 'messageId',
        'the first chunk of a stream must name it',
        event,
      );
    }
    current = { kind, id };
    context.lanes.set(lane, current);
    if (event.type === 'TEXT_MESSAGE_CHUNK') {
      context.knownMessages.add(id);
      const role = event.role ?? 'assistant';
      out.push(events.emit('message.started', { messageId: id, role }, extra));
    } else if (event.type === 'REASONING_MESSAGE_CHUNK') {
      out.push(events.emit('reasoning.started', { reasoningId: id }, extra));
    } else {
      if (typeof event.toolCallName !== 'string') {
        throw new AgUIEventError(event.type, 'toolCallName', 'the first chunk of a tool call must name it', event);
      }
      context.toolCalls.push(id);
      const payload: { toolCallId: string; name: string; messageId?: string } = {
        toolCallId: id,
        name: event.toolCallName,
      };
      if (typeof event.parentMessageId === 'string') payload.messageId = event.parentMessageId;
      out.push(events.emit('tool.requested', payload, extra));
    }
  }
  const delta = event.delta;
  if (typeof delta === 'string' && delta !== '' && current !== undefined) {
    if (kind === 'text') out.push(events.emit('message.delta', { messageId: current.id, delta }));
    else if (kind === 'reasoning') out.push(events.emit('reasoning.delta', { reasoningId: current.id, delta }));
    else out.push(events.emit('tool.arguments_delta', { toolCallId: current.id, delta }));
  }
  return out;
}
