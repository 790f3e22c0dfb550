import type { AgentMessageState, AgentState, AgentToolCallState } from '../../machines/agentState';
import { getAgentEntityKey } from '../../protocol/getAgentEntityKey';
import { type OpenAIChatMessage, toOpenAIContent } from './openAIContent';

type OpenAIToolCall = NonNullable<OpenAIChatMessage['tool_calls']>[number];

/** One message of the conversation; an assistant's also gathers its tool calls and their results. */
interface Entry {
  message: OpenAIChatMessage;
  toolCalls: OpenAIToolCall[];
  /** The `tool` messages answering `toolCalls`: the API wants them right after this message. */
  results: OpenAIChatMessage[];
}

const hasContent = (content: OpenAIChatMessage['content']): boolean => content !== null && content.length > 0;

/**
 * Only a settled tool call goes back: the API rejects an assistant's tool call that no
 * `tool` message answers, and a cancelled or still open call has no answer.
 */
const isSettled = (toolCall: AgentToolCallState): boolean =>
  toolCall.status === 'completed' || toolCall.status === 'failed';

function toChatMessage(message: AgentMessageState): OpenAIChatMessage {
  const chat: OpenAIChatMessage = {
    role: message.role,
    content: typeof message.content === 'string' ? message.content : toOpenAIContent(message.content),
  };
  if (message.name !== undefined) chat.name = message.name;
  return chat;
}

/** What the model reads as the tool's answer: a string result as it is, anything else as JSON, a failure marked as one. */
function toolResultText(toolCall: AgentToolCallState): string {
  if (toolCall.status === 'failed') return `Error: ${toolCall.error?.message ?? 'the tool failed'}`;
  if (toolCall.result === undefined) return '';
  return typeof toolCall.result === 'string' ? toolCall.result : JSON.stringify(toolCall.result);
}

/**
 * A session's conversation from AgentState, as Chat Completions `messages`, in the order
 * the entities arrived: user, system and developer messages as they are (our content parts
 * as OpenAI's), assistant messages with their `tool_calls`, each followed by one `tool`
 * message per call. Tool calls hang on the assistant message they name (`messageId`), else
 * on the run's assistant message before them, else on an assistant message of their own
 * with `null` content.
 *
 * What is left out: other sessions; reasoning (Chat Completions takes none back); tool calls
 * that are not settled (cancelled, or still awaiting a result: the API rejects a call that
 * no `tool` message answers); messages without content that carry no tool call; `tool`
 * messages (AG-UI's way of keeping results), since results come from the tool calls.
 * A message's status does not matter otherwise: the partial text of a cancelled or failed
 * answer is what the user saw, so it is sent. A completed call's result goes as it is when
 * it is a string, as JSON otherwise, and as `''` when there is none; a failed call's answer
 * is `Error: <message>`. A retried call (`retryOf`) is a call of its own, with its own answer.
 * Cost is linear in the size of the state.
 *
 * @example
 * // Server side: continue a conversation kept in a store.
 * const messages = toOpenAIMessages(store.getSnapshot(), 'chat-1');
 * // [{ role: 'user', content: 'Weather in Paris?' },
 * //  { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }] },
 * //  { role: 'tool', tool_call_id: 'call_1', content: '{"celsius":14}' }]
 * await openai.chat.completions.create({ model: 'gpt-4o-mini', messages: [...messages, { role: 'user', content: 'And Rome?' }] });
 */
export function toOpenAIMessages(state: AgentState, sessionId: string): OpenAIChatMessage[] {
  const entries: Entry[] = [];
  const assistantByKey = new Map<string, Entry>();
  const lastAssistantByRun = new Map<string, Entry>();
  for (const ref of state.order) {
    if (ref.kind === 'message') {
      const message = state.messages[ref.key];
      if (message === undefined || message.sessionId !== sessionId || message.role === 'tool') continue;
      const entry: Entry = { message: toChatMessage(message), toolCalls: [], results: [] };
      entries.push(entry);
      if (message.role === 'assistant') {
        assistantByKey.set(ref.key, entry);
        lastAssistantByRun.set(message.runId, entry);
      }
    } else if (ref.kind === 'toolCall') {
      const toolCall = state.toolCalls[ref.key];
      if (toolCall === undefined || toolCall.sessionId !== sessionId || !isSettled(toolCall)) continue;
      const named =
        toolCall.messageId === undefined
          ? undefined
          : assistantByKey.get(getAgentEntityKey(toolCall.runId, toolCall.messageId));
      let entry = named ?? lastAssistantByRun.get(toolCall.runId);
      if (entry === undefined) {
        entry = { message: { role: 'assistant', content: null }, toolCalls: [], results: [] };
        entries.push(entry);
        lastAssistantByRun.set(toolCall.runId, entry);
      }
      entry.toolCalls.push({
        id: toolCall.id,
        type: 'function',
        // Arguments that never streamed are an empty object, which every server accepts.
        function: { name: toolCall.name, arguments: toolCall.arguments === '' ? '{}' : toolCall.arguments },
      });
      entry.results.push({ role: 'tool', tool_call_id: toolCall.id, content: toolResultText(toolCall) });
    }
  }
  const messages: OpenAIChatMessage[] = [];
  for (const { message, toolCalls, results } of entries) {
    if (toolCalls.length === 0) {
      if (hasContent(message.content)) messages.push(message);
      continue;
    }
    messages.push({ ...message, content: hasContent(message.content) ? message.content : null, tool_calls: toolCalls });
    messages.push(...results);
  }
  return messages;
}
