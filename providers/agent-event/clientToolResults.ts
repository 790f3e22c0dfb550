import type { AgentState } from '../../machines/agentState';
import type { AgentErrorInfo } from '../../protocol/eventSchemas';
import { getAgentEntityKey } from '../../protocol/getAgentEntityKey';

/** A tool call result the client settled: what the host writes to the waiting run before continuing it. */
export interface AgentHostToolResult {
  toolCallId: string;
  result?: unknown;
  error?: AgentErrorInfo;
}

/**
 * The results the client's runtime settled for the tool calls a waiting run left to it
 * (`tool.completed`/`tool.failed` it made in its own store), read from the conversation's
 * history: the host's log has not seen them, and the continuing run's request needs them.
 */
export function clientToolResults(history: AgentState | undefined, runId: string): AgentHostToolResult[] {
  const run = history?.runs[runId];
  if (history === undefined || run === undefined) return [];
  const results: AgentHostToolResult[] = [];
  for (const toolCallId of run.pendingToolCallIds ?? []) {
    const call = history.toolCalls[getAgentEntityKey(runId, toolCallId)];
    if (call?.status === 'completed') {
      results.push(call.result === undefined ? { toolCallId } : { toolCallId, result: call.result });
    } else if (call?.status === 'failed' && call.error !== undefined) {
      results.push({ toolCallId, error: call.error });
    }
  }
  return results;
}
