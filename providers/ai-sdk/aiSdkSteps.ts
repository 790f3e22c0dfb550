import type { AgentEvent } from '../../protocol/eventSchemas';
import { type AISDKContext, emptyStep } from './aiSdkContext';
import { aiSdkMeta } from './aiSdkMeta';

/**
 * Completes the text and reasoning parts still open: a `finish-step` or `finish` ends them
 * (the `ai` package stops appending to them then, and a later `text-start` may reuse the id).
 */
export function completeOpenParts(context: AISDKContext): AgentEvent[] {
  const out: AgentEvent[] = [];
  for (const messageId of context.openTexts.values()) {
    out.push(context.events.emit('message.completed', { messageId }));
  }
  for (const reasoningId of context.openReasoning.values()) {
    out.push(context.events.emit('reasoning.completed', { reasoningId }));
  }
  context.openTexts.clear();
  context.openReasoning.clear();
  return out;
}

/** `start-step`: a task of its own (`step-1`, `step-2`...), as AG-UI's steps are. */
export function startStep(context: AISDKContext): AgentEvent[] {
  context.stepCount += 1;
  const taskId = `step-${context.stepCount}`;
  const out = context.step.taskId === undefined ? [] : finishStep(context);
  context.step = emptyStep(taskId);
  out.push(context.events.emit('task.created', { taskId, title: `Step ${context.stepCount}` }, aiSdkMeta(context)));
  return out;
}

/** `finish-step`: the step's open parts complete, and so does its task. */
export function finishStep(context: AISDKContext): AgentEvent[] {
  const out = completeOpenParts(context);
  const { taskId } = context.step;
  if (taskId !== undefined) out.push(context.events.emit('task.completed', { taskId }));
  context.step = emptyStep(undefined);
  return out;
}

/**
 * `reset-step` (`ai` 7): the step's content is dropped, as the protocol says, and the step
 * streams again. Its parts still open are cancelled (reason `reset_step`), its tool calls
 * no longer hold the run, and an `ai-sdk.reset-step` record lists every entity the step had
 * streamed, finished ones too (AgentState keeps them; `toAISDKMessages` leaves them out).
 */
export function resetStep(context: AISDKContext): AgentEvent[] {
  const { events, step } = context;
  const reason = 'reset_step';
  const out: AgentEvent[] = [];
  for (const [wireId, messageId] of context.openTexts) {
    if (step.messageIds.includes(messageId)) {
      out.push(events.emit('message.cancelled', { messageId, reason }));
      context.openTexts.delete(wireId);
    }
  }
  for (const [wireId, reasoningId] of context.openReasoning) {
    if (step.reasoningIds.includes(reasoningId)) {
      out.push(events.emit('reasoning.cancelled', { reasoningId, reason }));
      context.openReasoning.delete(wireId);
    }
  }
  for (const toolCallId of step.toolCallIds) {
    const toolCall = context.toolCalls.get(toolCallId);
    if (toolCall === undefined) continue;
    context.toolCalls.delete(toolCallId);
    if (!toolCall.settled) out.push(events.emit('tool.cancelled', { toolCallId, reason }));
  }
  for (const approvalId of step.approvalIds) context.openApprovals.delete(approvalId);
  const { taskId, messageIds, reasoningIds, toolCallIds, artifactIds, activityIds, approvalIds } = step;
  const data: Record<string, unknown> = {
    messageIds,
    reasoningIds,
    toolCallIds,
    artifactIds,
    activityIds,
    approvalIds,
  };
  if (taskId !== undefined) data.taskId = taskId;
  out.push(events.emit('extension.emitted', { name: 'ai-sdk.reset-step', data }, aiSdkMeta(context)));
  context.step = emptyStep(taskId);
  return out;
}
