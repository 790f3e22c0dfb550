import { getOwn } from '../../machines/agentStateProjection';
import type { AgentEvent } from '../../protocol/eventSchemas';
import { getAgentEntityKey } from '../../protocol/getAgentEntityKey';
import type { AgentApprovalAnswer } from '../AgentProvider';
import type { AgentRunEmitter } from '../createAgentRunEmitter';
import type { LocalAgentScript } from './localAgentChunks';
import type { LocalAgentTurn } from './localAgentTurn';

/** Whether an answer says no: rejected, or dismissed. */
function rejects(answer: AgentApprovalAnswer): boolean {
  return answer.status === 'cancelled' || answer.decision === 'rejected';
}

/** The step index in an approval id the player made (`approval-3`), if it is one. */
export function approvalStepIndexOf(approvalId: string): number | undefined {
  const index = /^approval-(\d+)$/.exec(approvalId)?.[1];
  return index === undefined ? undefined : Number(index);
}

/**
 * The step a script plays on from in a run that continues one that ended waiting: right
 * after the last approval the waiting run asked (a pending approval ends the run there);
 * the end (nothing more) when an answer rejects, or when the waiting run waited on no
 * approval (it played every step, leaving tool calls to the application). A run that
 * continues none starts at 0.
 *
 * @example
 * // Steps: text-0, approval-1 (left to the continuation), text-2: run 1 ends after approval-1.
 * localScriptResumePoint(script, turn); // 2 when approval-1 is approved, 3 when rejected
 */
export function localScriptResumePoint(script: LocalAgentScript, turn: LocalAgentTurn): number {
  const { continuation, history } = turn;
  if (continuation === undefined) return 0;
  const end = script.steps.length;
  if (continuation.approvals.some(rejects)) return end;
  const waiting = history === undefined ? undefined : getOwn(history.runs, continuation.runId);
  const asked = continuation.approvals.map((answer) => answer.approvalId);
  if (waiting !== undefined) {
    if ((waiting.pendingApprovalIds ?? []).length === 0) return end;
    for (const approval of Object.values(history?.approvals ?? {})) {
      if (approval.runId === waiting.id) asked.push(approval.id);
    }
  }
  let last = -1;
  for (const approvalId of asked) last = Math.max(last, approvalStepIndexOf(approvalId) ?? -1);
  return last < 0 ? end : Math.min(last + 1, end);
}

/**
 * A rejected (or dismissed) answer stops the script: the tool call its approval is about,
 * still left to the application in the waiting run, is cancelled by the continuing run.
 */
export function cancelRejectedToolCalls(events: AgentRunEmitter, turn: LocalAgentTurn): AgentEvent[] {
  const { continuation, history } = turn;
  if (continuation === undefined || history === undefined) return [];
  const waiting = getOwn(history.runs, continuation.runId);
  const out: AgentEvent[] = [];
  for (const answer of continuation.approvals) {
    if (!rejects(answer)) continue;
    const toolCallId = getOwn(history.approvals, getAgentEntityKey(continuation.runId, answer.approvalId))?.toolCallId;
    if (toolCallId === undefined || waiting?.pendingToolCallIds?.includes(toolCallId) !== true) continue;
    const status = getOwn(history.toolCalls, getAgentEntityKey(continuation.runId, toolCallId))?.status;
    if (status !== 'awaiting_execution' && status !== 'running') continue;
    out.push(events.emit('tool.cancelled', { toolCallId, reason: 'approval_rejected' }));
  }
  return out;
}
