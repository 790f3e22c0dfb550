import type { AgentMessageState } from '../../../machines/agentState';

/** One bubble: who speaks and what they said, as text, and the run it belongs to. */
export interface DemoBubble {
  role: 'user' | 'ai';
  text: string;
  runId: string;
}

/**
 * The `useXChat` parser: user and assistant messages become bubbles, parts as text; tool and
 * system messages are not bubbles: the thread shows each run's tool calls and approvals in words
 * after its messages (`RunActivity`), and their panels show them in full.
 */
export function toBubbles(message: AgentMessageState): DemoBubble[] {
  if (message.role !== 'user' && message.role !== 'assistant') return [];
  const text =
    typeof message.content === 'string'
      ? message.content
      : message.content.map((part) => (part.type === 'text' ? part.text : `[${part.type}]`)).join('');
  return [{ role: message.role === 'user' ? 'user' : 'ai', text, runId: message.runId }];
}
