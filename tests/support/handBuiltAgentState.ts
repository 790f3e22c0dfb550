import {
  type AgentEntityRef,
  type AgentMessageState,
  type AgentReasoningState,
  type AgentState,
  type AgentToolCallState,
  createEmptyAgentState,
} from '../../machines/agentState';
import { getAgentEntityKey } from '../../protocol/getAgentEntityKey';

// AgentStates written by hand, record by record, for converters that read AgentState: the
// records are in session s1 and completed unless `extra` says otherwise.

/** One record of a hand-built AgentState, with the container it goes in. */
export type EntityRecord =
  | { kind: 'message'; entity: AgentMessageState }
  | { kind: 'reasoning'; entity: AgentReasoningState }
  | { kind: 'toolCall'; entity: AgentToolCallState };

const base = (runId: string, id: string, sessionId: string) => ({
  id,
  key: getAgentEntityKey(runId, id),
  runId,
  sessionId,
  createdAt: 0,
  updatedAt: 0,
});

export const message = (
  runId: string,
  id: string,
  role: AgentMessageState['role'],
  content: AgentMessageState['content'],
  extra: Partial<AgentMessageState> = {},
): EntityRecord => ({
  kind: 'message',
  entity: { ...base(runId, id, extra.sessionId ?? 's1'), role, content, status: 'completed', ...extra },
});

export const toolCall = (
  runId: string,
  id: string,
  status: AgentToolCallState['status'],
  extra: Partial<AgentToolCallState> = {},
): EntityRecord => ({
  kind: 'toolCall',
  entity: {
    ...base(runId, id, extra.sessionId ?? 's1'),
    name: 'get_weather',
    arguments: '{"city":"Paris"}',
    parsedArguments: { city: 'Paris' },
    status,
    attempt: 1,
    ...extra,
  },
});

export const reasoning = (
  runId: string,
  id: string,
  content: string,
  extra: Partial<AgentReasoningState> = {},
): EntityRecord => ({
  kind: 'reasoning',
  entity: { ...base(runId, id, extra.sessionId ?? 's1'), redacted: false, content, status: 'completed', ...extra },
});

/** An AgentState holding these records, in this arrival order. */
export function stateOf(...records: EntityRecord[]): AgentState {
  const state = createEmptyAgentState();
  for (const { kind, entity } of records) {
    const container = { message: state.messages, reasoning: state.reasoning, toolCall: state.toolCalls }[kind];
    (container as Record<string, unknown>)[entity.key] = entity;
    state.order.push({ kind, key: entity.key } satisfies AgentEntityRef);
  }
  return state;
}
