import { ThoughtChain, type ThoughtChainItemType } from '@ant-design/x';
import { memo } from 'react';
import type { AgentApprovalState, AgentRunState, AgentState, AgentToolCallState } from '../../../machines/agentState';
import { CLIENT_TOOLS } from './clientTools';

/** A value in words: `city: Paris, celsius: 14` rather than JSON. */
export function inWords(value: unknown): string {
  if (value === undefined || value === null) return 'nothing';
  if (typeof value === 'string') return value;
  if (typeof value !== 'object') return String(value);
  if (Array.isArray(value)) return value.map(inWords).join(', ');
  return Object.entries(value)
    .map(([key, item]) => `${key}: ${typeof item === 'object' && item !== null ? `(${inWords(item)})` : inWords(item)}`)
    .join(', ');
}

function toolCallItem(call: AgentToolCallState): ThoughtChainItemType {
  const asked = call.parsedArguments === undefined ? call.arguments : inWords(call.parsedArguments);
  const title = `${call.name}(${asked})`;
  const item = { key: `tool:${call.key}`, title };
  switch (call.status) {
    case 'completed':
      return { ...item, status: 'success', description: `Answered: ${inWords(call.result)}` };
    case 'failed':
      return {
        ...item,
        status: 'error',
        description: `Failed: ${call.error?.message ?? 'no reason given'}${call.retriedBy === undefined ? '' : ' (retried)'}`,
      };
    case 'cancelled':
      return {
        ...item,
        status: 'abort',
        description: `Cancelled${call.reason === undefined ? '' : `: ${reasonText(call.reason)}`}`,
      };
    case 'awaiting_execution':
      return { ...item, status: 'loading', description: 'Waiting to be run' };
    default:
      return { ...item, status: 'loading', description: 'Running' };
  }
}

const DECISIONS: Record<NonNullable<AgentApprovalState['decision']>, string> = {
  approved: 'You approved it.',
  modified: 'You approved it, edited',
  rejected: 'You rejected it.',
  expired: 'It expired before you decided.',
};

function approvalItem(approval: AgentApprovalState): ThoughtChainItemType {
  const title = `Asked: ${approval.description ?? 'may it go on?'}`;
  const item = { key: `approval:${approval.key}`, title };
  if (approval.status === 'waiting') return { ...item, status: 'loading', description: 'Waiting for your decision' };
  if (approval.status === 'cancelled') {
    return {
      ...item,
      status: 'abort',
      description: `Withdrawn${approval.reason === undefined ? '' : `: ${reasonText(approval.reason)}`}`,
    };
  }
  const decision = approval.decision ?? 'approved';
  const description =
    decision === 'modified' ? `${DECISIONS.modified} (${inWords(approval.resolvedData)}).` : DECISIONS[decision];
  return { ...item, status: decision === 'rejected' || decision === 'expired' ? 'error' : 'success', description };
}

function reasonText(reason: string): string {
  return reason === 'run_terminated' ? 'the run ended first' : reason;
}

/** How the run ended, in words, when that is worth a line: not when it simply completed. */
function outcomeItem(
  run: AgentRunState,
  stranded: boolean,
  rejected: boolean,
  pageTools: boolean,
): ThoughtChainItemType | undefined {
  const item = { key: `run:${run.id}` };
  if (stranded) {
    return {
      ...item,
      status: 'error',
      title: 'Interrupted by the reload',
      description: 'This run cannot be resumed: its stream ended with the page.',
    };
  }
  if (run.status === 'cancelled') {
    return {
      ...item,
      status: 'abort',
      title: 'Run cancelled',
      description: run.reason === undefined ? undefined : reasonText(run.reason),
    };
  }
  if (run.status === 'failed') {
    return { ...item, status: 'error', title: 'Run failed', description: run.error?.message };
  }
  if (run.status === 'completed' && rejected) {
    return { ...item, status: 'abort', title: 'Run ended', description: 'Nothing was done after your rejection.' };
  }
  if (run.status === 'completed' && (run.pendingApprovalIds?.length ?? 0) > 0) {
    return { ...item, status: 'success', title: 'Run paused for your approval' };
  }
  if (run.status === 'completed' && (run.pendingToolCallIds?.length ?? 0) > 0) {
    const title = pageTools ? 'Run paused for tools this page runs' : 'Run paused for tools the application runs';
    return { ...item, status: 'success', title };
  }
  return undefined;
}

/** The run's tool calls, approvals and how it ended, in arrival order; `[]` when there is nothing to say. */
export function runActivityItems(state: AgentState, runId: string, stranded: boolean): ThoughtChainItemType[] {
  const items: ThoughtChainItemType[] = [];
  let rejected = false;
  let pageTools = false;
  for (const ref of state.order) {
    if (ref.kind === 'toolCall') {
      const call = state.toolCalls[ref.key];
      if (call?.runId !== runId) continue;
      items.push(toolCallItem(call));
      // A call the run left to the application, one of the tools this page runs.
      if (state.runs[runId]?.pendingToolCallIds?.includes(call.id) && CLIENT_TOOLS[call.name]) pageTools = true;
    } else if (ref.kind === 'approval') {
      const approval = state.approvals[ref.key];
      if (approval?.runId !== runId) continue;
      items.push(approvalItem(approval));
      if (approval.decision === 'rejected') rejected = true;
    }
  }
  const run = state.runs[runId];
  const outcome = run === undefined ? undefined : outcomeItem(run, stranded, rejected, pageTools);
  if (outcome !== undefined) items.push(outcome);
  return items;
}

interface RunActivityProps {
  items: ThoughtChainItemType[];
  runId: string;
}

/**
 * A run's work in the thread, after its messages: what it called, what it asked, how it ended.
 * Its items are plain text, made anew at each render: it renders again only when they change,
 * not at each streamed token of the thread.
 */
export const RunActivity = memo(
  RunActivityChain,
  (before, after) => before.runId === after.runId && JSON.stringify(before.items) === JSON.stringify(after.items),
);

function RunActivityChain({ items, runId }: RunActivityProps) {
  return (
    <div data-testid="run-activity" data-run-id={runId}>
      <ThoughtChain
        items={items.map((item) => ({
          ...item,
          title: <span data-testid="activity-title">{item.title}</span>,
          description:
            item.description === undefined ? undefined : (
              <span data-testid="activity-description">{item.description}</span>
            ),
        }))}
      />
    </div>
  );
}
