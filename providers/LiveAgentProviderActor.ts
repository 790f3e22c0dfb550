import type { ActorScope, AnyActorRef, EventObject } from 'xstate';
import type { AgentMessageState, AgentState } from '../machines/agentState';
import { getOwn } from '../machines/agentStateProjection';
import { type AgentStore, createAgentStore } from '../machines/createAgentStore';
import { isWaitingForInput } from '../machines/pendingInput';
import { type AgentPendingInput, selectPendingInput } from '../machines/selectors';
import { commandEntityId } from '../machines/store/storeCommands';
import type { AgentEventAdmission } from '../protocol/admittedEvents';
import type { AgentCommand, AgentCommandOf } from '../protocol/commandSchemas';
import { createAgentCommandFactory } from '../protocol/createAgentCommandFactory';
import type { AgentEvent } from '../protocol/eventSchemas';
import { getAgentEntityKey } from '../protocol/getAgentEntityKey';
import { parseAgentCommand } from '../protocol/parseAgentEvent';
import { randomId } from '../protocol/randomId';
import { AgentCommandError } from './AgentCommandError';
import type { AgentApprovalAnswer, AgentRunContinuation } from './AgentProvider';
import type {
  AgentProviderActorCommand,
  AgentProviderActorEmitted,
  AgentProviderActorInput,
  AgentProviderActorOptions,
  AgentProviderActorOutput,
  AgentProviderActorSnapshot,
} from './agentProviderActorTypes';
import { createClientToolResultEvent } from './clientToolResultEvent';
import { runAgentCommand } from './runAgentCommand';
import { type AgentRunResult, runAgentProvider } from './runAgentProvider';

/** Any actor system: xstate does not export the name. */
type AnyActorSystem = AnyActorRef['system'];

/** The scope XState gives the actor's logic. */
export type AgentProviderActorScope = ActorScope<
  AgentProviderActorSnapshot,
  AgentProviderActorCommand,
  AnyActorSystem,
  AgentProviderActorEmitted
>;

/** Marks the events the actor sends itself, so no other sender can pass for its run. */
export const OWN = Symbol('fromAgentProvider');

/** What the actor's run and store tell the actor. */
export type OwnEvent =
  /** The store changed: by `event` (told to the parent once the snapshot shows it), or by the history it started from. */
  | { type: 'agentProvider.changed'; own: typeof OWN; event?: AgentEvent }
  | { type: 'agentProvider.waiting'; own: typeof OWN; runIds: string[]; pendingInput: AgentPendingInput }
  | { type: 'agentProvider.continued'; own: typeof OWN; runIds: string[] }
  | { type: 'agentProvider.ended'; own: typeof OWN; output: AgentProviderActorOutput }
  | { type: 'agentProvider.failed'; own: typeof OWN; error: unknown };

export function isOwnEvent(event: EventObject): event is OwnEvent {
  return (event as { own?: unknown }).own === OWN;
}

/** The text of a message: the string, or its text parts joined. */
function textOf(message: AgentMessageState): string {
  if (typeof message.content === 'string') return message.content;
  return message.content.map((part) => (part.type === 'text' ? part.text : '')).join('');
}

/** The text of the last assistant message a run wrote, if any. */
function answerOf(state: AgentState, runId: string): string | undefined {
  for (let index = state.order.length - 1; index >= 0; index -= 1) {
    const ref = state.order[index];
    if (ref?.kind !== 'message') continue;
    const message = getOwn(state.messages, ref.key);
    if (message?.runId === runId && message.role === 'assistant') return textOf(message);
  }
  return undefined;
}

/**
 * Why the machines refused a command, in terms of what AgentState shows of its run and
 * entity; the machines decide, this only names what they saw.
 */
function refusalReason(state: AgentState, command: AgentCommand): string {
  const run = getOwn(state.runs, command.runId);
  if (run === undefined) return `run "${command.runId}" is not a run of session "${command.sessionId}"`;
  const waiting = isWaitingForInput(state, run) ? ' and waits for input' : '';
  const runStatus = `run "${run.id}" is ${run.status}${waiting}`;
  if (command.type === 'run.cancel') return runStatus;
  const entityId = commandEntityId(command);
  const key = getAgentEntityKey(run.id, entityId);
  const kind = command.type === 'approval.resolve' ? 'approval' : 'tool call';
  const entity = command.type === 'approval.resolve' ? getOwn(state.approvals, key) : getOwn(state.toolCalls, key);
  if (entity === undefined) return `${kind} "${entityId}" does not exist in run "${run.id}"`;
  return `${runStatus}; ${kind} "${entityId}" is ${entity.status}`;
}

function toCommandError(error: unknown): AgentCommandError {
  if (AgentCommandError.isInstance(error)) return error;
  // What the store threw at the command's events (strict mode), or anything else unforeseen.
  const message = error instanceof Error ? error.message : String(error);
  return new AgentCommandError('protocol_error', `The command's events were refused: ${message}`, { cause: error });
}

/** An answer to an approval the waiting run listed, kept for the run that continues it. */
interface RecordedAnswer {
  answer: AgentApprovalAnswer;
  command: AgentCommandOf<'approval.resolve'>;
  intent: AgentProviderActorCommand;
}

/**
 * The live part of one actor: its store, its runs and its commands. The actor's snapshot
 * is what this tells it (`OwnEvent`s); nothing here is in the snapshot.
 */
export class LiveAgentProviderActor<Input> {
  readonly store: AgentStore;
  private readonly controller = new AbortController();
  private readonly runIds: string[];
  /** Commands carried out by the provider, one at a time, in the order they came. */
  private lane: Promise<void> = Promise.resolve();
  /** Whether a run is streaming: the store is destroyed once none is and the actor has ended. */
  private streaming = false;
  /** The run that ended waiting for input, until a run continues it. */
  private waitingRunId: string | undefined;
  /** The answers given to the waiting run's approvals, by approval id. */
  private answers = new Map<string, RecordedAnswer>();
  /** The run the streaming run continues, with the answers it carries. */
  private continued: { runId: string; answers: Map<string, RecordedAnswer> } | undefined;

  constructor(
    private readonly options: AgentProviderActorOptions<Input>,
    private readonly input: AgentProviderActorInput<Input>,
    firstRunId: string,
    private readonly scope: AgentProviderActorScope,
  ) {
    this.runIds = [firstRunId];
    this.store = createAgentStore({
      ...(options.protocolMode === undefined ? {} : { protocolMode: options.protocolMode }),
      ...(options.now === undefined ? {} : { now: options.now }),
    });
    if (input.history !== undefined) this.store.reset(input.history);
  }

  private get now(): () => number {
    return this.options.now ?? Date.now;
  }

  private isActive(): boolean {
    return this.scope.self.getSnapshot().status === 'active';
  }

  private send(event: OwnEvent): void {
    if (this.isActive()) (this.scope.self as unknown as { send(event: OwnEvent): void }).send(event);
  }

  /** Sends the parent an event, and emits it, while the actor is active. */
  tell(event: AgentProviderActorEmitted): void {
    if (!this.isActive()) return;
    this.scope.emit(event);
    this.scope.self._parent?.send(event);
  }

  /** Every event of the actor's runs and commands goes to the store through here. */
  private readonly dispatch = (event: AgentEvent, admission?: AgentEventAdmission) => {
    const issue = this.store.dispatch(event, admission);
    // An event the store refused is in AgentState's issues, not forwarded.
    const forward = issue === undefined && this.input.forwardEvents === true;
    this.send(
      forward ? { type: 'agentProvider.changed', own: OWN, event } : { type: 'agentProvider.changed', own: OWN },
    );
    return issue;
  };

  start(): void {
    this.send({ type: 'agentProvider.changed', own: OWN });
    this.startRun(this.runIds[0] as string, this.input.continuation, this.input.history);
  }

  /**
   * The actor ended: stopped (its parent left the state that ran it), done or failed. The run
   * and the commands in flight are aborted; the store goes once no run streams.
   */
  end(): void {
    this.controller.abort(new DOMException('The agent actor has ended', 'AbortError'));
    if (!this.streaming) this.store.destroy();
  }

  private startRun(runId: string, continuation: AgentRunContinuation | undefined, history: AgentState | undefined) {
    this.streaming = true;
    const { provider, reconnect, now } = this.options;
    runAgentProvider({
      provider,
      input: this.input.input,
      sessionId: this.input.sessionId,
      runId,
      signal: this.controller.signal,
      onEvent: this.dispatch,
      ...(history === undefined ? {} : { history }),
      ...(continuation === undefined ? {} : { continuation }),
      ...(reconnect === undefined ? {} : { reconnect }),
      ...(now === undefined ? {} : { now }),
    })
      .then(
        (result) => this.runEnded(result),
        (error: unknown) => this.send({ type: 'agentProvider.failed', own: OWN, error }),
      )
      .catch((error: unknown) => this.send({ type: 'agentProvider.failed', own: OWN, error }))
      .finally(() => {
        this.streaming = false;
        if (!this.isActive()) this.end();
      });
  }

  private runEnded(result: AgentRunResult): void {
    for (const followOn of result.followOnRuns ?? []) this.runIds.push(followOn.runId);
    const last = result.followOnRuns?.at(-1) ?? result;
    this.settleAnswers();
    const state = this.store.getSnapshot();
    const run = getOwn(state.runs, last.runId);
    if (run !== undefined && isWaitingForInput(state, run)) {
      this.waitingRunId = last.runId;
      const pendingInput = selectPendingInput(state, last.runId);
      this.send({ type: 'agentProvider.waiting', own: OWN, runIds: [...this.runIds], pendingInput });
      return;
    }
    const output: AgentProviderActorOutput = {
      runId: last.runId,
      runIds: [...this.runIds],
      status: last.status,
      result: last,
      agentState: state,
    };
    if (run?.output !== undefined) output.output = run.output;
    const text = answerOf(state, last.runId);
    if (text !== undefined) output.text = text;
    if (run?.error !== undefined) output.error = run.error;
    this.send({ type: 'agentProvider.ended', own: OWN, output });
  }

  /**
   * A command from the parent: checked by the machines, then settled here or carried out by
   * the provider. It never throws: whatever goes wrong is told as `agent.commandFailed`.
   */
  command(intent: AgentProviderActorCommand): void {
    try {
      this.submit(intent);
    } catch (error) {
      // What the store threw at a tool result's event (strict mode).
      this.fail(intent, toCommandError(error));
    }
  }

  private submit(intent: AgentProviderActorCommand): void {
    const { type, runId = this.runIds.at(-1) as string, ...payload } = intent;
    const factory = createAgentCommandFactory({ sessionId: this.input.sessionId, runId, now: this.now });
    const parsed = parseAgentCommand(factory.create(type, payload as never));
    if (!parsed.success) {
      this.fail(intent, new AgentCommandError('invalid_command', `Invalid ${type}: ${parsed.error.message}`));
      return;
    }
    const command = parsed.value;
    if (!this.store.submit(command)) {
      const reason = refusalReason(this.store.getSnapshot(), command);
      this.fail(intent, new AgentCommandError('invalid_command', `${type} refused: ${reason}`));
      return;
    }
    if (runId === this.waitingRunId && command.type === 'tool.submit_result') {
      this.settleToolCall(command);
      return;
    }
    if (runId === this.waitingRunId && command.type === 'approval.resolve') {
      this.recordAnswer(command, intent);
      return;
    }
    this.lane = this.lane.then(() => this.execute(command, intent));
  }

  private fail(intent: AgentProviderActorCommand, error: AgentCommandError): void {
    this.tell({ type: 'agent.commandFailed', command: intent, error });
  }

  /** Carries out a command of a running run through the provider. Never rejects: a failure is told. */
  private async execute(command: AgentCommand, intent: AgentProviderActorCommand): Promise<void> {
    try {
      await runAgentCommand({
        provider: this.options.provider,
        command,
        signal: this.controller.signal,
        initialSequence: this.store.getSnapshot().lastSequenceByRun[command.runId] ?? 0,
        onEvent: this.dispatch,
        now: this.now,
      });
      this.store.settle(command);
    } catch (error) {
      // The run ended waiting on this very approval before it took the answer: the answer
      // goes with the run that continues it, as any answer to a waiting run does.
      if (command.type === 'approval.resolve' && this.isPendingApproval(command)) {
        this.recordAnswer(command, intent);
        return;
      }
      this.store.settle(command);
      this.fail(intent, toCommandError(error));
    }
  }

  private isPendingApproval(command: AgentCommandOf<'approval.resolve'>): boolean {
    if (command.runId !== this.waitingRunId) return false;
    const { approvalId } = command.payload;
    return selectPendingInput(this.store.getSnapshot(), command.runId).approvals.some(({ id }) => id === approvalId);
  }

  /** The application's result for a tool call the waiting run left to it: an event of that run. */
  private settleToolCall(command: AgentCommandOf<'tool.submit_result'>): void {
    const { toolCallId, result, error } = command.payload;
    this.dispatch(
      createClientToolResultEvent({
        sessionId: command.sessionId,
        runId: command.runId,
        afterSequence: this.store.getSnapshot().lastSequenceByRun[command.runId] ?? 0,
        timestamp: this.now(),
        toolCallId,
        result,
        error,
        commandId: command.commandId,
      }),
    );
    this.store.settle(command);
    this.continueWhenReady();
  }

  private recordAnswer(command: AgentCommandOf<'approval.resolve'>, intent: AgentProviderActorCommand): void {
    const { approvalId, decision, data } = command.payload;
    const answer: AgentApprovalAnswer = { approvalId, status: 'resolved', decision };
    if (data !== undefined) answer.data = data;
    this.answers.set(approvalId, { answer, command, intent });
    this.continueWhenReady();
  }

  /**
   * Continues the waiting run once it has everything it waited for: an answer to each of its
   * approvals, and a result for each of its tool calls (or an answered approval about it,
   * after which the runtime runs the tool).
   */
  private continueWhenReady(): void {
    const runId = this.waitingRunId;
    if (runId === undefined) return;
    const pending = selectPendingInput(this.store.getSnapshot(), runId);
    const answered = new Set<string>();
    for (const approval of pending.approvals) {
      if (!this.answers.has(approval.id)) return;
      if (approval.toolCallId !== undefined) answered.add(approval.toolCallId);
    }
    if (!pending.toolCalls.every((toolCall) => answered.has(toolCall.id))) return;
    const approvals = pending.approvals.map(({ id }) => (this.answers.get(id) as RecordedAnswer).answer);
    this.continued = { runId, answers: this.answers };
    this.answers = new Map();
    this.waitingRunId = undefined;
    const nextRunId = randomId();
    this.runIds.push(nextRunId);
    this.send({ type: 'agentProvider.continued', own: OWN, runIds: [...this.runIds] });
    this.startRun(nextRunId, { runId, approvals }, this.store.getSnapshot());
  }

  /** After the run that carried answers ended: an answer whose approval it did not resolve failed. */
  private settleAnswers(): void {
    const continued = this.continued;
    if (continued === undefined) return;
    this.continued = undefined;
    const state = this.store.getSnapshot();
    for (const [approvalId, { command, intent }] of continued.answers) {
      this.store.settle(command);
      const key = getAgentEntityKey(continued.runId, approvalId);
      if (getOwn(state.approvals, key)?.status === 'resolved') continue;
      const message = `The run that continued run "${continued.runId}" ended without resolving approval "${approvalId}"`;
      this.fail(intent, new AgentCommandError('provider_error', message, { retryable: true }));
    }
  }
}
