import type { AgentApprovalState, AgentState, AgentToolCallState } from '../machines/agentState';
import { getOwn } from '../machines/agentStateProjection';
import { isWaitingForInput } from '../machines/pendingInput';
import { commandEntityId } from '../machines/store/storeCommands';
import type { AgentCommand } from '../protocol/commandSchemas';
import { getAgentEntityKey } from '../protocol/getAgentEntityKey';

function approvalRefusal(approval: AgentApprovalState, command: AgentCommand & { type: 'approval.resolve' }): string {
  const name = `approval "${approval.id}"`;
  if (approval.status !== 'waiting') {
    const decision = approval.decision === undefined ? '' : ` (${approval.decision})`;
    return `${name} is ${approval.status}${decision}, not waiting`;
  }
  const { expectedVersion, decision } = command.payload;
  if (expectedVersion !== undefined && expectedVersion !== approval.version) {
    return `${name} is at version ${String(approval.version)}, not the expected ${String(expectedVersion)}`;
  }
  if (decision === 'modified' && approval.editable === false) return `${name} may not be modified (editable: false)`;
  return `a decision on ${name} is already submitting`;
}

function toolCallRefusal(toolCall: AgentToolCallState, command: AgentCommand): string {
  const name = `tool call "${toolCall.id}"`;
  if (command.type === 'tool.retry') {
    if (toolCall.status !== 'failed') return `${name} is ${toolCall.status}, not failed`;
    if (toolCall.error?.retryable !== true) return `${name} failed without retryable: true`;
    if (toolCall.retriedBy !== undefined) return `${name} was already retried as "${toolCall.retriedBy}"`;
    return `a retry of ${name} is already submitting`;
  }
  if (toolCall.status !== 'awaiting_execution' && toolCall.status !== 'running') {
    return `${name} is ${toolCall.status}: it takes no result`;
  }
  return `a result for ${name} is already submitting`;
}

/**
 * Why the machines refused a command, in words, read from AgentState after `store.submit`
 * said no. It only names the refusal; the machines decide it.
 */
export function explainCommandRefusal(state: AgentState, command: AgentCommand): string {
  const run = getOwn(state.runs, command.runId);
  if (run === undefined || run.sessionId !== command.sessionId) {
    return `run "${command.runId}" is not a run of session "${command.sessionId}"`;
  }
  const waiting = isWaitingForInput(state, run);
  if (run.status !== 'running' && !waiting) return `run "${run.id}" is ${run.status}: an ended run takes no commands`;
  const entityId = commandEntityId(command);
  if (command.type === 'run.cancel') {
    return waiting
      ? `run "${run.id}" has completed and waits for input: it cannot be cancelled`
      : `a cancel of run "${run.id}" is already submitting`;
  }
  const key = getAgentEntityKey(run.id, entityId);
  if (command.type === 'approval.resolve') {
    const approval = getOwn(state.approvals, key);
    if (approval === undefined) return `approval "${entityId}" does not exist in run "${run.id}"`;
    if (waiting && approval.status === 'waiting' && !run.pendingApprovalIds?.includes(entityId)) {
      return `run "${run.id}" waits for input, and approval "${entityId}" is not one it listed`;
    }
    return approvalRefusal(approval, command);
  }
  const toolCall = getOwn(state.toolCalls, key);
  if (toolCall === undefined) return `tool call "${entityId}" does not exist in run "${run.id}"`;
  if (waiting && command.type === 'tool.retry') {
    return `run "${run.id}" has completed and waits for input: a failed tool call cannot be retried`;
  }
  return toolCallRefusal(toolCall, command);
}
