import { getOwn } from '../machines/agentStateProjection';
import { isWaitingForInput } from '../machines/pendingInput';
import type { AgentEventAdmission } from '../protocol/admittedEvents';
import type {
  AgentCommand,
  AgentCommandOf,
  AgentCommandPayloadMap,
  AgentCommandType,
} from '../protocol/commandSchemas';
import { createAgentCommandFactory } from '../protocol/createAgentCommandFactory';
import type { AgentEvent } from '../protocol/eventSchemas';
import { getAgentEntityKey } from '../protocol/getAgentEntityKey';
import { parseAgentCommand } from '../protocol/parseAgentEvent';
import type { AgentProtocolIssue } from '../protocol/protocolIssue';
import { AgentCommandError } from '../providers/AgentCommandError';
import type { AgentApprovalAnswer, AnyAgentProvider } from '../providers/AgentProvider';
import { createClientToolResultEvent } from '../providers/clientToolResultEvent';
import { runAgentCommand } from '../providers/runAgentCommand';
import { getAgentCommandKey } from './agentCommandKeys';
import { explainCommandRefusal } from './explainCommandRefusal';
import type { RuntimeCore } from './runtimeCore';

/** What an action resolves with: the command it created, or sent again. */
export interface AgentActionResult {
  commandId: string;
  idempotencyKey: string;
}

/** An answer to an approval a run ended waiting on, and the command that gave it. */
export interface RecordedAnswer {
  answer: AgentApprovalAnswer;
  commandId: string;
}

/** A command submitted and not settled yet. `provider` is undefined for input settled here. */
interface LiveCommand {
  command: AgentCommand;
  provider: AnyAgentProvider | undefined;
  controller: AbortController;
  resolve: (result: AgentActionResult) => void;
  reject: (error: AgentCommandError) => void;
}

const RUN_TERMINALS = new Set(['run.completed', 'run.failed', 'run.cancelled']);

function sameJson(left: unknown, right: unknown): boolean {
  return JSON.stringify(left) === JSON.stringify(right);
}

function toCommandError(error: unknown): AgentCommandError {
  if (AgentCommandError.isInstance(error)) return error;
  // What the store threw at the command's events (strict mode), or anything else unforeseen.
  const message = error instanceof Error ? error.message : String(error);
  return new AgentCommandError('protocol_error', `The command's events were refused: ${message}`, { cause: error });
}

export interface CommandRunnerOptions {
  cancelTimeoutMs: number;
  /** A waiting run got input here (a client tool result, an answer): it may be ready to continue. */
  onInput(runId: string): void;
}

/** The commands of one conversation: made, checked, queued per run, carried out and settled. */
export interface CommandRunner {
  /** Checks and submits one command; see `AgentActions`. */
  act<Type extends AgentCommandType>(
    type: Type,
    runId: string,
    payload: AgentCommandPayloadMap[Type],
  ): Promise<AgentActionResult>;
  /**
   * Puts an event into the store, and notices the terminal events commands wait for. Returns
   * the issue the store recorded when it refused the event (record mode), as `store.dispatch`.
   */
  // biome-ignore lint/suspicious/noConfusingVoidType: as AgentStore's dispatch
  dispatch(event: AgentEvent, admission?: AgentEventAdmission): AgentProtocolIssue | void;
  /** The answers kept for the approvals a run ended waiting on. */
  answersOf(runId: string): ReadonlyMap<string, RecordedAnswer> | undefined;
  /**
   * After the run that carried a waiting run's answers ended: each answer whose approval is
   * resolved succeeded; the others failed (their approvals wait again).
   */
  settleAnswers(runId: string, how: string, cause: unknown): void;
  /** Drops every command stream in flight: their commands fail `interrupted`. */
  abort(reason: unknown): void;
  /** Carries out one command, as its run's lane (`execute`) calls it. Never rejects: the outcome is the command's state. */
  execute(commandId: string): Promise<void>;
  /** Forgets the command states of a run that has finished, once none is submitting. */
  forgetIfFinished(runId: string): void;
}

/**
 * The command side of the interaction runtime. A command is checked before anything is
 * made (schema, the provider's capability, the run's lane, then the machines through
 * `store.submit`: the runtime never decides a precondition with its own `if`s, it only
 * explains the machines' refusal), then carried out in its run's lane through
 * `runAgentCommand`, or settled here: a waiting run's tool results become its events, and
 * answers to its approvals wait for the run that continues it.
 */
export function createCommandRunner(core: RuntimeCore, options: CommandRunnerOptions): CommandRunner {
  const { store, book, sessionId, now } = core;
  const commands = new Map<string, LiveCommand>();
  const answers = new Map<string, Map<string, RecordedAnswer>>();
  /** Who waits for a run's terminal event (a cancel waiting for its confirmation). */
  const terminalWaiters = new Map<string, Set<() => void>>();

  /** Whether a cancel of the run is submitted and not settled (it may not have reached the lane yet). */
  const isCancelling = (runId: string) => {
    for (const { command } of commands.values())
      if (command.type === 'run.cancel' && command.runId === runId) return true;
    return false;
  };

  const forgetIfFinished = (runId: string) => {
    const state = store.getSnapshot();
    const run = getOwn(state.runs, runId);
    if (run === undefined || run.status === 'running' || isWaitingForInput(state, run)) return;
    if (book.hasSubmitting(runId) || (answers.get(runId)?.size ?? 0) > 0) return;
    book.forgetRun(runId);
    answers.delete(runId);
    core.closeLane(runId);
    core.schedule();
  };

  const dispatch = (event: AgentEvent, admission?: AgentEventAdmission) => {
    const refused = store.dispatch(event, admission);
    // A run that started is saved at once, as one that ended: a refresh within the throttle
    // window must not lose it (an automatic continuation above all, whose waiting run then
    // looks answered and finished).
    if (event.type === 'run.started') core.checkpoint('started');
    if (!RUN_TERMINALS.has(event.type)) return refused;
    core.checkpoint('terminal');
    const waiters = terminalWaiters.get(event.runId);
    if (waiters !== undefined) for (const wake of [...waiters]) wake();
    forgetIfFinished(event.runId);
    return refused;
  };

  const succeed = (live: LiveCommand) => {
    commands.delete(live.command.commandId);
    store.settle(live.command);
    book.settle(live.command, undefined);
    core.schedule();
    core.checkpoint('command');
    live.resolve({ commandId: live.command.commandId, idempotencyKey: live.command.idempotencyKey });
    forgetIfFinished(live.command.runId);
  };

  const fail = (live: LiveCommand, error: AgentCommandError) => {
    commands.delete(live.command.commandId);
    store.settle(live.command);
    book.settle(live.command, error);
    if (live.command.type === 'run.cancel') core.settleCancel(live.command.runId);
    core.schedule();
    core.checkpoint('command');
    live.reject(error);
    forgetIfFinished(live.command.runId);
  };

  /** Waits for the run's terminal event, or fails `interrupted` after the cancel timeout. */
  const waitForTerminal = (runId: string, signal: AbortSignal): Promise<void> =>
    new Promise<void>((resolve, reject) => {
      const status = getOwn(store.getSnapshot().runs, runId)?.status;
      if (status !== undefined && status !== 'running') {
        resolve();
        return;
      }
      const waiters = terminalWaiters.get(runId) ?? new Set<() => void>();
      terminalWaiters.set(runId, waiters);
      const done = () => {
        clearTimeout(timer);
        signal.removeEventListener('abort', onAbort);
        waiters.delete(wake);
        // One cancel of a run at a time (its lane and `isCancelling` refuse a second): a run has one waiter.
        /* v8 ignore else */
        if (waiters.size === 0) terminalWaiters.delete(runId);
      };
      const wake = () => {
        done();
        resolve();
      };
      const onAbort = () => {
        done();
        const message = 'The cancel was interrupted before the runtime confirmed it';
        reject(new AgentCommandError('interrupted', message, { retryable: true, cause: signal.reason }));
      };
      const timer = setTimeout(() => {
        done();
        const message = `The runtime did not confirm the cancel of run "${runId}" within ${options.cancelTimeoutMs} ms; the run stays as it is`;
        reject(new AgentCommandError('interrupted', message, { retryable: true }));
      }, options.cancelTimeoutMs);
      waiters.add(wake);
      signal.addEventListener('abort', onAbort, { once: true });
    });

  /** After the runtime confirmed a cancel, the run's own stream is closed here, quietly. */
  const closeCancelledRun = (runId: string) => {
    const status = getOwn(store.getSnapshot().runs, runId)?.status;
    if (status !== 'cancelled') {
      throw new AgentCommandError('provider_error', `Run "${runId}" ended ${status} instead of cancelled`);
    }
    const run = core.runs.get(runId);
    if (run?.controller !== undefined) {
      run.closedByCommand = true;
      run.controller.abort(new DOMException('The run was cancelled by the runtime', 'AbortError'));
    }
  };

  /** Settles a tool call a waiting run left to the application, with an event of that run. */
  const settleClientTool = (command: AgentCommandOf<'tool.submit_result'>) => {
    const { toolCallId, result, error } = command.payload;
    dispatch(
      createClientToolResultEvent({
        sessionId,
        runId: command.runId,
        afterSequence: store.getSnapshot().lastSequenceByRun[command.runId] ?? 0,
        timestamp: now(),
        toolCallId,
        result,
        error,
        commandId: command.commandId,
      }),
    );
  };

  /** Whether the run refused an answer because it has since ended, waiting on that very approval. */
  const endedWaitingOn = (command: AgentCommand, error: unknown): command is AgentCommandOf<'approval.resolve'> => {
    if (command.type !== 'approval.resolve' || !AgentCommandError.isInstance(error)) return false;
    if (error.code !== 'invalid_command') return false;
    const { approvalId } = command.payload;
    const state = store.getSnapshot();
    const run = getOwn(state.runs, command.runId);
    if (run === undefined || !isWaitingForInput(state, run) || run.pendingApprovalIds?.includes(approvalId) !== true) {
      return false;
    }
    return getOwn(state.approvals, getAgentEntityKey(command.runId, approvalId))?.status === 'waiting';
  };

  /** Carries out one command, in its run's lane. Never rejects: the outcome is the command's state. */
  const execute = async (commandId: string) => {
    const live = commands.get(commandId);
    // A lane is given only commands `act` has recorded, and only `execute` settles a queued one.
    /* v8 ignore if */
    if (live === undefined) return;
    const { command } = live;
    try {
      if (live.provider === undefined) {
        settleClientTool(command as AgentCommandOf<'tool.submit_result'>);
      } else {
        await runAgentCommand({
          provider: live.provider,
          command,
          signal: live.controller.signal,
          initialSequence: store.getSnapshot().lastSequenceByRun[command.runId] ?? 0,
          onEvent: dispatch,
          now,
        });
        if (command.type === 'run.cancel') {
          await waitForTerminal(command.runId, live.controller.signal);
          closeCancelledRun(command.runId);
        }
      }
      succeed(live);
    } catch (error) {
      // The run ended waiting on this approval before it took the answer: the answer goes
      // with the run that continues it, as it does for any run waiting for input.
      if (endedWaitingOn(command, error)) recordAnswer(command);
      else fail(live, toCommandError(error));
    }
    if (command.type === 'tool.submit_result') options.onInput(command.runId);
  };

  /** Keeps an answer to an approval a run ended waiting on, for the run that continues it. */
  const recordAnswer = (command: AgentCommandOf<'approval.resolve'>) => {
    const { approvalId, decision, data } = command.payload;
    const recorded = answers.get(command.runId) ?? new Map<string, RecordedAnswer>();
    answers.set(command.runId, recorded);
    const answer = { approvalId, status: 'resolved' as const, decision, ...(data === undefined ? {} : { data }) };
    recorded.set(approvalId, { answer, commandId: command.commandId });
    options.onInput(command.runId);
  };

  const act = <Type extends AgentCommandType>(
    type: Type,
    runId: string,
    payload: AgentCommandPayloadMap[Type],
  ): Promise<AgentActionResult> => {
    if (core.isRestoring()) {
      const message = `${type} refused: the conversation is being restored from its checkpoint; try again once it is`;
      return Promise.reject(new AgentCommandError('restoring', message, { retryable: true }));
    }
    const state = store.getSnapshot();
    const run = getOwn(state.runs, runId);
    // A waiting run's input is settled here (tool results) or carried by its continuation (answers).
    const local =
      run !== undefined &&
      isWaitingForInput(state, run) &&
      (type === 'tool.submit_result' || type === 'approval.resolve');
    const provider = local ? undefined : core.providerOf(runId);
    const factory = createAgentCommandFactory({ sessionId, runId, now });
    const fresh = factory.create(type, payload);
    const latest = book.latest(getAgentCommandKey(fresh));
    // The same intent sent again keeps its command id and idempotency key; a changed one is new.
    const command =
      latest !== undefined && latest.status !== 'submitting' && sameJson(latest.command.payload, payload)
        ? factory.resend(latest.command as AgentCommandOf<Type>)
        : fresh;
    const parsed = parseAgentCommand(command);
    if (!parsed.success) {
      return Promise.reject(new AgentCommandError('invalid_command', `Invalid ${type}: ${parsed.error.message}`));
    }
    if (
      provider !== undefined &&
      (!(provider.capabilities.commands ?? []).includes(type) || typeof provider.executeCommand !== 'function')
    ) {
      const message = `Provider "${provider.id}" does not support ${type}`;
      return Promise.reject(new AgentCommandError('unsupported_capability', message));
    }
    const cancels = type === 'run.cancel';
    const laneEvent = { type: 'lane.enqueue', commandId: command.commandId, cancels } as const;
    // The lane refuses commands behind a cancel; a cancel on its way to the lane (sent while
    // the runtime's actor was busy) is not in it yet, and counts the same.
    if (!local && (core.findLane(runId)?.getSnapshot().can(laneEvent) === false || isCancelling(runId))) {
      const message = `Run "${runId}" is being cancelled: later commands are refused`;
      return Promise.reject(new AgentCommandError('invalid_command', message));
    }
    if (!store.submit(command)) {
      const reason = explainCommandRefusal(store.getSnapshot(), command);
      forgetIfFinished(runId);
      return Promise.reject(new AgentCommandError('invalid_command', `${type} refused: ${reason}`));
    }
    return new Promise<AgentActionResult>((resolve, reject) => {
      commands.set(command.commandId, { command, provider, controller: new AbortController(), resolve, reject });
      book.submitting(command);
      core.schedule();
      core.checkpoint('command');
      if (local && type === 'approval.resolve') recordAnswer(command as AgentCommandOf<'approval.resolve'>);
      else core.enqueueCommand(runId, command.commandId, cancels);
    });
  };

  const settleAnswers = (runId: string, how: string, cause: unknown) => {
    const recorded = answers.get(runId);
    if (recorded === undefined) return;
    const state = store.getSnapshot();
    for (const [approvalId, { commandId }] of [...recorded]) {
      recorded.delete(approvalId);
      const live = commands.get(commandId);
      // A kept answer's command is settled here only: it is still live.
      /* v8 ignore if */
      if (live === undefined) continue;
      if (getOwn(state.approvals, getAgentEntityKey(runId, approvalId))?.status === 'resolved') {
        succeed(live);
        continue;
      }
      const message = `The run that continued run "${runId}" ${how} without resolving approval "${approvalId}"`;
      fail(live, new AgentCommandError('provider_error', message, { retryable: true, cause }));
    }
    forgetIfFinished(runId);
  };

  return {
    act,
    dispatch,
    answersOf: (runId) => answers.get(runId),
    settleAnswers,
    abort(reason) {
      for (const live of commands.values()) live.controller.abort(reason);
    },
    forgetIfFinished,
    execute,
  };
}
