import type { AgentState, AgentToolCallState } from '../../machines/agentState';
import type { AgentErrorInfo } from '../../protocol/eventSchemas';
import { getAgentEntityKey } from '../../protocol/getAgentEntityKey';

/** A tool call result the client settled: what the host writes to the waiting run before continuing it. */
export interface AgentHostToolResult {
  toolCallId: string;
  result?: unknown;
  error?: AgentErrorInfo;
  /** When the client settled it: the host's event carries the same timestamp. */
  timestamp: number;
  /** The `tool.submit_result` command that settled it on the client. */
  commandId?: string;
}

/**
 * The results the client's runtime settled for the tool calls a waiting run left to it
 * (`tool.completed`/`tool.failed` it made in its own store), read from the conversation's
 * history: the host's log has not seen them, and the continuing run's request needs them.
 */
export function clientToolResults(history: AgentState | undefined, runId: string): AgentHostToolResult[] {
  const run = history?.runs[runId];
  if (history === undefined || run === undefined) return [];
  const settled: Array<{ call: AgentToolCallState; result: AgentHostToolResult }> = [];
  for (const toolCallId of run.pendingToolCallIds ?? []) {
    const call = history.toolCalls[getAgentEntityKey(runId, toolCallId)];
    if (call === undefined || (call.status !== 'completed' && call.status !== 'failed')) continue;
    if (call.status === 'failed' && call.error === undefined) continue;
    const result: AgentHostToolResult = { toolCallId, timestamp: call.updatedAt };
    if (call.status === 'failed' && call.error !== undefined) result.error = call.error;
    else if (call.result !== undefined) result.result = call.result;
    const commandId = (call.meta?.agentMachines as { commandId?: unknown } | undefined)?.commandId;
    if (typeof commandId === 'string') result.commandId = commandId;
    settled.push({ call, result });
  }
  // In the order the client settled them, so the host's events take the same sequences.
  return settled.sort((a, b) => a.call.updatedAt - b.call.updatedAt).map(({ result }) => result);
}
