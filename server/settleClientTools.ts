import type { AgentState } from '../machines/agentState';
import { createAgentEventFactory } from '../protocol/createAgentEventFactory';
import type { AgentEvent } from '../protocol/eventSchemas';
import { getAgentEntityKey } from '../protocol/getAgentEntityKey';
import { AgentHostError } from './AgentHostError';
import type { AgentHostRunRequest } from './hostRequests';

/**
 * The events that settle the tool calls a waiting run left to the client, from the results
 * a continuing run's request carries: `tool.completed` or `tool.failed` of the waiting run,
 * as the client's runtime made them in its own store. Each call must be one the run ended
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
  const events = createAgentEventFactory({
    sessionId,
    runId,
    initialSequence: state.lastSequenceByRun[runId] ?? 0,
    now,
  });
  const meta = { agentstate: { executedBy: 'client' } };
  const settled: AgentEvent[] = [];
  for (const { toolCallId, result, error } of results) {
    const call = state.toolCalls[getAgentEntityKey(runId, toolCallId)];
    if (!waiting.has(toolCallId) || call === undefined || call.status === 'completed' || call.status === 'failed') {
      throw new AgentHostError(
        'invalid_request',
        `Run "${runId}" does not wait on a result for tool call "${toolCallId}"`,
      );
    }
    waiting.delete(toolCallId);
    settled.push(
      error !== undefined
        ? events.create('tool.failed', { toolCallId, error }, { meta })
        : events.create('tool.completed', result === undefined ? { toolCallId } : { toolCallId, result }, { meta }),
    );
  }
  return settled;
}
