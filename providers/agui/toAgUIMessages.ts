import type {
  Message as AgUIMessage,
  AssistantMessage,
  ContentPart,
  ReasoningMessage,
  ToolCall,
  ToolMessage,
} from '@ag-ui/core';
import type { AgentMessageState, AgentReasoningState, AgentState, AgentToolCallState } from '../../machines/agentState';
import { getOwn } from '../../machines/agentStateProjection';
import { getAgentEntityKey } from '../../protocol/getAgentEntityKey';
import { toAgUIContent, toAgUIText } from './agUIMessages';

/** A message of the conversation, and the tool messages answering its tool calls, which follow it. */
interface Slot {
  runId: string;
  message: AgUIMessage;
  results: ToolMessage[];
}

/** What an encrypted value (AG-UI REASONING_ENCRYPTED_VALUE) belongs to. */
interface SealedTarget {
  subtype: 'message' | 'tool-call';
  entityId: string;
}

const PART_TYPES = new Set(['text', 'image', 'audio', 'video', 'document']);

/** The `meta.agui` record an entity carries, when it has one. */
function aguiMetaOf(entity: { meta?: Record<string, unknown> }): Record<string, unknown> | undefined {
  const agui = entity.meta?.agui;
  return typeof agui === 'object' && agui !== null && !Array.isArray(agui)
    ? (agui as Record<string, unknown>)
    : undefined;
}

function stringOf(value: unknown): string | undefined {
  return typeof value === 'string' && value !== '' ? value : undefined;
}

function sealedTargetOf(reasoning: AgentReasoningState): SealedTarget | undefined {
  const agui = aguiMetaOf(reasoning);
  const entityId = stringOf(agui?.entityId);
  const subtype = agui?.subtype;
  if (entityId === undefined || (subtype !== 'message' && subtype !== 'tool-call')) return undefined;
  return { subtype, entityId };
}

/**
 * Ids that stay unique in one conversation. AG-UI ids are unique in a thread, so the first
 * entity keeps its own; another entity with the same id (two runs of another provider both
 * naming their prompt `prompt`, say) gets its run-scoped key instead, so no message is lost.
 */
function createUniqueIds(): (id: string, runId: string) => string {
  const used = new Set<string>();
  return (id, runId) => {
    let candidate = id;
    if (used.has(candidate)) {
      const scoped = getAgentEntityKey(runId, id);
      candidate = scoped;
      for (let count = 2; used.has(candidate); count += 1) candidate = `${scoped}#${count}`;
    }
    used.add(candidate);
    return candidate;
  };
}

/** A tool's result as AG-UI tool message content: text as it is, AG-UI parts as parts, other values as JSON. */
function resultContentOf(result: unknown): string | ContentPart[] {
  if (result === undefined || result === null) return '';
  if (typeof result === 'string') return result;
  const isParts =
    Array.isArray(result) &&
    result.length > 0 &&
    result.every(
      (part) =>
        typeof part === 'object' && part !== null && PART_TYPES.has((part as { type?: unknown }).type as string),
    );
  return isParts ? (result as ContentPart[]) : JSON.stringify(result);
}

function fromMessage(message: AgentMessageState, messageId: string): AgUIMessage | undefined {
  const subagentRunId = stringOf(aguiMetaOf(message)?.subagentRunId);
  const attribution = subagentRunId === undefined ? {} : { subagentRunId };
  const named = message.name === undefined ? {} : { name: message.name };
  switch (message.role) {
    case 'user':
      return { id: messageId, role: 'user', content: toAgUIContent(message.content), ...named, ...attribution };
    case 'system':
    case 'developer':
      return { id: messageId, role: message.role, content: toAgUIText(message.content), ...named, ...attribution };
    case 'assistant': {
      const assistant: AssistantMessage = { id: messageId, role: 'assistant', ...named, ...attribution };
      const text = toAgUIText(message.content);
      if (text !== '') assistant.content = text;
      return assistant;
    }
    case 'tool':
      // A tool message answers a call; without one it has no place in an AG-UI conversation.
      if (message.toolCallId === undefined) return undefined;
      return {
        id: messageId,
        role: 'tool',
        toolCallId: message.toolCallId,
        content: toAgUIContent(message.content),
        ...attribution,
      };
  }
}

function fromReasoning(reasoning: AgentReasoningState, messageId: string): ReasoningMessage | undefined {
  const subagentRunId = stringOf(aguiMetaOf(reasoning)?.subagentRunId);
  const attribution = subagentRunId === undefined ? {} : { subagentRunId };
  // Redacted reasoning is never sent as readable text: its opaque value goes back as `encryptedValue`.
  if (reasoning.redacted) {
    if (reasoning.content === '') return undefined;
    return { id: messageId, role: 'reasoning', content: '', encryptedValue: reasoning.content, ...attribution };
  }
  if (reasoning.content === '') return undefined;
  return { id: messageId, role: 'reasoning', content: reasoning.content, ...attribution };
}

/**
 * The statuses a tool message answers. A call awaiting execution or running gets none: its
 * result is still to come (the run continuing its run brings it).
 */
const SETTLED: ReadonlySet<AgentToolCallState['status']> = new Set(['completed', 'failed', 'cancelled']);

/** The tool message of a settled tool call: its result, or why it failed or was cancelled. */
function resultOf(toolCall: AgentToolCallState, toolCallId: string, messageId: string): ToolMessage {
  const result: ToolMessage = { id: messageId, role: 'tool', toolCallId, content: '' };
  const subagentRunId = stringOf(aguiMetaOf(toolCall)?.subagentRunId);
  if (subagentRunId !== undefined) result.subagentRunId = subagentRunId;
  if (toolCall.status === 'completed') result.content = resultContentOf(toolCall.result);
  else if (toolCall.status === 'failed') result.error = toolCall.error?.message ?? 'failed';
  else result.error = toolCall.reason === undefined ? 'cancelled' : `cancelled: ${toolCall.reason}`;
  return result;
}

function isEmptyAssistant(message: AgUIMessage): boolean {
  return (
    message.role === 'assistant' &&
    message.content === undefined &&
    (message.toolCalls === undefined || message.toolCalls.length === 0) &&
    message.encryptedValue === undefined
  );
}

/**
 * A session's conversation as AG-UI 1.0 `messages`, for the next run's `RunAgentInput`, in
 * the order AgentState received it (`state.order`), other sessions left out:
 *
 * - user, system and developer messages, and assistant messages (one with neither text nor
 *   tool calls is left out); tool messages hydrated from a MESSAGES_SNAPSHOT stay as they were;
 * - each tool call (`{ id, type: 'function', function: { name, arguments } }`) joins the
 *   assistant message its `messageId` names; one whose `messageId` names no message gets an
 *   assistant message of that id, as the AG-UI client builds it; without a `messageId` it
 *   joins the run's latest assistant message, else an assistant message of its own id;
 * - a settled tool call is answered by a tool message right after its assistant message
 *   (after those of the calls before it): completed, its result (text as it is, AG-UI parts
 *   as parts, other values as JSON); failed or cancelled, an empty content and `error`. Its
 *   id is the TOOL_CALL_RESULT's `messageId`, else `<toolCallId>:result`. A call still
 *   awaiting execution is sent without an answer: the run continuing it brings the result;
 * - reasoning as AG-UI `reasoning` messages: readable reasoning with its text; redacted
 *   reasoning never as text, only as the opaque `encryptedValue`. An AG-UI encrypted value
 *   (REASONING_ENCRYPTED_VALUE) goes back on the message or tool call it named, as the
 *   AG-UI client keeps it, and is dropped when that is not in the conversation;
 * - activities are left out, as the AG-UI client leaves them out of its requests.
 *
 * Ids are the ones AgentState keeps, which are the AG-UI ids where the messages came from
 * AG-UI (TEXT_MESSAGE_START, MESSAGES_SNAPSHOT, the input), so the agent sees its own ids
 * again; an id a second entity repeats becomes that entity's run-scoped key. Subagent
 * attribution (`meta.agui.subagentRunId`) is kept. The cost is linear in the entities.
 *
 * @example
 * const messages = toAgUIMessages(store.getSnapshot(), 'thread-1');
 * // [{ id: 'prompt-run-1', role: 'user', content: 'Clean the logs' },
 * //  { id: 'msg-1', role: 'assistant', content: 'Deleting them.', toolCalls: [{ id: 'call-1', ... }] },
 * //  { id: 'tool-msg-1', role: 'tool', toolCallId: 'call-1', content: 'deleted 12 files' }]
 */
export function toAgUIMessages(state: AgentState, sessionId: string): AgUIMessage[] {
  const messageIdOf = createUniqueIds();
  const toolCallIdOf = createUniqueIds();
  // Messages and reasoning by entity key, built before the tool calls are placed, so that a
  // tool call may name a message that arrived after it.
  const slots = new Map<string, Slot>();
  const answered = new Set<string>();
  const sealed: Array<{ reasoning: AgentReasoningState; target: SealedTarget }> = [];
  for (const { kind, key } of state.order) {
    if (kind === 'message') {
      const message = getOwn(state.messages, key);
      if (message === undefined || message.sessionId !== sessionId) continue;
      const converted = fromMessage(message, messageIdOf(message.id, message.runId));
      if (converted === undefined) continue;
      if (converted.role === 'tool') answered.add(converted.toolCallId);
      slots.set(key, { runId: message.runId, message: converted, results: [] });
    } else if (kind === 'reasoning') {
      const reasoning = getOwn(state.reasoning, key);
      if (reasoning === undefined || reasoning.sessionId !== sessionId) continue;
      const target = reasoning.redacted ? sealedTargetOf(reasoning) : undefined;
      if (target !== undefined) {
        sealed.push({ reasoning, target });
        continue;
      }
      const converted = fromReasoning(reasoning, messageIdOf(reasoning.id, reasoning.runId));
      if (converted !== undefined) slots.set(key, { runId: reasoning.runId, message: converted, results: [] });
    }
  }

  const placed: Slot[] = [];
  const latestAssistant = new Map<string, Slot>();
  const toolCalls = new Map<string, ToolCall>();
  const newAssistant = (id: string, toolCall: AgentToolCallState): Slot => {
    const message: AssistantMessage = { id: messageIdOf(id, toolCall.runId), role: 'assistant' };
    const subagentRunId = stringOf(aguiMetaOf(toolCall)?.subagentRunId);
    if (subagentRunId !== undefined) message.subagentRunId = subagentRunId;
    const slot: Slot = { runId: toolCall.runId, message, results: [] };
    placed.push(slot);
    latestAssistant.set(toolCall.runId, slot);
    return slot;
  };
  const ownerOf = (toolCall: AgentToolCallState): Slot => {
    if (toolCall.messageId !== undefined) {
      const key = getAgentEntityKey(toolCall.runId, toolCall.messageId);
      const named = slots.get(key);
      if (named?.message.role === 'assistant') return named;
      if (named === undefined) {
        const slot = newAssistant(toolCall.messageId, toolCall);
        slots.set(key, slot);
        return slot;
      }
    }
    return latestAssistant.get(toolCall.runId) ?? newAssistant(toolCall.id, toolCall);
  };
  for (const { kind, key } of state.order) {
    if (kind === 'message' || kind === 'reasoning') {
      const slot = slots.get(key);
      if (slot === undefined) continue;
      placed.push(slot);
      if (slot.message.role === 'assistant') latestAssistant.set(slot.runId, slot);
    } else if (kind === 'toolCall') {
      const toolCall = getOwn(state.toolCalls, key);
      if (toolCall === undefined || toolCall.sessionId !== sessionId || toolCall.status === 'streaming_arguments') {
        continue;
      }
      const owner = ownerOf(toolCall);
      const call: ToolCall = {
        id: toolCallIdOf(toolCall.id, toolCall.runId),
        type: 'function',
        function: { name: toolCall.name, arguments: toolCall.arguments },
      };
      const assistant = owner.message as AssistantMessage;
      assistant.toolCalls ??= [];
      assistant.toolCalls.push(call);
      toolCalls.set(key, call);
      if (answered.has(toolCall.id) || !SETTLED.has(toolCall.status)) continue;
      const resultId = stringOf(aguiMetaOf(toolCall)?.resultMessageId) ?? `${toolCall.id}:result`;
      owner.results.push(resultOf(toolCall, call.id, messageIdOf(resultId, toolCall.runId)));
    }
  }

  for (const { reasoning, target } of sealed) {
    const key = getAgentEntityKey(reasoning.runId, target.entityId);
    if (target.subtype === 'tool-call') {
      const call = toolCalls.get(key);
      if (call !== undefined) call.encryptedValue = reasoning.content;
    } else {
      const message = slots.get(key)?.message;
      if (message !== undefined && message.role !== 'activity') message.encryptedValue = reasoning.content;
    }
  }

  const messages: AgUIMessage[] = [];
  for (const slot of placed) {
    if (isEmptyAssistant(slot.message)) continue;
    messages.push(slot.message, ...slot.results);
  }
  return messages;
}
