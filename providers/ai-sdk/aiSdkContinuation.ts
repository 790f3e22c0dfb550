import type { AgentEvent } from '../../protocol/eventSchemas';
import { AgentCommandError } from '../AgentCommandError';
import type { AgentApprovalAnswer } from '../AgentProvider';
import type { AISDKContext } from './aiSdkContext';

/**
 * Refuses answers the protocol cannot carry: a tool approval answers `approved: true` or
 * `false` (with a `reason`), and has no edited input, so `modified` fails the run before
 * anything is sent, as an `AgentCommandError` of code `unsupported_capability`.
 */
export function checkAnswers(answers: readonly AgentApprovalAnswer[]): void {
  for (const answer of answers) {
    if (answer.status === 'resolved' && answer.decision === 'modified') {
      throw new AgentCommandError(
        'unsupported_capability',
        `Approval "${answer.approvalId}" was answered "modified": the AI SDK UI message stream has no edited tool input; approve or reject it`,
      );
    }
  }
}

/** What the AI SDK's `approval` of a tool part says for an answer: approved or not, and the reason given. */
export function approvalResponseOf(answer: AgentApprovalAnswer): { approved: boolean; reason?: string } {
  const approved = answer.status === 'resolved' && (answer.decision ?? 'approved') === 'approved';
  const reason = reasonOf(answer.data);
  return reason === undefined ? { approved } : { approved, reason };
}

/** A reason the user gave: `data` as a string, or its `reason` field. */
function reasonOf(data: unknown): string | undefined {
  if (typeof data === 'string') return data;
  if (typeof data === 'object' && data !== null) {
    const reason = (data as { reason?: unknown }).reason;
    if (typeof reason === 'string') return reason;
  }
  return undefined;
}

/**
 * The continuation's answers as `approval.resolved`, once the stream that took them sent
 * its first chunk; a stream that opens with `error` refused them, and they stay waiting.
 */
export function confirmAnswers(context: AISDKContext, refused: boolean): AgentEvent[] {
  const answers = context.unconfirmedAnswers;
  context.unconfirmedAnswers = [];
  if (refused) return [];
  return answers.map((answer) => {
    const decision = approvalResponseOf(answer).approved ? 'approved' : 'rejected';
    const payload: { approvalId: string; decision: typeof decision; data?: unknown } = {
      approvalId: answer.approvalId,
      decision,
    };
    if (answer.data !== undefined) payload.data = answer.data;
    return context.events.emit('approval.resolved', payload, {
      meta: { aiSdk: { resolvedBy: 'continuation', answerStatus: answer.status } },
    });
  });
}
