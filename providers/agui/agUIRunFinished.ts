import type { AgentEvent, AgentUsage } from '../../protocol/eventSchemas';
import type { AgentRunEmitter } from '../createAgentRunEmitter';
import type { AgUIContextState, AnyAgUIEvent } from './agUIContext';

/** AG-UI's usage entries (one per model) summed, the entries kept in `byModel`. */
export function usageOf(entries: unknown): AgentUsage | undefined {
  if (!Array.isArray(entries) || entries.length === 0) return undefined;
  const usage: AgentUsage = {};
  for (const field of ['inputTokens', 'outputTokens', 'totalTokens'] as const) {
    const values = entries
      .map((entry: Record<string, unknown>) => entry[field])
      .filter((value) => typeof value === 'number');
    if (values.length > 0) usage[field] = (values as number[]).reduce((sum, value) => sum + value, 0);
  }
  usage.byModel = entries;
  return usage;
}

/** RUN_FINISHED: completed with output, usage and pending tool calls; interrupts become waiting approvals; `cancelled` cancels. */
export function finishRun(event: AnyAgUIEvent, context: AgUIContextState): AgentEvent[] {
  const { events } = context;
  const outcome = event.outcome as
    | { type: 'success'; pendingToolCallIds?: string[] }
    | { type: 'interrupt'; interrupts: Array<Record<string, unknown>> }
    | { type: 'cancelled' }
    | undefined;
  const meta = { meta: { agui: { threadId: event.threadId, runId: event.runId } } };
  if (outcome?.type === 'cancelled') return events.close({ type: 'cancelled', reason: 'agui_cancelled' });
  const out: AgentEvent[] = [];
  const payload: {
    output?: unknown;
    usage?: AgentUsage;
    pendingToolCallIds?: string[];
    pendingApprovalIds?: string[];
  } = {};
  if (event.result !== undefined) payload.output = event.result;
  const usage = usageOf(event.usage);
  if (usage !== undefined) payload.usage = usage;
  if (outcome?.type === 'interrupt') {
    payload.pendingApprovalIds = [];
    for (const interrupt of outcome.interrupts) {
      const approval: Parameters<AgentRunEmitter['emit']>[1] & Record<string, unknown> = {
        approvalId: interrupt.id as string,
        description: (interrupt.message as string | undefined) ?? (interrupt.reason as string),
        data: { reason: interrupt.reason, responseSchema: interrupt.responseSchema, metadata: interrupt.metadata },
      };
      if (typeof interrupt.toolCallId === 'string') approval.toolCallId = interrupt.toolCallId;
      const expiresAt = typeof interrupt.expiresAt === 'string' ? Date.parse(interrupt.expiresAt) : Number.NaN;
      if (Number.isFinite(expiresAt)) approval.expiresAt = expiresAt;
      out.push(events.emit('approval.requested', approval as never));
      payload.pendingApprovalIds.push(interrupt.id as string);
    }
  }
  // AG-UI's own rule: the outcome lists pending tool calls, or they are the calls that got no result.
  const pending =
    outcome?.type === 'success' && outcome.pendingToolCallIds !== undefined
      ? outcome.pendingToolCallIds
      : context.toolCalls.filter((id) => !context.toolResults.has(id) && events.tracker.isOpen('tool', id));
  if (pending.length > 0) payload.pendingToolCallIds = pending;
  out.push(events.emit('run.completed', payload, meta));
  return out;
}
