import type { AgentState } from '../machines/agentState';
import { getOwn } from '../machines/agentStateProjection';
import { isWaitingForInput } from '../machines/pendingInput';
import { selectPendingInput } from '../machines/selectors';
import type { AgentApprovalAnswer } from '../providers/AgentProvider';

/** An answer to an approval a run ended waiting on, and the command that gave it. */
export interface RecordedAnswer {
  answer: AgentApprovalAnswer;
  commandId: string;
}

/**
 * Whether a run that ended waiting for input has everything it waited for, so the
 * conversation can go on: each approval it waits on has an answer, and each tool call it
 * waits on has its result, unless an answered approval is about that tool call (the
 * runtime runs it after the answer: an AG-UI tool approval). A run that never waited, or
 * was already continued, is not ready.
 */
export function isReadyToContinue(
  state: AgentState,
  runId: string,
  answers: ReadonlyMap<string, RecordedAnswer> | undefined,
): boolean {
  const run = getOwn(state.runs, runId);
  if (run === undefined || run.status !== 'completed') return false;
  const listed = (run.pendingToolCallIds?.length ?? 0) + (run.pendingApprovalIds?.length ?? 0);
  if (listed === 0) return false;
  if (!isWaitingForInput(state, run)) return true;
  const pending = selectPendingInput(state, runId);
  const answeredToolCalls = new Set<string>();
  for (const approval of pending.approvals) {
    if (answers?.has(approval.id) !== true) return false;
    if (approval.toolCallId !== undefined) answeredToolCalls.add(approval.toolCallId);
  }
  return pending.toolCalls.every((toolCall) => answeredToolCalls.has(toolCall.id));
}

/**
 * The answers a continuation carries, in the order the run listed its approvals; with
 * `dismissRest`, every approval still waiting without an answer goes as `cancelled`.
 */
export function answersFor(
  state: AgentState,
  runId: string,
  answers: ReadonlyMap<string, RecordedAnswer> | undefined,
  dismissRest: boolean,
): AgentApprovalAnswer[] {
  const out: AgentApprovalAnswer[] = [];
  for (const approval of selectPendingInput(state, runId).approvals) {
    const recorded = answers?.get(approval.id);
    if (recorded !== undefined) out.push(recorded.answer);
    else if (dismissRest) out.push({ approvalId: approval.id, status: 'cancelled' });
  }
  return out;
}
