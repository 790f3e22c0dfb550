import type { AgentEvent } from '../../protocol/eventSchemas';
import type { AISDKContext } from './aiSdkContext';
import { aiSdkMeta } from './aiSdkMeta';
import { completeOpenParts } from './aiSdkSteps';

/** The error a run fails with when its stream ends before `finish`, `abort` or `error` said how it ended. */
export const AI_SDK_INCOMPLETE_STREAM = {
  message: 'The AI SDK UI message stream ended without a finish, abort or error chunk',
  code: 'missing_finish',
};

/**
 * Ends the run once the stream is over (`[DONE]`, or the body ended): cancelled after an
 * `abort`, failed after an `error` (whatever followed it), completed after a `finish`. A
 * completed run lists the tool calls whose input is complete and that nothing settled
 * (client tools, and tools waiting on an approval) as `pendingToolCallIds`, and the
 * approvals it requested as `pendingApprovalIds`: it waits for them (a `tool-calls` finish).
 * With none of the three, nothing: the run fails as `AI_SDK_INCOMPLETE_STREAM`.
 */
export function endAISDKRun(context: AISDKContext): AgentEvent[] {
  const { events, outcome } = context;
  if (events.tracker.hasEnded) return [];
  if (outcome?.type === 'aborted') return events.close({ type: 'cancelled', reason: outcome.reason ?? 'aborted' });
  if (context.failure !== undefined) return events.close({ type: 'failed', error: context.failure });
  if (outcome === undefined) return [];
  const out = completeOpenParts(context);
  const { taskId } = context.step;
  if (taskId !== undefined) out.push(events.emit('task.completed', { taskId }));
  const pendingToolCallIds: string[] = [];
  for (const [toolCallId, toolCall] of context.toolCalls) {
    if (toolCall.inputComplete && !toolCall.settled) pendingToolCallIds.push(toolCallId);
  }
  const pendingApprovalIds = [...context.openApprovals];
  const payload: { pendingToolCallIds?: string[]; pendingApprovalIds?: string[] } = {};
  if (pendingToolCallIds.length > 0) payload.pendingToolCallIds = pendingToolCallIds;
  if (pendingApprovalIds.length > 0) payload.pendingApprovalIds = pendingApprovalIds;
  out.push(events.emit('run.completed', payload, aiSdkMeta(context, { finishReason: outcome.finishReason })));
  return out;
}
