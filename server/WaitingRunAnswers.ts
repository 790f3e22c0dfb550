import type { AgentRunState, AgentState } from '../machines/agentState';
import { createAgentEventFactory } from '../protocol/createAgentEventFactory';
import type { AgentEvent } from '../protocol/eventSchemas';
import type { AgentApprovalAnswer } from '../providers/AgentProvider';
import { createClientToolResultEvent } from '../providers/clientToolResultEvent';
import type { AgentCommandOutcome, AgentEventLog } from './AgentEventLog';
import { AgentHostError, failed } from './AgentHostError';
import type { AgentHostRunRequest } from './hostRequests';
import type { SessionStates } from './SessionStates';
import {
  type AnswerCommand,
  answerKey,
  continuationOf,
  endedWaiting,
  hostProviderOf,
  missingInput,
} from './waitingRuns';

export interface WaitingRunAnswersOptions {
  log: AgentEventLog;
  sessions: SessionStates;
  instanceId: string;
  leaseMs: number;
  /** How long an answer waits for another request that is writing to the same run. */
  timeoutMs: number;
  now: () => number;
  /** Starts the run that continues a waiting run, as `POST /runs` does with a continuation. */
  continueRun: (sessionId: string, request: AgentHostRunRequest) => Promise<unknown>;
}

const answerOf = (command: AnswerCommand & { type: 'approval.resolve' }): AgentApprovalAnswer => {
  const { approvalId, decision, data } = command.payload;
  return data === undefined
    ? { approvalId, status: 'resolved', decision }
    : { approvalId, status: 'resolved', decision, data };
};

/**
 * The answers to runs that ended waiting for input, sent as commands (`approval.resolve`,
 * `tool.submit_result`) to any instance: the host keeps them in the log and, once the run has
 * everything it waits for, starts the run that continues it with the run's own provider and
 * input, as a client's `POST /runs` with a continuation would. Everything it needs is in the
 * log, so the instance that ran the waiting run may be long gone.
 *
 * An answer that leaves the run waiting for more is written to the run (`approval.resolved`,
 * marked `resolvedBy: 'command'`, or the tool's result); the approval that completes the
 * input goes with the continuation, whose run resolves it, as any provider expects. Writes to
 * one waiting run are one at a time across instances (the lease of its next sequence), and a
 * run is continued once (the continuation's lease, and the continuing run in the log): a
 * second answer to the same approval, from any instance, finds it answered and starts nothing.
 */
export class WaitingRunAnswers {
  constructor(private readonly options: WaitingRunAnswersOptions) {}

  async answer(command: AnswerCommand): Promise<AgentCommandOutcome> {
    const { log, sessions, instanceId, leaseMs, timeoutMs, now } = this.options;
    const { sessionId, runId } = command;
    const deadline = now() + timeoutMs;
    for (;;) {
      const { state, cursor } = await sessions.sync(sessionId);
      const refused = await this.refusal(state, command);
      if (refused === 'continue') return this.continueRun(state.runs[runId] as AgentRunState, []);
      if (refused !== undefined) return refused;
      const sequence = state.lastSequenceByRun[runId] ?? 0;
      if (await log.claimRun(sessionId, answerKey(runId, sequence), instanceId, leaseMs)) {
        // Taken: no one else writes after this sequence now. One who wrote and let its lease lapse moved it on.
        const latest = await sessions.sync(sessionId);
        if ((latest.state.lastSequenceByRun[runId] ?? 0) === sequence) {
          if ((await this.refusal(latest.state, command)) === undefined)
            return this.write(latest.state, command, sequence);
        }
        continue;
      }
      if (now() >= deadline) {
        return failed('timeout', `Another request is answering run "${runId}"; send the command again`);
      }
      // Another request is writing to the run: wait for what it writes, then look again.
      await log.follow(sessionId, {
        after: cursor,
        limit: 1,
        timeoutMs: Math.max(1, Math.min(leaseMs / 4, deadline - now())),
      });
    }
  }

  /**
   * Why the command cannot answer the run now, as its outcome; `undefined` when it can;
   * `continue` when the run has everything it waits for but was never continued (an instance
   * wrote the last answer and died before it started the continuation): it is continued now.
   */
  private async refusal(
    state: AgentState,
    command: AnswerCommand,
  ): Promise<AgentCommandOutcome | 'continue' | undefined> {
    const run = state.runs[command.runId] as AgentRunState;
    const continuing = continuationOf(state, run.id);
    if (continuing?.status === 'running') {
      return failed('continuation_in_progress', `Run "${run.id}" is being continued by run "${continuing.id}"`);
    }
    if (!endedWaiting(run) || hostProviderOf(run) === undefined) {
      return failed('run_ended', `Run "${run.id}" has ended; continue it with POST /runs`);
    }
    if (await this.options.sessions.can(command.sessionId, command)) return undefined;
    if (continuing === undefined && missingInput(state, run).length === 0) return 'continue';
    if (continuing !== undefined) return failed('run_ended', `Run "${run.id}" was continued by run "${continuing.id}"`);
    return failed('invalid_command', `The ${command.type} command does not apply to the run's state now`);
  }

  /**
   * Writes the answer (holding the run's next sequence) and continues the run once nothing is
   * missing. The outcome lists no events: what it wrote reaches every client through the log,
   * and the command's record keeps no payload (a tool's result may be large).
   */
  private async write(state: AgentState, command: AnswerCommand, sequence: number): Promise<AgentCommandOutcome> {
    const run = state.runs[command.runId] as AgentRunState;
    const complete = missingInput(state, run, command).length === 0;
    if (complete && command.type === 'approval.resolve') return this.continueRun(run, [answerOf(command)]);
    await this.options.log.append(command.sessionId, [this.answerEvent(command, sequence, this.options.now())]);
    return complete ? this.continueRun(run, []) : { status: 'accepted', events: [] };
  }

  /** Starts the run that continues `run`, carrying `approvals`. */
  private async continueRun(run: AgentRunState, approvals: AgentApprovalAnswer[]): Promise<AgentCommandOutcome> {
    try {
      await this.options.continueRun(run.sessionId, {
        provider: hostProviderOf(run) as string,
        input: run.input,
        continuation: { runId: run.id, approvals },
      });
    } catch (error) {
      if (!AgentHostError.isInstance(error)) throw error;
      // Another request continued the run meanwhile (its answer lease lapsed before this one
      // took it): the run ended for this command, as when it finds the continuation first.
      const { state } = await this.options.sessions.sync(run.sessionId);
      const continuing = continuationOf(state, run.id);
      if (continuing !== undefined && continuing.status !== 'running') {
        return failed('run_ended', `Run "${run.id}" was continued by run "${continuing.id}"`);
      }
      return failed(error.code, error.message);
    }
    return { status: 'accepted', events: [] };
  }

  /** The event the answer makes in the waiting run, right after `sequence`. */
  private answerEvent(command: AnswerCommand, sequence: number, timestamp: number): AgentEvent {
    const { sessionId, runId, commandId } = command;
    if (command.type === 'tool.submit_result') {
      const { toolCallId, result, error } = command.payload;
      return createClientToolResultEvent({
        sessionId,
        runId,
        afterSequence: sequence,
        timestamp,
        toolCallId,
        result,
        error,
        commandId,
      });
    }
    const { approvalId, decision, data } = command.payload;
    const events = createAgentEventFactory({ sessionId, runId, initialSequence: sequence, now: () => timestamp });
    const meta = { agentMachines: { resolvedBy: 'command', commandId } };
    return events.create(
      'approval.resolved',
      data === undefined ? { approvalId, decision } : { approvalId, decision, data },
      { meta },
    );
  }
}
