import type { Message as AgUIMessage, ContentPart, MessagesSnapshotEvent, PartSource, ToolCall } from '@ag-ui/core';
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

/** The AG-UI part kind a file of this media type travels as. */
function fileKindOf(mediaType: string | undefined): 'image' | 'audio' | 'video' | 'document' {
  if (mediaType?.startsWith('image/')) return 'image';
  if (mediaType?.startsWith('audio/')) return 'audio';
  if (mediaType?.startsWith('video/')) return 'video';
  return 'document';
}

/** Where an image or file part's bytes are, as AG-UI says it: a URL, or inline data with its media type. */
function sourceOf(part: { url?: string; data?: unknown; mediaType?: string }): PartSource | undefined {
  if (typeof part.url === 'string') {
    return part.mediaType === undefined
      ? { type: 'url', value: part.url }
      : { type: 'url', value: part.url, mimeType: part.mediaType };
  }
  if (typeof part.data === 'string' && part.mediaType !== undefined) {
    return { type: 'data', value: part.data, mimeType: part.mediaType };
  }
  return undefined;
}

/**
 * Our message content as AG-UI's, the reverse of `contentOf`: text parts stay text, `agui.*`
 * parts are the AG-UI parts they were, images and files become media parts. A part AG-UI
 * has no kind for (another extension's, a file with neither URL nor inline data) is left out.
 */
export function toAgUIContent(content: AgentMessageContent): string | ContentPart[] {
  if (typeof content === 'string') return content;
  const parts: ContentPart[] = [];
  for (const part of content) {
    if (part.type === 'text' && 'text' in part) {
      parts.push({ type: 'text', text: part.text });
    } else if (part.type === 'image' || part.type === 'file') {
      const media = part as { url?: string; data?: unknown; mediaType?: string };
      const source = sourceOf(media);
      if (source !== undefined) {
        parts.push({ type: part.type === 'image' ? 'image' : fileKindOf(media.mediaType), source });
      }
    } else if (part.type.startsWith('agui.') && 'data' in part) {
      // `contentOf` kept the AG-UI part itself, already validated by AG-UI's schema.
      const original = part.data as { type?: unknown } | null;
      if (typeof original === 'object' && original !== null && typeof original.type === 'string') {
        parts.push(original as ContentPart);
      }
    }
  }
  return parts;
}

/** Our message content as plain text, for AG-UI messages whose content is a string: the text parts joined. */
export function toAgUIText(content: AgentMessageContent): string {
  if (typeof content === 'string') return content;
  let text = '';
  for (const part of content) if (part.type === 'text' && 'text' in part) text += part.text;
  return text;
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
