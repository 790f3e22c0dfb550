import type { AgentErrorInfo, AgentUsage } from '../../protocol/eventSchemas';
import { runAgentProvider } from '../runAgentProvider';
import { toAgentErrorInfo } from '../toAgentErrorInfo';
import { type AgentEventDraft, type AgentLoopChunk, AgentStepEvents, type AgentStepOutcome } from './agentStepEvents';
import type { AgentLoopConfig, AgentTurn } from './agentTurn';
import { drainPushed } from './drainPushed';
import { runStepTools, settleContinuation, type ToolCallsOutcome } from './runAgentToolCalls';
import { toAgentStepHistory } from './toAgentStepHistory';

/** Why a run stopped: the model answered without a tool, the step budget ran out, or it waits for input. */
export type AgentStopReason = 'answer' | 'max_steps' | 'input';

/** The `output` of an agent's completed run. */
export interface AgentRunOutput {
  stoppedBy: AgentStopReason;
  /** The model steps the run took. */
  steps: number;
}

type Push = (chunk: AgentLoopChunk) => void;

const event = (draft: AgentEventDraft): AgentLoopChunk => ({ kind: 'event', draft });

function addUsage(total: AgentUsage, step: AgentUsage | undefined): AgentUsage {
  if (step === undefined) return total;
  const sum: Record<string, number> = { ...(total as Record<string, number>) };
  for (const [field, count] of Object.entries(step)) {
    if (typeof count === 'number') sum[field] = (sum[field] ?? 0) + count;
  }
  return sum as AgentUsage;
}

/** One model step: the model run with the conversation so far, its events re-emitted under the agent's run. */
async function runModelStep(config: AgentLoopConfig, turn: AgentTurn, step: number, push: Push) {
  const events = new AgentStepEvents(step, turn.takenToolCallIds);
  try {
    const result = await runAgentProvider({
      provider: config.model,
      input: config.modelInput,
      sessionId: turn.sessionId,
      runId: `${turn.runId}-step-${step}`,
      history: toAgentStepHistory(turn.history.getSnapshot()),
      signal: turn.controller.signal,
      now: turn.now,
      onEvent: (modelEvent) => {
        const draft = events.map(modelEvent);
        if (draft !== undefined) push(event(draft));
      },
    });
    if (events.outcome !== undefined) return events.outcome;
    const error: AgentErrorInfo = toAgentErrorInfo(result.error ?? `The model run ended ${result.status}`);
    return { status: 'failed', toolCallIds: [], error } satisfies AgentStepOutcome;
  } catch (error) {
    // A model that broke its contract, or a stream dropped mid-answer: this run fails, the loop does not throw.
    return { status: 'failed', toolCallIds: [], error: toAgentErrorInfo(error) } satisfies AgentStepOutcome;
  }
}

function end(usage: AgentUsage, steps: number, stoppedBy: AgentStopReason, tools?: ToolCallsOutcome): AgentLoopChunk {
  const payload: AgentEventDraft & { type: 'run.completed' } = { type: 'run.completed', payload: {} };
  if (Object.keys(usage).length > 0) payload.payload.usage = usage;
  if (tools !== undefined && tools.pendingToolCallIds.length > 0) {
    payload.payload.pendingToolCallIds = tools.pendingToolCallIds;
  }
  if (tools !== undefined && tools.pendingApprovalIds.length > 0) {
    payload.payload.pendingApprovalIds = tools.pendingApprovalIds;
  }
  payload.payload.output = { stoppedBy, steps } satisfies AgentRunOutput;
  return event(payload);
}

/**
 * The agent loop of one run, as the chunks its provider maps to events: first, in a run
 * that continues one waiting for input, the answers and the tools they let run; then model
 * steps, each followed by its tool calls (run concurrently), until a step calls no tool, a
 * call waits for input (the run completes listing what it waits for), or `maxSteps` steps
 * ran. A failed model step fails the run (a model that breaks its contract too: the loop
 * does not throw for what a model or a tool does); an abort or a `run.cancel` cancels it.
 */
export async function* runAgentTurn(config: AgentLoopConfig, turn: AgentTurn): AsyncGenerator<AgentLoopChunk> {
  const { signal } = turn.controller;
  const cancelled = (): AgentLoopChunk => ({
    kind: 'close',
    closing: { type: 'cancelled', reason: turn.cancelReason ?? 'aborted' },
  });
  let usage: AgentUsage = {};
  if (turn.continuation !== undefined) {
    const { continuation } = turn;
    yield* drainPushed<AgentLoopChunk, void>((push) => settleContinuation(config, turn, continuation, push));
    if (signal.aborted) {
      yield cancelled();
      return;
    }
  }
  for (let step = 1; ; step += 1) {
    const outcome = yield* drainPushed<AgentLoopChunk, AgentStepOutcome>((push) =>
      runModelStep(config, turn, step, push),
    );
    if (signal.aborted || outcome.status === 'cancelled') {
      yield cancelled();
      return;
    }
    if (outcome.status === 'failed') {
      const error = outcome.error ?? { message: 'The model step failed', code: 'model_error' };
      yield { kind: 'close', closing: { type: 'failed', error } };
      return;
    }
    usage = addUsage(usage, outcome.usage);
    if (outcome.toolCallIds.length === 0) {
      yield end(usage, step, 'answer');
      return;
    }
    const tools = yield* drainPushed<AgentLoopChunk, ToolCallsOutcome>((push) =>
      runStepTools(config, turn, outcome.toolCallIds, push),
    );
    if (signal.aborted) {
      yield cancelled();
      return;
    }
    if (tools.pendingToolCallIds.length > 0 || tools.pendingApprovalIds.length > 0) {
      yield end(usage, step, 'input', tools);
      return;
    }
    if (step >= config.maxSteps) {
      yield end(usage, step, 'max_steps');
      return;
    }
  }
}
