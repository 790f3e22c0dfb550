import type { Message as AgUIMessage, MessagesSnapshotEvent, ToolCall } from '@ag-ui/core';
import type { AgentContentPart, AgentMessageContent } from '../../protocol/contentSchemas';
import type { AgentEvent } from '../../protocol/eventSchemas';
import type { AgUIContextState } from './agUIContext';
import { AgUIEventError } from './parseAgUIEvent';

/** AG-UI message content as ours: text parts stay text, other parts become `agui.*` parts. */
export function contentOf(content: unknown): AgentMessageContent {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content.map((part: Record<string, unknown>): AgentContentPart => {
    if (part.type === 'text' && typeof part.text === 'string') return { type: 'text', text: part.text };
    return { type: `agui.${String(part.type)}`, data: part };
  });
}

/** A message's tool calls: AG-UI gives them to assistant messages only. */
function toolCallsOf(message: AgUIMessage): ToolCall[] {
  return message.role === 'assistant' ? (message.toolCalls ?? []) : [];
}

/**
 * Throws when a snapshot message or tool call has an empty id or tool name. Checked for the
 * whole snapshot before any of it is emitted.
 */
export function checkSnapshotNames(snapshot: MessagesSnapshotEvent): void {
  for (const [index, message] of snapshot.messages.entries()) {
    if (message.id === '') throw new AgUIEventError(snapshot.type, `messages.${index}.id`, 'is empty', snapshot);
    for (const [call, toolCall] of toolCallsOf(message).entries()) {
      const at = `messages.${index}.toolCalls.${call}`;
      if (toolCall.id === '') throw new AgUIEventError(snapshot.type, `${at}.id`, 'is empty', snapshot);
      if (toolCall.function.name === '')
        throw new AgUIEventError(snapshot.type, `${at}.function.name`, 'is empty', snapshot);
    }
  }
}

/** Emits a message already complete (from MESSAGES_SNAPSHOT), unless the caller already has it. */
export function hydrateMessage(context: AgUIContextState, message: AgUIMessage): AgentEvent[] {
  const { events } = context;
  const id = message.id;
  if (context.knownMessages.has(id)) return [];
  context.knownMessages.add(id);
  const out: AgentEvent[] = [];
  switch (message.role) {
    case 'reasoning':
      out.push(
        events.emit('reasoning.started', { reasoningId: id, content: message.content }),
        events.emit('reasoning.completed', { reasoningId: id }),
      );
      return out;
    case 'activity':
      out.push(
        events.emit('activity.snapshot', {
          activityId: id,
          activityType: message.activityType,
          content: message.content,
        }),
      );
      return out;
    case 'tool':
      out.push(
        events.emit('message.started', {
          messageId: id,
          role: 'tool',
          content: contentOf(message.content),
          toolCallId: message.toolCallId,
        }),
      );
      break;
    default: {
      out.push(
        events.emit('message.started', {
          messageId: id,
          role: message.role,
          content: contentOf(message.content ?? ''),
        }),
      );
    }
  }
  out.push(events.emit('message.completed', { messageId: id }));
  for (const call of toolCallsOf(message)) {
    if (context.toolCalls.includes(call.id)) continue;
    context.toolCalls.push(call.id);
    out.push(
      events.emit('tool.requested', {
        toolCallId: call.id,
        name: call.function.name,
        arguments: call.function.arguments,
        messageId: id,
      }),
      events.emit('tool.arguments_completed', { toolCallId: call.id }),
    );
  }
  return out;
}
