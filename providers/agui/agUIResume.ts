import type { AGUIEvent, ResumeEntry } from '@ag-ui/core';
import type { AgentEvent } from '../../protocol/eventSchemas';
import type { AgentApprovalAnswer } from '../AgentProvider';
import type { AgUIContextState } from './agUIContext';

/**
 * What a resume entry carries to the agent as its `payload`. A `resolved` answer carries the
 * decision (`approved` when the answer gives none) and the answer's `data` when it has any;
 * a `cancelled` one carries only its `data`, when it has any, and otherwise no payload.
 *
 * @example
 * { interruptId: 'int-1', status: 'resolved', payload: { decision: 'modified', data: { glob: '*.tmp' } } }
 */
export interface AgUIResumePayload {
  decision?: 'approved' | 'rejected' | 'modified';
  data?: unknown;
}

/** One AG-UI resume entry per answer, in the answers' order. */
export function resumeEntriesOf(answers: readonly AgentApprovalAnswer[]): ResumeEntry[] {
  return answers.map((answer) => {
    const entry: ResumeEntry = { interruptId: answer.approvalId, status: answer.status };
    const payload: AgUIResumePayload = {};
    if (answer.status === 'resolved') payload.decision = answer.decision ?? 'approved';
    if (answer.data !== undefined) payload.data = answer.data;
    if (Object.keys(payload).length > 0) entry.payload = payload;
    return entry;
  });
}

/**
 * The answers as `approval.resolved`, once the resumed stream confirms it took them: its
 * first event, RUN_STARTED or whatever comes first when the server sends none. The store
 * settles the continued run's approvals with them. A stream that opens with RUN_ERROR
 * refused the resume: the approvals stay waiting, to be answered again.
 */
export function confirmResume(event: AGUIEvent, context: AgUIContextState): AgentEvent[] {
  const answers = context.unconfirmedAnswers;
  context.unconfirmedAnswers = [];
  if (event.type === 'RUN_ERROR') return [];
  return answers.map((answer) => {
    const decision = answer.status === 'cancelled' ? 'rejected' : (answer.decision ?? 'approved');
    const payload: { approvalId: string; decision: typeof decision; data?: unknown } = {
      approvalId: answer.approvalId,
      decision,
    };
    if (answer.data !== undefined) payload.data = answer.data;
    return context.events.emit('approval.resolved', payload, {
      meta: { agui: { resolvedBy: 'resume', resumeStatus: answer.status } },
    });
  });
}
