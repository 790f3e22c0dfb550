import type { AgentRunState, AgentState } from '../machines/agentState';
import { getOwn } from '../machines/agentStateProjection';
import type { AgentCommand } from '../protocol/commandSchemas';
import type { AgentEvent } from '../protocol/eventSchemas';
import { getAgentEntityKey } from '../protocol/getAgentEntityKey';
import { MAX_ID_LENGTH } from './hostRequests';

/** The commands that answer a run waiting for input: an approval's decision, a client tool's result. */
export type AnswerCommand = Extract<AgentCommand, { type: 'approval.resolve' | 'tool.submit_result' }>;

export const isAnswerCommand = (command: AgentCommand): command is AnswerCommand =>
  command.type === 'approval.resolve' || command.type === 'tool.submit_result';

/**
 * The lease key of a run's continuation. Leases of runs and of these keys share the log's run
 * keys; a run id is at most `MAX_ID_LENGTH` characters and these keys are longer, so no run id
 * (`continuation:t1` included) is ever one of them.
 */
export function continuationKey(runId: string): string {
  return `${'continuation'.padEnd(MAX_ID_LENGTH + 1, ':')}${runId}`;
}

/**
 * The lease key of the event a waiting run gets after `sequence`: whoever holds it is the one
 * writing to the run (an answer, a client's tool result), so two instances never give two
 * events one sequence. It is never released: the next write is after another sequence, and
 * the lease of one whose writer died lapses.
 */
export function answerKey(runId: string, sequence: number): string {
  return `${'answer'.padEnd(MAX_ID_LENGTH + 1, ':')}${sequence}:${runId}`;
}

/** What the host notes on a run's `run.started`, in `meta.agentMachines`. */
interface HostMeta {
  agentMachines?: { hostProvider?: unknown; startsAfter?: unknown };
}

/**
 * `run.started` as the host writes it: its provider's name in `meta.agentMachines.hostProvider`
 * and, on a run that continues none, `startsAfter`: the session's cursor when the host started
 * it, before its `run.started` (none when the session was empty), so a reader of the message
 * the run begins reads the log from there, not from the session's start. Only the host writes
 * `startsAfter`: what a provider put there is dropped.
 */
export function withHostProvider(event: AgentEvent, provider: string, startsAfter?: string): AgentEvent {
  if (event.type !== 'run.started') return event;
  const own = event.meta?.agentMachines;
  const agentMachines: Record<string, unknown> =
    typeof own === 'object' && own !== null ? { ...own, hostProvider: provider } : { hostProvider: provider };
  delete agentMachines.startsAfter;
  if (startsAfter !== undefined && event.payload.continuesRunId === undefined) agentMachines.startsAfter = startsAfter;
  return { ...event, meta: { ...event.meta, agentMachines } };
}

/** Where the log was before the run's `run.started`, as the host noted it on a run that continues none. */
export function startsAfterOf(run: AgentRunState): string | undefined {
  const cursor = (run.meta as HostMeta | undefined)?.agentMachines?.startsAfter;
  return typeof cursor === 'string' ? cursor : undefined;
}

/** The name of the host provider that ran a run, as its `run.started` said. */
export function hostProviderOf(run: AgentRunState): string | undefined {
  const provider = (run.meta as HostMeta | undefined)?.agentMachines?.hostProvider;
  return typeof provider === 'string' ? provider : undefined;
}

/** Whether a run ended listing input it waits for (whether or not all of it came since). */
export function endedWaiting(run: AgentRunState): boolean {
  return (
    run.status === 'completed' && (run.pendingToolCallIds?.length ?? 0) + (run.pendingApprovalIds?.length ?? 0) > 0
  );
}

/** The newest run that continues `runId`, if any. */
export function continuationOf(state: AgentState, runId: string): AgentRunState | undefined {
  let newest: AgentRunState | undefined;
  for (const run of Object.values(state.runs)) {
    if (run.continuesRunId === runId && (newest === undefined || run.startedAt >= newest.startedAt)) newest = run;
  }
  return newest;
}

/**
 * What a waiting run still waits for besides `answered` (the approval or tool call a command
 * answers now): its approvals still waiting, and its tool calls still open that no approval
 * of the run is about (the run that continues it runs those once their approval is answered).
 */
export function missingInput(state: AgentState, run: AgentRunState, answered?: AnswerCommand): string[] {
  const answeredApproval = answered?.type === 'approval.resolve' ? answered.payload.approvalId : undefined;
  const answeredToolCall = answered?.type === 'tool.submit_result' ? answered.payload.toolCallId : undefined;
  const gated = new Set<string>();
  for (const approval of Object.values(state.approvals)) {
    if (approval.runId === run.id && approval.toolCallId !== undefined) gated.add(approval.toolCallId);
  }
  const missing: string[] = [];
  for (const approvalId of run.pendingApprovalIds ?? []) {
    const approval = getOwn(state.approvals, getAgentEntityKey(run.id, approvalId));
    if (approval?.status === 'waiting' && approvalId !== answeredApproval) missing.push(approvalId);
  }
  for (const toolCallId of run.pendingToolCallIds ?? []) {
    const call = getOwn(state.toolCalls, getAgentEntityKey(run.id, toolCallId));
    const open = call?.status === 'awaiting_execution' || call?.status === 'running';
    if (open && toolCallId !== answeredToolCall && !gated.has(toolCallId)) missing.push(toolCallId);
  }
  return missing;
}
