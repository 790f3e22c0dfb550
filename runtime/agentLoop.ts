import type { AgentState } from '../machines/agentState';
import { getOwn } from '../machines/agentStateProjection';
import { isWaitingForInput } from '../machines/pendingInput';
import { selectPendingInput } from '../machines/selectors';
import { AgentCommandError } from '../providers/AgentCommandError';
import type { AgentApprovalAnswer, AgentRunContinuation, AnyAgentProvider } from '../providers/AgentProvider';
import type { AgentRunResult } from '../providers/runAgentProvider';
import type { CommandRunner, RecordedAnswer } from './createCommandRunner';
import type { RuntimeCore } from './runtimeCore';

/**
 * Whether a run that ended waiting for input has everything it waited for, so the
 * conversation can go on: each approval it waits on has an answer, and each tool call it
 * waits on has its result, unless an answered approval is about that tool call (the
 * runtime runs it after the answer: an AG-UI tool approval). A run that never waited, or
 * was already continued, is not ready.
 */
export function isReadyToContinue(
  state: AgentState,
  runId: string,
  answers: ReadonlyMap<string, RecordedAnswer> | undefined,
): boolean {
  const run = getOwn(state.runs, runId);
  if (run === undefined || run.status !== 'completed') return false;
  const listed = (run.pendingToolCallIds?.length ?? 0) + (run.pendingApprovalIds?.length ?? 0);
  if (listed === 0) return false;
  if (!isWaitingForInput(state, run)) return true;
  const pending = selectPendingInput(state, runId);
  const answeredToolCalls = new Set<string>();
  for (const approval of pending.approvals) {
    if (answers?.has(approval.id) !== true) return false;
    if (approval.toolCallId !== undefined) answeredToolCalls.add(approval.toolCallId);
  }
  return pending.toolCalls.every((toolCall) => answeredToolCalls.has(toolCall.id));
}

/**
 * Whether a run of the conversation continues `runId` (its `run.started` named it): after a
 * restore the loop's own memory of what it continued is gone, AgentState is not.
 */
export function isContinuedInState(state: AgentState, runId: string): boolean {
  for (const run of Object.values(state.runs)) if (run.continuesRunId === runId) return true;
  return false;
}

/**
 * The answers a continuation carries, in the order the run listed its approvals; with
 * `dismissRest`, every approval still waiting without an answer goes as `cancelled`.
 */
export function answersFor(
  state: AgentState,
  runId: string,
  answers: ReadonlyMap<string, RecordedAnswer> | undefined,
  dismissRest: boolean,
): AgentApprovalAnswer[] {
  const out: AgentApprovalAnswer[] = [];
  for (const approval of selectPendingInput(state, runId).approvals) {
    const recorded = answers?.get(approval.id);
    if (recorded !== undefined) out.push(recorded.answer);
    else if (dismissRest) out.push({ approvalId: approval.id, status: 'cancelled' });
  }
  return out;
}

/** Starts a run of the conversation: the runtime's `request`, with a continuation and its place in a chain. */
export type StartRun = (
  input: unknown,
  provider: AnyAgentProvider,
  continuation: AgentRunContinuation | undefined,
  autoDepth: number,
) => Promise<AgentRunResult>;

export interface AgentLoopOptions {
  autoContinue: boolean;
  maxAutoContinuations: number;
  /** An automatic continuation broke off (its provider broke the contract, say). */
  onError(error: unknown): void;
}

/** How the conversation goes on after a run that ended waiting for input. */
export interface AgentLoop {
  /** A waiting run got input: continue it when it has everything, within the automatic budget. */
  onInput(runId: string): void;
  /** `agentActions.continueRun`: continue now; approvals not answered go as `cancelled`. */
  continueRun(runId: string): Promise<AgentRunResult>;
}

/**
 * The agent loop: once a run that ended waiting for input has every tool result and answer
 * it waited for, a run continues it, with its input, its provider and the answers, and the
 * answers' commands are settled by what that run did. Automatic continuations in a row are
 * bounded; a user's request starts the count again.
 */
export function createAgentLoop(
  core: RuntimeCore,
  runner: () => CommandRunner,
  startRun: StartRun,
  options: AgentLoopOptions,
): AgentLoop {
  const { store } = core;
  /** Waiting runs a continuation has been started for. */
  const continued = new Set<string>();

  const inputOf = (runId: string): unknown =>
    core.runs.has(runId) ? core.runs.get(runId)?.input : getOwn(store.getSnapshot().runs, runId)?.input;

  const continueWaitingRun = async (runId: string, dismissRest: boolean, autoDepth: number) => {
    const approvals = answersFor(store.getSnapshot(), runId, runner().answersOf(runId), dismissRest);
    continued.add(runId);
    let result: AgentRunResult | undefined;
    let failure: unknown;
    try {
      result = await startRun(inputOf(runId), core.providerOf(runId), { runId, approvals }, autoDepth);
      return result;
    } catch (error) {
      failure = error;
      throw error;
    } finally {
      runner().settleAnswers(
        runId,
        result === undefined ? 'broke off' : `ended ${result.status}`,
        failure ?? result?.error,
      );
      // Answers not resolved: the run still waits, and new answers may continue it again.
      const state = store.getSnapshot();
      const run = getOwn(state.runs, runId);
      if (run !== undefined && isWaitingForInput(state, run)) continued.delete(runId);
    }
  };

  return {
    onInput(runId) {
      if (!options.autoContinue || continued.has(runId)) return;
      const depth = (core.runs.get(runId)?.autoDepth ?? 0) + 1;
      if (depth > options.maxAutoContinuations) return;
      if (!isReadyToContinue(store.getSnapshot(), runId, runner().answersOf(runId))) return;
      continueWaitingRun(runId, false, depth).catch(options.onError);
    },
    async continueRun(runId) {
      const run = getOwn(store.getSnapshot().runs, runId);
      const listed = (run?.pendingToolCallIds?.length ?? 0) + (run?.pendingApprovalIds?.length ?? 0);
      if (
        run?.sessionId !== core.sessionId ||
        run.status !== 'completed' ||
        listed === 0 ||
        continued.has(runId) ||
        isContinuedInState(store.getSnapshot(), runId)
      ) {
        throw new AgentCommandError(
          'invalid_command',
          `continueRun refused: run "${runId}" did not end waiting for input in this conversation, or was continued`,
        );
      }
      return continueWaitingRun(runId, true, 0);
    },
  };
}
