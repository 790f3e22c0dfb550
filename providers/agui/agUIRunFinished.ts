import type { RunFinishedEvent, TokenUsage } from '@ag-ui/core';
import type { AgentEvent, AgentEventPayloadMap, AgentUsage } from '../../protocol/eventSchemas';
import type { AgUIContextState } from './agUIContext';
import { AgUIEventError } from './parseAgUIEvent';

/** Our usage counters and the AG-UI `TokenUsage` fields they sum. */
const USAGE_FIELDS: ReadonlyArray<[keyof AgentUsage, Exclude<keyof TokenUsage, 'provider' | 'model'>]> = [
  ['inputTokens', 'inputTokens'],
  ['outputTokens', 'outputTokens'],
  ['totalTokens', 'totalTokens'],
  ['reasoningTokens', 'reasoningTokens'],
  ['cacheReadTokens', 'cachedInputTokens'],
  ['cacheWriteTokens', 'cacheWriteInputTokens'],
];

function count(value: number | undefined): number | undefined {
  return value !== undefined && Number.isSafeInteger(value) && value >= 0 ? value : undefined;
}

/** An entry's total: its own, or input plus output when it gives both, so the sum covers every entry. */
function entryTotal(entry: TokenUsage): number | undefined {
  const total = count(entry.totalTokens);
  if (total !== undefined) return total;
  const input = count(entry.inputTokens);
  const output = count(entry.outputTokens);
  return input !== undefined && output !== undefined ? input + output : undefined;
}

/**
 * AG-UI's usage entries (one per provider and model) summed into our counters; a counter
 * no entry reports stays absent. The entries themselves go to the event's `meta.agui.usage`.
 */
export function usageOf(entries: readonly TokenUsage[]): AgentUsage | undefined {
  const result: AgentUsage = {};
  for (const [field, wireField] of USAGE_FIELDS) {
    let sum: number | undefined;
    for (const entry of entries) {
      const value = field === 'totalTokens' ? entryTotal(entry) : count(entry[wireField]);
      if (value !== undefined) sum = (sum ?? 0) + value;
    }
    if (sum !== undefined) result[field] = sum;
  }
  return Object.keys(result).length > 0 ? result : undefined;
}

/** The named fields that are present: an event holds no `undefined`, which JSON cannot carry. */
function definedFields(source: Record<string, unknown>, fields: readonly string[]): Record<string, unknown> {
  const result: Record<string, unknown> = {};
  for (const field of fields) if (source[field] !== undefined) result[field] = source[field];
  return result;
}

/** RUN_FINISHED: completed with output, usage and pending tool calls; interrupts become waiting approvals; `cancelled` cancels. */
export function finishRun(event: RunFinishedEvent, context: AgUIContextState): AgentEvent[] {
  const { events } = context;
  const { outcome } = event;
  const agui: Record<string, unknown> = { threadId: event.threadId, runId: event.runId };
  if (event.usage !== undefined) agui.usage = event.usage;
  const meta = { meta: { agui } };
  if (outcome?.type === 'cancelled') return events.close({ type: 'cancelled', reason: 'agui_cancelled' });
  // Checked before anything is emitted: an id names the entity a later answer refers to.
  if (outcome?.type === 'interrupt' && outcome.interrupts.some((interrupt) => interrupt.id === '')) {
    throw new AgUIEventError('RUN_FINISHED', 'outcome.interrupts.id', 'an interrupt id is empty', event);
  }
  if (outcome?.type === 'success' && outcome.pendingToolCallIds?.includes('')) {
    throw new AgUIEventError('RUN_FINISHED', 'outcome.pendingToolCallIds', 'a tool call id is empty', event);
  }
  const out: AgentEvent[] = [];
  const payload: {
    output?: unknown;
    usage?: AgentUsage;
    pendingToolCallIds?: string[];
    pendingApprovalIds?: string[];
  } = {};
  if (event.result !== undefined) payload.output = event.result;
  const usage = event.usage === undefined ? undefined : usageOf(event.usage);
  if (usage !== undefined) payload.usage = usage;
  if (outcome?.type === 'interrupt') {
    payload.pendingApprovalIds = [];
    for (const interrupt of outcome.interrupts) {
      const approval: AgentEventPayloadMap['approval.requested'] = {
        approvalId: interrupt.id,
        description: interrupt.message ?? interrupt.reason,
        data: definedFields(interrupt, ['reason', 'responseSchema', 'metadata']),
      };
      if (typeof interrupt.toolCallId === 'string') approval.toolCallId = interrupt.toolCallId;
      const expiresAt = typeof interrupt.expiresAt === 'string' ? Date.parse(interrupt.expiresAt) : Number.NaN;
      if (Number.isFinite(expiresAt)) approval.expiresAt = expiresAt;
      out.push(events.emit('approval.requested', approval));
      payload.pendingApprovalIds.push(interrupt.id);
    }
  }
  // AG-UI's own rule: the outcome lists pending tool calls, or they are the calls that got no result.
  const pending =
    outcome?.type === 'success' && outcome.pendingToolCallIds !== undefined
      ? outcome.pendingToolCallIds
      : context.toolCalls.filter((id) => !context.toolResults.has(id) && events.tracker.isOpen('toolCall', id));
  if (pending.length > 0) payload.pendingToolCallIds = pending;
  out.push(events.emit('run.completed', payload, meta));
  return out;
}
