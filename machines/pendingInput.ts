import { getAgentEntityKey } from '../protocol/getAgentEntityKey';
import type { AgentEntityKind, AgentEntityState, AgentRunState, AgentState } from './agentState';
import { getOwn } from './agentStateProjection';

/**
 * Whether an entity is one its completed run waits on: a tool call listed in
 * `pendingToolCallIds` that is awaiting execution or running (the application runs it),
 * or an approval listed in `pendingApprovalIds` that is still waiting.
 */
export function isPendingEntity(run: AgentRunState, kind: AgentEntityKind, entity: AgentEntityState): boolean {
  if (run.status !== 'completed') return false;
  if (kind === 'toolCall') {
    return (
      (entity.status === 'awaiting_execution' || entity.status === 'running') &&
      run.pendingToolCallIds?.includes(entity.id) === true
    );
  }
  if (kind === 'approval') return entity.status === 'waiting' && run.pendingApprovalIds?.includes(entity.id) === true;
  return false;
}

/** Whether a completed run still waits for input: some entity it listed as pending is still open. */
export function isWaitingForInput(state: AgentState, run: AgentRunState): boolean {
  if (run.status !== 'completed') return false;
  for (const toolCallId of run.pendingToolCallIds ?? []) {
    const toolCall = getOwn(state.toolCalls, getAgentEntityKey(run.id, toolCallId));
    if (toolCall !== undefined && isPendingEntity(run, 'toolCall', toolCall)) return true;
  }
  for (const approvalId of run.pendingApprovalIds ?? []) {
    const approval = getOwn(state.approvals, getAgentEntityKey(run.id, approvalId));
    if (approval !== undefined && isPendingEntity(run, 'approval', approval)) return true;
  }
  return false;
}
