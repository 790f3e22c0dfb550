import type { AgentApprovalState, AgentState, AgentToolCallState } from '../../machines/agentState';
import { getOwn } from '../../machines/agentStateProjection';
import type { AgentErrorInfo } from '../../protocol/eventSchemas';
import { getAgentEntityKey } from '../../protocol/getAgentEntityKey';
import type { AgentApprovalAnswer, AgentRunContinuation } from '../AgentProvider';
import { toAgentErrorInfo } from '../toAgentErrorInfo';
import type { AgentLoopChunk } from './agentStepEvents';
import type { AgentLoopConfig, AgentTurn } from './agentTurn';
import type { AgentTool } from './defineAgentTool';
import { executeAgentTool } from './executeAgentTool';
import { parseToolCallInput } from './parseToolCallInput';

type Push = (chunk: AgentLoopChunk) => void;

/** What a step's tool calls leave the run waiting for. */
export interface ToolCallsOutcome {
  /** Client tools, and tools waiting for their approval. */
  pendingToolCallIds: string[];
  pendingApprovalIds: string[];
}

/** A user's decision on a call: `approved` runs it, `modified` runs it with `data` as its input. */
interface Decision {
  decision: 'approved' | 'rejected' | 'modified' | 'expired';
  data?: unknown;
}

const failed = (push: Push, toolCallId: string, error: AgentErrorInfo) =>
  push({ kind: 'event', draft: { type: 'tool.failed', payload: { toolCallId, error } } });

/** The approval a run asks for before a gated tool runs; its id is derived from the call's. */
export const approvalIdOf = (toolCallId: string): string => `approval-${toolCallId}`;

/** The call's tool and its validated input; or the error the model is told instead. */
function checkToolCall(
  config: AgentLoopConfig,
  call: AgentToolCallState,
  decision: Decision | undefined,
): { tool: AgentTool; input: unknown } | { error: AgentErrorInfo } {
  const tool = config.tools.get(call.name);
  if (tool === undefined) {
    const names = [...config.tools.keys()].join(', ');
    return { error: { message: `There is no tool named ${call.name}; the tools are: ${names}`, code: 'unknown_tool' } };
  }
  const data = decision?.decision === 'modified' ? decision.data : undefined;
  const parsed = parseToolCallInput(tool, call, data);
  if (!parsed.success) return { error: parsed.error };
  return { tool, input: parsed.input };
}

/** Runs one tool: `tool.running`, then `tool.completed` or `tool.failed`; a cancelled call is left to the run's close. */
async function runTool(turn: AgentTurn, tool: AgentTool, toolCallId: string, input: unknown, push: Push) {
  const { signal } = turn.controller;
  if (signal.aborted) return;
  push({ kind: 'event', draft: { type: 'tool.running', payload: { toolCallId } } });
  const outcome = await executeAgentTool(tool, input, { signal, runId: turn.runId, toolCallId });
  if (outcome.status === 'completed') {
    const payload = outcome.result === undefined ? { toolCallId } : { toolCallId, result: outcome.result };
    push({ kind: 'event', draft: { type: 'tool.completed', payload } });
  } else if (outcome.status === 'failed') {
    failed(push, toolCallId, outcome.error);
  }
}

/** Whether a call needs approval, as its tool says; what `needsApproval` throws fails the call. */
async function needsApproval(
  turn: AgentTurn,
  tool: AgentTool,
  toolCallId: string,
  input: unknown,
): Promise<boolean | AgentErrorInfo> {
  if (tool.needsApproval === undefined) return false;
  try {
    return (await tool.needsApproval(input, { runId: turn.runId, toolCallId })) === true;
  } catch (error) {
    const info = toAgentErrorInfo(error);
    return {
      ...info,
      message: `needsApproval of ${tool.name} failed: ${info.message}`,
      code: info.code ?? 'tool_error',
    };
  }
}

/**
 * The tool calls of one model step, concurrently: each is validated (an unknown tool or
 * invalid arguments fail it, with a message for the model), then left to the client (no
 * `execute`), or to the user's approval (`approval.requested`), or run here. Resolves, once
 * every call that runs here has settled, with what the run waits for, in the calls' order.
 */
export async function runStepTools(
  config: AgentLoopConfig,
  turn: AgentTurn,
  toolCallIds: readonly string[],
  push: Push,
): Promise<ToolCallsOutcome> {
  const state = turn.history.getSnapshot();
  const waits = await Promise.all(
    toolCallIds.map(async (toolCallId): Promise<{ toolCallId: string; approvalId?: string } | undefined> => {
      const call = getOwn(state.toolCalls, getAgentEntityKey(turn.runId, toolCallId));
      // The model listed it as awaiting execution, so its record is there.
      /* v8 ignore if */
      if (call === undefined) return undefined;
      const checked = checkToolCall(config, call, undefined);
      if ('error' in checked) {
        failed(push, toolCallId, checked.error);
        return undefined;
      }
      const { tool, input } = checked;
      if (tool.execute === undefined) return { toolCallId };
      const gated = await needsApproval(turn, tool, toolCallId, input);
      if (typeof gated === 'object') {
        failed(push, toolCallId, gated);
        return undefined;
      }
      if (gated) {
        const approvalId = approvalIdOf(toolCallId);
        const payload = { approvalId, toolCallId, description: `Run ${tool.name}`, data: input };
        push({ kind: 'event', draft: { type: 'approval.requested', payload } });
        return { toolCallId, approvalId };
      }
      await runTool(turn, tool, toolCallId, input, push);
      return undefined;
    }),
  );
  const outcome: ToolCallsOutcome = { pendingToolCallIds: [], pendingApprovalIds: [] };
  for (const wait of waits) {
    if (wait === undefined) continue;
    outcome.pendingToolCallIds.push(wait.toolCallId);
    if (wait.approvalId !== undefined) outcome.pendingApprovalIds.push(wait.approvalId);
  }
  return outcome;
}

/** The decision an answer gives: a dismissed approval is a rejection. */
function decisionOf(answer: AgentApprovalAnswer | undefined): Decision {
  if (answer === undefined || answer.status === 'cancelled') return { decision: 'rejected' };
  const decision = answer.decision ?? 'approved';
  return answer.data === undefined ? { decision } : { decision, data: answer.data };
}

/** The decision an approval already has in the state; a cancelled approval is a rejection. */
function recordedDecision(approval: AgentApprovalState): Decision | undefined {
  if (approval.status === 'waiting') return undefined;
  if (approval.status === 'cancelled' || approval.decision === undefined) return { decision: 'rejected' };
  return approval.resolvedData === undefined
    ? { decision: approval.decision }
    : { decision: approval.decision, data: approval.resolvedData };
}

/** The approvals of a run that are about a tool call, by the call's id. */
function approvalsByToolCall(state: AgentState, runId: string): Map<string, AgentApprovalState> {
  const out = new Map<string, AgentApprovalState>();
  for (const approval of Object.values(state.approvals)) {
    if (approval.runId === runId && approval.toolCallId !== undefined) out.set(approval.toolCallId, approval);
  }
  return out;
}

/**
 * In a run that continues one waiting for input, settles what it waited on: each approval
 * it waits on is resolved with its answer (none, or a dismissal, rejects it); each tool call
 * it waits on that the client did not settle runs here when its approval allows it (with
 * the modified input of a `modified` decision), and fails otherwise: rejected
 * (`approval_rejected`, which the model reads as the call's result), or left without a
 * result (`missing_result`). The tools run concurrently; resolves once they have settled.
 */
export async function settleContinuation(
  config: AgentLoopConfig,
  turn: AgentTurn,
  continuation: AgentRunContinuation,
  push: Push,
): Promise<void> {
  const state = turn.history.getSnapshot();
  const waiting = getOwn(state.runs, continuation.runId);
  if (waiting === undefined) return;
  const answers = new Map(continuation.approvals.map((answer) => [answer.approvalId, answer]));
  const byToolCall = approvalsByToolCall(state, waiting.id);
  const decisions = new Map<string, Decision>();
  for (const approvalId of waiting.pendingApprovalIds ?? []) {
    const approval = getOwn(state.approvals, getAgentEntityKey(waiting.id, approvalId));
    if (approval?.status !== 'waiting') continue;
    const decision = decisionOf(answers.get(approvalId));
    const payload =
      decision.data === undefined ? { approvalId, decision: decision.decision } : { approvalId, ...decision };
    push({
      kind: 'event',
      draft: {
        type: 'approval.resolved',
        payload: payload as { approvalId: string; decision: Decision['decision']; data?: unknown },
        meta: { agentMachines: { resolvedBy: 'continuation' } },
      },
    });
    if (approval.toolCallId !== undefined) decisions.set(approval.toolCallId, decision);
  }
  const runs: Promise<void>[] = [];
  for (const toolCallId of waiting.pendingToolCallIds ?? []) {
    const call = getOwn(state.toolCalls, getAgentEntityKey(waiting.id, toolCallId));
    // Settled by the client's result, or not the call's to settle any more.
    if (call === undefined || (call.status !== 'awaiting_execution' && call.status !== 'running')) continue;
    const approval = byToolCall.get(toolCallId);
    const decision = decisions.get(toolCallId) ?? (approval === undefined ? undefined : recordedDecision(approval));
    if (decision !== undefined && decision.decision !== 'approved' && decision.decision !== 'modified') {
      const message = `The user did not approve this call of ${call.name}; it did not run`;
      failed(push, toolCallId, { message, code: 'approval_rejected' });
      continue;
    }
    runs.push(continueToolCall(config, turn, call, decision, push));
  }
  await Promise.all(runs);
}

/** A call the waiting run left open that this run may settle: run it when it may run here, else fail it. */
async function continueToolCall(
  config: AgentLoopConfig,
  turn: AgentTurn,
  call: AgentToolCallState,
  decision: Decision | undefined,
  push: Push,
): Promise<void> {
  const toolCallId = call.id;
  const checked = checkToolCall(config, call, decision);
  if ('error' in checked) {
    failed(push, toolCallId, checked.error);
    return;
  }
  const { tool, input } = checked;
  if (tool.execute === undefined || call.status === 'running') {
    const message =
      call.status === 'running'
        ? `${call.name} was interrupted while it ran, and is not run twice`
        : `No result was given for this call of ${call.name}`;
    failed(push, toolCallId, { message, code: call.status === 'running' ? 'interrupted' : 'missing_result' });
    return;
  }
  if (decision === undefined) {
    const gated = await needsApproval(turn, tool, toolCallId, input);
    if (gated !== false) {
      const error =
        typeof gated === 'object'
          ? gated
          : { message: `${call.name} needs an approval it never got`, code: 'approval_rejected' };
      failed(push, toolCallId, error);
      return;
    }
  }
  await runTool(turn, tool, toolCallId, input, push);
}
