import type { AgentCommandOf } from '../../protocol/commandSchemas';
import { AgentError } from '../../protocol/errors';
import type { AgentErrorInfo } from '../../protocol/eventSchemas';
import { AgentTransportError } from '../../transports/AgentTransportError';
import type { AgentApprovalAnswer } from '../AgentProvider';
import { LocalAgentCommandInbox } from './LocalAgentCommandInbox';
import type { LocalAgentChunk, LocalAgentScript, LocalAgentStep } from './localAgentChunks';
import { approvalStepIndexOf } from './localScriptContinuation';

/** Thrown by the local runtime at a `fail` step, as a crashed model server would fail. */
export class LocalAgentRuntimeError extends AgentError {
  constructor(message: string, code = 'runtime_error') {
    super(code, message);
    this.name = 'LocalAgentRuntimeError';
  }

  /** Whether `value` is a LocalAgentRuntimeError (or of a subclass), from any copy of the package. */
  declare static isInstance: (value: unknown) => value is LocalAgentRuntimeError;
}

type ToolStep = Extract<LocalAgentStep, { type: 'tool' }>;
type ApprovalStep = Extract<LocalAgentStep, { type: 'approval' }>;

/** What the run is waiting for, still running: an answer to one entity, or any command it can carry out. */
type Awaited =
  | { kind: 'approval'; id: string; step: ApprovalStep }
  | { kind: 'tool'; id: string }
  | { kind: 'command' };

/** The command that ended a wait. */
type Settlement =
  | { type: 'approval'; command: AgentCommandOf<'approval.resolve'> }
  | { type: 'tool'; command: AgentCommandOf<'tool.submit_result'> }
  | { type: 'retried' };

/** How an approval was answered, as far as the script's later steps care. */
interface Answer {
  decision: 'approved' | 'rejected' | 'modified' | 'expired';
  data?: unknown;
}

/** Where a script starts playing, and what was answered before it (in the run it continues). */
export interface LocalAgentScriptOptions {
  /** The index of the first step to play; default 0. Steps keep their ids (`text-3`). */
  from?: number;
  /** The answers to approvals an earlier run asked, for the tool steps that take their arguments from them. */
  answers?: readonly AgentApprovalAnswer[];
}

/** Whether an approval step leaves its answer to the run that continues this one. */
function waitsForContinuation(step: LocalAgentStep): step is ApprovalStep {
  return step.type === 'approval' && step.decision === undefined && step.waitFor !== 'command';
}

/** A failed, retryable tool call the runtime ran: a `tool.retry` of it makes attempt `attempt + 1`. */
interface RetryableCall {
  /** The first call's id, which every retry's id starts with. */
  rootId: string;
  step: ToolStep;
  attempt: number;
  retriedAs?: string;
}

function abortError(signal: AbortSignal): AgentTransportError {
  return new AgentTransportError('aborted', 'The local run was aborted', { cause: signal.reason });
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const abort = () => {
      clearTimeout(timer);
      reject(abortError(signal));
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', abort);
      resolve();
    }, ms);
    if (signal.aborted) abort();
    else signal.addEventListener('abort', abort, { once: true });
  });
}

/**
 * Plays one script. Every chunk goes through `emit`, which first takes the commands sent
 * meanwhile, so a command's effects come in the run's own stream, in order, and the run's
 * sequences never go back. Waiting steps take commands as they arrive.
 */
class LocalScriptPlayer {
  private readonly delay: number;
  private readonly pendingToolCalls: string[] = [];
  private readonly pendingApprovals: string[] = [];
  /** The steps of the approvals listed as pending, so an answer that comes while the run still runs is checked against them. */
  private readonly pendingSteps = new Map<string, ApprovalStep>();
  /** The answers so far, by approval id: the continued run's, and this run's. */
  private readonly answers = new Map<string, Answer>();
  private readonly retryable = new Map<string, RetryableCall>();
  private awaited: Awaited | undefined;
  private settlement: Settlement | undefined;
  /** The run has ended (done, error or cancelled): nothing more is emitted. */
  private ended = false;
  /** A rejected approval stopped the script: the run completes without the remaining steps. */
  private stopped = false;

  constructor(
    private readonly script: LocalAgentScript,
    private readonly signal: AbortSignal,
    private readonly commands: LocalAgentCommandInbox,
    private readonly options: LocalAgentScriptOptions = {},
  ) {
    this.delay = script.delayMs ?? 0;
    for (const answer of options.answers ?? []) {
      const decision = answer.status === 'cancelled' ? 'rejected' : (answer.decision ?? 'approved');
      this.answers.set(answer.approvalId, answer.data === undefined ? { decision } : { decision, data: answer.data });
    }
  }

  async *play(): AsyncGenerator<LocalAgentChunk> {
    try {
      const { steps } = this.script;
      /** The run ends here waiting for the answers to its pending approvals. */
      let held = false;
      for (let index = this.options.from ?? 0; index < steps.length; ) {
        const step = steps[index] as LocalAgentStep;
        // A pending approval holds the script: only further approvals left to the
        // continuation are asked in the same run; the next step waits for the answers.
        if (this.pendingApprovals.length > 0 && !waitsForContinuation(step)) {
          if (yield* this.answeredInRun()) continue;
          if (this.ended) return;
          held = !this.stopped;
          break;
        }
        this.checkAbort();
        yield* this.playStep(step, `${step.type}-${index}`);
        if (this.ended) return;
        if (this.stopped) break;
        index += 1;
      }
      const done: Extract<LocalAgentChunk, { type: 'done' }> = { type: 'done' };
      if (this.script.usage !== undefined) done.usage = this.script.usage;
      if (this.pendingToolCalls.length > 0) done.pendingToolCallIds = this.pendingToolCalls;
      if (this.pendingApprovals.length > 0) done.pendingApprovalIds = this.pendingApprovals;
      if (!held) {
        yield* this.emit(done);
        return;
      }
      // Right after the last look at the commands: an answer sent from now on finds the run
      // ended, and goes with the run that continues it.
      this.ended = true;
      yield done;
    } finally {
      this.commands.close();
    }
  }

  /**
   * The script is held by pending approvals: after the script's delay, takes the commands
   * sent meanwhile. Whether every pending approval was answered in the run, so it goes on.
   */
  private async *answeredInRun(): AsyncGenerator<LocalAgentChunk, boolean> {
    if (this.delay > 0) await sleep(this.delay, this.signal);
    else this.checkAbort();
    yield* this.takeCommands();
    return !this.ended && !this.stopped && this.pendingApprovals.length === 0;
  }

  private async *playStep(step: LocalAgentStep, id: string): AsyncGenerator<LocalAgentChunk> {
    switch (step.type) {
      case 'reasoning':
        yield* this.emit(
          step.redacted === undefined
            ? { type: 'reasoning.start', id }
            : { type: 'reasoning.start', id, redacted: step.redacted },
        );
        for (const delta of step.deltas) yield* this.emit({ type: 'reasoning.delta', id, delta });
        yield* this.emit({ type: 'reasoning.end', id });
        return;
      case 'text':
        yield* this.emit({ type: 'text.start', id });
        for (const delta of step.deltas) yield* this.emit({ type: 'text.delta', id, delta });
        yield* this.emit({ type: 'text.end', id });
        return;
      case 'tool':
        yield* this.playTool(step, id);
        return;
      case 'approval':
        yield* this.playApproval(step, id);
        return;
      case 'task':
        yield* this.emit({ type: 'task.start', id, title: step.title });
        for (const progress of step.progress) yield* this.emit({ type: 'task.progress', id, progress });
        yield* this.emit({ type: 'task.end', id });
        return;
      case 'artifact': {
        const [first, ...later] = step.versions;
        const start: LocalAgentChunk = { type: 'artifact.start', id, mediaType: step.mediaType };
        if (step.title !== undefined) start.title = step.title;
        if (first !== undefined) start.content = first;
        yield* this.emit(start);
        // The start carries version 1; each later version counts up from 2.
        for (const [index, content] of later.entries())
          yield* this.emit({ type: 'artifact.version', id, version: index + 2, content });
        yield* this.emit({ type: 'artifact.end', id });
        return;
      }
      case 'error':
        yield* this.emit({ type: 'error', error: step.error });
        return;
      case 'fail':
        throw new LocalAgentRuntimeError(step.error.message, step.error.code);
      case 'stall':
        yield* this.idle(undefined);
        return;
      case 'wait':
        yield* this.idle(undefined, step.ms);
        return;
      case 'await_command':
        yield* this.idle({ kind: 'command' }, step.timeoutMs);
        return;
    }
  }

  /**
   * A tool step's argument deltas: its own, or, with `argumentsFrom`, the data of that
   * approval as the user answered it (`modified`) or as it was asked.
   */
  private argumentDeltasOf(step: ToolStep): string[] {
    const approvalId = step.argumentsFrom;
    if (approvalId === undefined) return step.argumentDeltas;
    const index = approvalStepIndexOf(approvalId);
    const approval = index === undefined ? undefined : this.script.steps[index];
    if (approval?.type !== 'approval') {
      throw new LocalAgentRuntimeError(
        `tool step "${step.name}": argumentsFrom "${approvalId}" names no approval step of the script`,
        'invalid_script',
      );
    }
    const answer = this.answers.get(approvalId);
    const data = answer?.decision === 'modified' && answer.data !== undefined ? answer.data : approval.data;
    return data === undefined ? step.argumentDeltas : [JSON.stringify(data)];
  }

  private async *playTool(step: ToolStep, id: string): AsyncGenerator<LocalAgentChunk> {
    yield* this.emit({ type: 'tool.start', id, name: step.name });
    for (const delta of this.argumentDeltasOf(step)) yield* this.emit({ type: 'tool.args', id, delta });
    yield* this.emit({ type: 'tool.args_end', id });
    if (step.error !== undefined) {
      yield* this.emit({ type: 'tool.running', id });
      yield* this.fail(id, step.error, { rootId: id, step, attempt: 1 });
    } else if ('result' in step) {
      yield* this.emit({ type: 'tool.running', id });
      yield* this.emit({ type: 'tool.result', id, result: step.result });
    } else if (step.waitFor === 'command') {
      const settlement = yield* this.idle({ kind: 'tool', id });
      if (settlement?.type !== 'tool') return;
      const { payload, commandId } = settlement.command;
      const meta = { agentMachines: { executedBy: 'client', commandId } };
      yield* this.emit(
        payload.error !== undefined
          ? { type: 'tool.error', id, error: payload.error, meta }
          : { type: 'tool.result', id, result: payload.result, meta },
      );
    } else {
      this.pendingToolCalls.push(id);
    }
  }

  /** Emits a failed attempt; a retryable failure can be retried while the run runs. */
  private async *fail(id: string, error: AgentErrorInfo, call: RetryableCall): AsyncGenerator<LocalAgentChunk> {
    yield* this.emit({ type: 'tool.error', id, error });
    if (error.retryable === true) this.retryable.set(id, call);
  }

  private async *retry(failedId: string, call: RetryableCall): AsyncGenerator<LocalAgentChunk> {
    const { step, rootId } = call;
    const attempt = call.attempt + 1;
    const id = `${rootId}-retry-${attempt}`;
    call.retriedAs = id;
    yield* this.emit({ type: 'tool.start', id, name: step.name, attempt, retryOf: failedId });
    for (const delta of this.argumentDeltasOf(step)) yield* this.emit({ type: 'tool.args', id, delta });
    yield* this.emit({ type: 'tool.args_end', id });
    yield* this.emit({ type: 'tool.running', id });
    const error = step.retryError ?? ('retryResult' in step ? undefined : step.error);
    if (error !== undefined) yield* this.fail(id, error, { rootId, step, attempt });
    else yield* this.emit({ type: 'tool.result', id, result: step.retryResult });
  }

  private async *playApproval(step: ApprovalStep, id: string): AsyncGenerator<LocalAgentChunk> {
    const request: Extract<LocalAgentChunk, { type: 'approval.request' }> = {
      type: 'approval.request',
      id,
      description: step.description,
    };
    if (step.risk !== undefined) request.risk = step.risk;
    if (step.toolCallId !== undefined) request.toolCallId = step.toolCallId;
    if (step.data !== undefined) request.data = step.data;
    if (step.editable !== undefined) request.editable = step.editable;
    if (step.version !== undefined) request.version = step.version;
    yield* this.emit(request);
    if (step.decision !== undefined) {
      this.answers.set(id, { decision: step.decision });
      yield* this.emit({ type: 'approval.resolved', id, decision: step.decision });
      return;
    }
    if (step.waitFor !== 'command') {
      this.pendingApprovals.push(id);
      this.pendingSteps.set(id, step);
      return;
    }
    const settlement = yield* this.idle({ kind: 'approval', id, step });
    if (settlement?.type !== 'approval') return;
    yield* this.resolveByCommand(id, step, settlement.command);
  }

  /**
   * Resolves an approval with the user's command: approved or modified, the script goes on
   * (a later tool step may take the data); rejected, a pending tool call the approval is
   * about is cancelled and the script stops.
   */
  private async *resolveByCommand(
    id: string,
    step: ApprovalStep,
    command: AgentCommandOf<'approval.resolve'>,
  ): AsyncGenerator<LocalAgentChunk> {
    const { payload, commandId } = command;
    this.answers.set(
      id,
      payload.data === undefined ? { decision: payload.decision } : { decision: payload.decision, data: payload.data },
    );
    const resolved: Extract<LocalAgentChunk, { type: 'approval.resolved' }> = {
      type: 'approval.resolved',
      id,
      decision: payload.decision,
      meta: { agentMachines: { resolvedBy: 'command', commandId } },
    };
    if (payload.data !== undefined) resolved.data = payload.data;
    yield* this.emit(resolved);
    if (payload.decision !== 'rejected') return;
    const toolIndex = step.toolCallId === undefined ? -1 : this.pendingToolCalls.indexOf(step.toolCallId);
    if (toolIndex >= 0) {
      const [toolCallId] = this.pendingToolCalls.splice(toolIndex, 1) as [string];
      yield* this.emit({ type: 'tool.cancelled', id: toolCallId, reason: 'approval_rejected' });
    }
    this.stopped = true;
  }

  /** Yields `chunk` after the script's delay and after the commands sent meanwhile. */
  private async *emit(chunk: LocalAgentChunk): AsyncGenerator<LocalAgentChunk> {
    if (this.ended) return;
    if (this.delay > 0) await sleep(this.delay, this.signal);
    else this.checkAbort();
    yield* this.takeCommands();
    if (this.ended) return;
    if (chunk.type === 'error' || chunk.type === 'done') this.ended = true;
    yield chunk;
  }

  /**
   * Waits, still running, taking commands as they come: until one settles `awaited`,
   * until `timeoutMs` passed, or until the run ends (cancelled). An abort rejects.
   */
  private async *idle(
    awaited: Awaited | undefined,
    timeoutMs?: number,
  ): AsyncGenerator<LocalAgentChunk, Settlement | undefined> {
    const deadline = timeoutMs === undefined ? undefined : Date.now() + timeoutMs;
    this.awaited = awaited;
    this.settlement = undefined;
    try {
      for (;;) {
        yield* this.takeCommands();
        if (this.ended || this.settlement !== undefined) return this.settlement;
        const remaining = deadline === undefined ? undefined : deadline - Date.now();
        if (remaining !== undefined && remaining <= 0) return undefined;
        await this.commands.waitForDelivery(this.signal, remaining);
      }
    } finally {
      this.awaited = undefined;
      this.settlement = undefined;
    }
  }

  /** Takes the commands sent so far, carrying out or refusing each, until one settles the wait or ends the run. */
  private async *takeCommands(): AsyncGenerator<LocalAgentChunk> {
    while (!this.ended && this.settlement === undefined) {
      const delivery = this.commands.take();
      if (delivery === undefined) return;
      const { command } = delivery;
      switch (command.type) {
        case 'run.cancel':
          delivery.accept();
          this.ended = true;
          yield { type: 'cancelled', reason: command.payload.reason ?? 'cancelled_by_user' };
          return;
        case 'tool.retry': {
          const failedId = command.payload.toolCallId;
          const call = this.retryable.get(failedId);
          if (call === undefined) {
            delivery.refuse(`tool call "${failedId}" is not a failed, retryable tool call the run executed`);
          } else if (call.retriedAs !== undefined) {
            delivery.refuse(`tool call "${failedId}" was already retried as "${call.retriedAs}"`);
          } else {
            delivery.accept();
            yield* this.retry(failedId, call);
            if (!this.ended && this.awaited?.kind === 'command') this.settlement ??= { type: 'retried' };
          }
          break;
        }
        case 'approval.resolve': {
          const refusal = this.refuseApproval(command);
          const { approvalId } = command.payload;
          const pending = this.pendingSteps.get(approvalId);
          if (refusal !== undefined) delivery.refuse(refusal);
          else if (pending !== undefined) {
            // An approval the run would end waiting on, answered while it still runs: taken here.
            delivery.accept();
            this.pendingSteps.delete(approvalId);
            this.pendingApprovals.splice(this.pendingApprovals.indexOf(approvalId), 1);
            yield* this.resolveByCommand(approvalId, pending, command);
          } else {
            delivery.accept();
            this.settlement = { type: 'approval', command };
          }
          break;
        }
        case 'tool.submit_result': {
          const { toolCallId } = command.payload;
          if (this.awaited?.kind !== 'tool' || this.awaited.id !== toolCallId) {
            delivery.refuse(`tool call "${toolCallId}" is not waiting for the application's result`);
          } else {
            delivery.accept();
            this.settlement = { type: 'tool', command };
          }
          break;
        }
        default:
          delivery.refuse('the local runtime does not carry out this command');
      }
    }
  }

  /** Why the run cannot take this answer now, if it cannot. */
  private refuseApproval(command: AgentCommandOf<'approval.resolve'>): string | undefined {
    const { approvalId, decision, expectedVersion } = command.payload;
    const awaited = this.awaited;
    const step =
      awaited?.kind === 'approval' && awaited.id === approvalId ? awaited.step : this.pendingSteps.get(approvalId);
    if (step === undefined) return `approval "${approvalId}" is not waiting for an answer in the run`;
    const { version, editable } = step;
    if (expectedVersion !== undefined && expectedVersion !== version) {
      const actual = version === undefined ? 'has no version' : `is at version ${JSON.stringify(version)}`;
      return `expected version ${JSON.stringify(expectedVersion)} of approval "${approvalId}", which ${actual}`;
    }
    if (decision === 'modified' && editable === false) return `approval "${approvalId}" may not be modified`;
    return undefined;
  }

  private checkAbort(): void {
    if (this.signal.aborted) throw abortError(this.signal);
  }
}

/**
 * Plays a script as a runtime would: chunk by chunk, with the script's delay, honouring
 * the abort signal. Tool steps without a result are left to the application, approval
 * steps without a decision to the user: by default the run ends listing them as pending
 * (an approval ends it before the next step that is not another such approval, unless its
 * answer comes while the run still runs; the run that continues it plays on from there,
 * `options.from`); with `waitFor: 'command'` it waits, running, for the command that
 * answers them. The commands sent to the run through `commands` are taken between chunks
 * and while it waits: `run.cancel` ends it, `tool.retry` makes a new attempt of a failed
 * retryable tool call, `approval.resolve` answers an approval it asked. Without `commands`,
 * nobody can send it any. The inbox is closed when the run ends.
 *
 * @example
 * for await (const chunk of runLocalAgentScript({ steps: [{ type: 'text', deltas: ['Hi'] }] }, signal)) console.log(chunk.type);
 * // text.start, text.delta, text.end, done
 */
export async function* runLocalAgentScript(
  script: LocalAgentScript,
  signal: AbortSignal,
  commands: LocalAgentCommandInbox = new LocalAgentCommandInbox('local', 'local'),
  options: LocalAgentScriptOptions = {},
): AsyncGenerator<LocalAgentChunk> {
  yield* new LocalScriptPlayer(script, signal, commands, options).play();
}
