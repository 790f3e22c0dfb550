import { useEffect, useRef } from 'react';
import type { AgentState, AgentToolCallState } from '../../../machines/agentState';
import { selectPendingInput } from '../../../machines/selectors';
import type { AgentActions } from '../../../runtime/createXChatRuntime';

const CELSIUS: Record<string, number> = { paris: 14, rome: 21, berlin: 9, tokyo: 18 };

/** The tools this page runs itself when a run ends waiting for them. */
export const CLIENT_TOOLS: Record<string, (args: Record<string, unknown>) => unknown> = {
  get_weather: ({ city }) => ({ city, celsius: CELSIUS[String(city).toLowerCase()] ?? 17 }),
  send_email: ({ to }) => ({ sent: true, to }),
};

/**
 * Whether this page runs a tool call: one of its client tools, left pending by a run that
 * ended waiting for it, and not a call an approval still waits on (the agent runs that one
 * after the answer).
 */
export function isRunByThisPage(state: AgentState, call: AgentToolCallState): boolean {
  if (CLIENT_TOOLS[call.name] === undefined) return false;
  const pending = selectPendingInput(state, call.runId);
  return (
    pending.toolCalls.some((candidate) => candidate.id === call.id) &&
    !pending.approvals.some((approval) => approval.toolCallId === call.id)
  );
}

/**
 * Runs the client tools of every run that ended waiting for them and submits the results;
 * once all are in, the runtime continues the conversation. A tool call an approval is about
 * is left alone: the agent runs it after the answer (an AG-UI interrupt).
 */
export function useClientTools(
  agentState: AgentState,
  agentActions: AgentActions,
  onError: (error: unknown) => void,
): void {
  const submitted = useRef(new Set<string>());
  useEffect(() => {
    for (const run of Object.values(agentState.runs)) {
      if (run.status !== 'completed') continue;
      const pending = selectPendingInput(agentState, run.id);
      const guarded = new Set(pending.approvals.map((approval) => approval.toolCallId));
      for (const call of pending.toolCalls) {
        const tool = CLIENT_TOOLS[call.name];
        if (tool === undefined || guarded.has(call.id) || submitted.current.has(call.key)) continue;
        submitted.current.add(call.key);
        const args = (call.parsedArguments ?? {}) as Record<string, unknown>;
        agentActions.submitToolResult({ runId: run.id, toolCallId: call.id, result: tool(args) }).catch(onError);
      }
    }
  }, [agentState, agentActions, onError]);
}
