import { createAgentEventFactory } from '../protocol/createAgentEventFactory';
import type { AgentErrorInfo, AgentEvent } from '../protocol/eventSchemas';

export interface ClientToolResultEventOptions {
  sessionId: string;
  /** The run that ended waiting on the tool call. */
  runId: string;
  /** The run's last sequence: the event comes right after it. */
  afterSequence: number;
  timestamp: number;
  toolCallId: string;
  result?: unknown;
  /** The tool failed: the event is `tool.failed`, not `tool.completed`. */
  error?: AgentErrorInfo | undefined;
  /** The `tool.submit_result` command that carried the result, when one did. */
  commandId?: string | undefined;
}

/**
 * The event that settles a tool call the application executed for a run that ended waiting
 * on it: `tool.completed` (or `tool.failed`) of that run, marked `executedBy: 'client'`. Its id
 * comes from the tool call's, so a host that writes the same result to its log (from a
 * continuation's `toolResults`) writes the very event the client applied, and a client that
 * reads it back absorbs it instead of applying it twice.
 */
export function createClientToolResultEvent(options: ClientToolResultEventOptions): AgentEvent {
  const { toolCallId, result, error } = options;
  const events = createAgentEventFactory({
    sessionId: options.sessionId,
    runId: options.runId,
    initialSequence: options.afterSequence,
    now: () => options.timestamp,
    createEventId: () => `client-result:${toolCallId}`,
  });
  const agentMachines: Record<string, unknown> = { executedBy: 'client' };
  if (options.commandId !== undefined) agentMachines.commandId = options.commandId;
  const meta = { agentMachines };
  return error !== undefined
    ? events.create('tool.failed', { toolCallId, error }, { meta })
    : events.create('tool.completed', result === undefined ? { toolCallId } : { toolCallId, result }, { meta });
}
