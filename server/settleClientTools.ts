import type { AgentState } from '../machines/agentState';
import type { AgentEvent } from '../protocol/eventSchemas';
import { getAgentEntityKey } from '../protocol/getAgentEntityKey';
import { createClientToolResultEvent } from '../providers/clientToolResultEvent';
import { AgentHostError } from './AgentHostError';
import type { AgentHostRunRequest } from './hostRequests';

/**
 * The events that settle the tool calls a waiting run left to the client, from the results
 * a continuing run's request carries: `tool.completed` or `tool.failed` of the waiting run,
 * the very events the client's runtime applied (same ids, sequences, timestamps and meta),
 * so the host's log and the client's state agree. Each call must be one the run ended
 * waiting on and not settled yet; otherwise the request is refused, and nothing is written.
 */
export function settleClientTools(
  state: AgentState,
  sessionId: string,
  request: AgentHostRunRequest,
  now: () => number,
): AgentEvent[] {
  const continuation = request.continuation;
  const results = continuation?.toolResults;
  if (continuation === undefined || results === undefined || results.length === 0) return [];
  const runId = continuation.runId;
  const waiting = new Set(state.runs[runId]?.pendingToolCallIds ?? []);
  let sequence = state.lastSequenceByRun[runId] ?? 0;
  const settled: AgentEvent[] = [];
  for (const { toolCallId, result, error, timestamp, commandId } of results) {
    const call = state.toolCalls[getAgentEntityKey(runId, toolCallId)];
    if (!waiting.has(toolCallId) || call === undefined || call.status === 'completed' || call.status === 'failed') {
      throw new AgentHostError(
        'invalid_request',
        `Run "${runId}" does not wait on a result for tool call "${toolCallId}"`,
      );
    }
    waiting.delete(toolCallId);
    settled.push(
      createClientToolResultEvent({
        sessionId,
        runId,
        afterSequence: sequence,
        timestamp: timestamp ?? now(),
        toolCallId,
        result,
        error,
        commandId,
      }),
    );
    sequence += 1;
  }
  return settled;
}
