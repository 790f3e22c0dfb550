import type { AgentReasoningState, AgentState, AgentToolCallState } from '../../machines/agentState';
import { type AnthropicContentBlock, toAnthropicContent } from './anthropicContent';

/** A message as the Messages API takes it. */
export interface AnthropicMessage {
  role: 'user' | 'assistant';
  content: string | Array<Record<string, unknown>>;
}

/** One turn as it is assembled: an assistant's also gathers the results of its tool calls. */
interface Turn {
  role: 'user' | 'assistant';
  blocks: AnthropicContentBlock[];
  /** `tool_result` blocks: the API wants them first in the user turn right after this one. */
  results: AnthropicContentBlock[];
}

const isSystem = (role: string): boolean => role === 'system' || role === 'developer';

/**
 * Only a settled client tool call goes back: the API rejects a `tool_use` that no
 * `tool_result` answers, and a server tool (web search) ran inside the API's own turn.
 */
function isSent(toolCall: AgentToolCallState): boolean {
  if (toolCall.status !== 'completed' && toolCall.status !== 'failed') return false;
  const anthropic = toolCall.meta?.anthropic as { serverTool?: unknown } | undefined;
  return anthropic?.serverTool !== true;
}

/** A thinking block as the API gave it, when the record kept what the API needs to take it back. */
function thinkingBlockOf(reasoning: AgentReasoningState): AnthropicContentBlock | undefined {
  if (reasoning.redacted) {
    return reasoning.content === '' ? undefined : { type: 'redacted_thinking', data: reasoning.content };
  }
  const signature = (reasoning.meta?.anthropic as { signature?: unknown } | undefined)?.signature;
  return typeof signature === 'string' ? { type: 'thinking', thinking: reasoning.content, signature } : undefined;
}

function toolUseOf(toolCall: AgentToolCallState): AnthropicContentBlock {
  const input = toolCall.parsedArguments;
  // The API takes an object as input; arguments that never parsed to one are sent as `{}`.
  const object = typeof input === 'object' && input !== null && !Array.isArray(input) ? input : {};
  return { type: 'tool_use', id: toolCall.id, name: toolCall.name, input: object };
}

function toolResultOf(toolCall: AgentToolCallState): AnthropicContentBlock {
  const block: AnthropicContentBlock = { type: 'tool_result', tool_use_id: toolCall.id };
  if (toolCall.status === 'failed') {
    block.content = toolCall.error?.message ?? 'The tool failed';
    block.is_error = true;
  } else if (toolCall.result !== undefined) {
    block.content = typeof toolCall.result === 'string' ? toolCall.result : JSON.stringify(toolCall.result);
  }
  return block;
}

const isAnswer = (block: AnthropicContentBlock): boolean =>
  block.type !== 'thinking' && block.type !== 'redacted_thinking';

/** Appends a turn, merged into the previous one when it has the same role: the API wants roles to alternate. */
function append(messages: AnthropicMessage[], role: AnthropicMessage['role'], blocks: AnthropicContentBlock[]): void {
  const previous = messages.at(-1);
  if (previous?.role === role) (previous.content as AnthropicContentBlock[]).push(...blocks);
  else messages.push({ role, content: [...blocks] });
}

/** A turn of one plain text block as a string, as callers usually write it. */
function simplified(message: AnthropicMessage): AnthropicMessage {
  const [only, ...rest] = message.content as AnthropicContentBlock[];
  const plainText = only?.type === 'text' && rest.length === 0 && Object.keys(only).length === 2;
  return plainText ? { role: message.role, content: only.text as string } : message;
}

/**
 * A session's conversation from AgentState, as Messages API `messages`, in the order the
 * entities arrived. User messages are user turns (images and files as `image` and
 * `document` blocks, see `toAnthropicContent`). Each run's assistant output is one assistant
 * turn, its blocks in the order the API streamed them: `thinking` (with its signature) and
 * `redacted_thinking` blocks, `text`, and `tool_use` (`input` is the parsed arguments); the
 * results of those tool calls follow in a user turn, as `tool_result` blocks (`is_error` for a
 * failed call; a string result as it is, anything else as JSON). Turns of the same role are
 * merged, tool results first, since the API wants roles to alternate; a turn of one plain
 * text block is a string.
 *
 * What is left out: other sessions; system and developer messages (they belong in the
 * request's `system`: `toAnthropicSystem`); `tool` messages (results come from the tool
 * calls); tool calls that are not settled (cancelled, or still awaiting a result: the API
 * rejects a `tool_use` without its `tool_result`) and server tools (web search); reasoning
 * without what the API needs to take it back (a signature, or redacted data), as from
 * another provider; an assistant turn with nothing but thinking; empty text. A message's
 * status does not matter otherwise: the partial text of a cancelled answer is what the user
 * saw, so it is sent. Cost is linear in the size of the state.
 *
 * @example
 * // Server side: continue a conversation kept in a store.
 * const state = store.getSnapshot();
 * await anthropic.messages.create({
 *   model: 'claude-sonnet-4-5',
 *   max_tokens: 2048,
 *   system: toAnthropicSystem(state, 'chat-1') ?? 'Be brief.',
 *   messages: [...toAnthropicMessages(state, 'chat-1'), { role: 'user', content: 'And Rome?' }],
 * });
 */
export function toAnthropicMessages(state: AgentState, sessionId: string): AnthropicMessage[] {
  const turns: Turn[] = [];
  const assistantByRun = new Map<string, Turn>();
  const assistantOf = (runId: string): Turn => {
    let turn = assistantByRun.get(runId);
    if (turn === undefined) {
      turn = { role: 'assistant', blocks: [], results: [] };
      turns.push(turn);
      assistantByRun.set(runId, turn);
    }
    return turn;
  };
  for (const ref of state.order) {
    if (ref.kind === 'message') {
      const message = state.messages[ref.key];
      if (message === undefined || message.sessionId !== sessionId) continue;
      if (message.role === 'user')
        turns.push({ role: 'user', blocks: toAnthropicContent(message.content), results: [] });
      else if (message.role === 'assistant')
        assistantOf(message.runId).blocks.push(...toAnthropicContent(message.content));
    } else if (ref.kind === 'reasoning') {
      const reasoning = state.reasoning[ref.key];
      if (reasoning === undefined || reasoning.sessionId !== sessionId) continue;
      const block = thinkingBlockOf(reasoning);
      if (block !== undefined) assistantOf(reasoning.runId).blocks.push(block);
    } else if (ref.kind === 'toolCall') {
      const toolCall = state.toolCalls[ref.key];
      if (toolCall === undefined || toolCall.sessionId !== sessionId || !isSent(toolCall)) continue;
      const turn = assistantOf(toolCall.runId);
      turn.blocks.push(toolUseOf(toolCall));
      turn.results.push(toolResultOf(toolCall));
    }
  }
  const messages: AnthropicMessage[] = [];
  for (const turn of turns) {
    if (turn.role === 'user') {
      if (turn.blocks.length > 0) append(messages, 'user', turn.blocks);
    } else if (turn.blocks.some(isAnswer)) {
      append(messages, 'assistant', turn.blocks);
      if (turn.results.length > 0) append(messages, 'user', turn.results);
    }
  }
  return messages.map(simplified);
}

/**
 * A session's system and developer messages from AgentState, as the text of a Messages API
 * request's `system`, joined by blank lines; `undefined` when it has none. The text parts of
 * a message with parts are its text.
 *
 * @example
 * const system = toAnthropicSystem(store.getSnapshot(), 'chat-1'); // 'Be brief.'
 */
export function toAnthropicSystem(state: AgentState, sessionId: string): string | undefined {
  const texts: string[] = [];
  for (const ref of state.order) {
    if (ref.kind !== 'message') continue;
    const message = state.messages[ref.key];
    if (message === undefined || message.sessionId !== sessionId || !isSystem(message.role)) continue;
    const { content } = message;
    const text =
      typeof content === 'string'
        ? content
        : content.map((part) => (part.type === 'text' ? (part as { text: string }).text : '')).join('');
    if (text !== '') texts.push(text);
  }
  return texts.length === 0 ? undefined : texts.join('\n\n');
}
