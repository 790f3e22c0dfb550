import type { AgentMessageState } from '../../../machines/agentState';

/** One bubble: who speaks and what they said, as text. */
export interface DemoBubble {
  role: 'user' | 'ai';
  text: string;
}

/**
 * The `useXChat` parser: user and assistant messages become bubbles, parts as text; tool and
 * system messages are shown in their panels, not in the conversation.
 */
export function toBubbles(message: AgentMessageState): DemoBubble[] {
  if (message.role !== 'user' && message.role !== 'assistant') return [];
  const text =
    typeof message.content === 'string'
      ? message.content
      : message.content.map((part) => (part.type === 'text' ? part.text : `[${part.type}]`)).join('');
  return [{ role: message.role === 'user' ? 'user' : 'ai', text }];
}
