import { type Actor, createActor, fromPromise } from 'xstate';
import type { AgentState } from '../machines/agentState';
import { getOwn } from '../machines/agentStateProjection';
import { type AgentStore, type AgentStoreOptions, createAgentStore } from '../machines/createAgentStore';
import { isWaitingForInput } from '../machines/pendingInput';
import { type AgentMessageInfo, selectMessages } from '../machines/selectors';
import type { AgentEventAdmission } from '../protocol/admittedEvents';
import type {
  AgentCommand,
  AgentCommandOf,
  AgentCommandPayloadMap,
  AgentCommandType,
} from '../protocol/commandSchemas';
import { createAgentCommandFactory } from '../protocol/createAgentCommandFactory';
import { createAgentEventFactory } from '../protocol/createAgentEventFactory';
import type { AgentEvent } from '../protocol/eventSchemas';
import { getAgentEntityKey } from '../protocol/getAgentEntityKey';
import { parseAgentCommand } from '../protocol/parseAgentEvent';
import { randomId } from '../protocol/randomId';
import { AgentCommandError } from '../providers/AgentCommandError';
import {
  type AgentProvider,
  type AgentRunContinuation,
  type AnyAgentProvider,
  isAgentProvider,
} from '../providers/AgentProvider';
import { AgentProviderError } from '../providers/AgentProviderError';
import { runAgentCommand } from '../providers/runAgentCommand';
import { type AgentRunResult, runAgentProvider } from '../providers/runAgentProvider';
import { getAgentCommandKey } from './agentCommandKeys';
import { answersFor, isReadyToContinue, type RecordedAnswer } from './agentLoop';
import { type AgentCommandState, CommandBook } from './commandBook';
import { commandLaneMachine } from './commandLaneMachine';
import { explainCommandRefusal } from './explainCommandRefusal';

export interface XChatRuntimeOptions<Input, Request, Chunk, Context> {
  /** The provider runs use unless `request` is given another. */
  provider: AgentProvider<Input, Request, Chunk, Context>;
  /** The session every run of this chat belongs to. Default: a random id. */
  sessionId?: string;
  store?: AgentStoreOptions;
  /**
   * When a run that ended waiting for input has every tool result and approval answer it
   * waited for, start the run that continues the conversation. Default `true`.
   */
  autoContinue?: boolean;
  /**
   * Automatic continuations in a row before the runtime stops and leaves it to
   * `agentActions.continueRun` (a model that keeps calling tools must not loop forever).
   * A request of the user starts the count again. Default 5.
   */
  maxAutoContinuations?: number;
  /** How long `cancelRun` waits for the runtime's `run.cancelled` before it fails. Default 10 000 ms. */
  cancelTimeoutMs?: number;
  /** The clock of command timestamps and command states. Default `Date.now`. */
  now?: () => number;
}

/** What a chat view reads. The same object until something in it changes. */
export interface XChatSnapshot {
  agentState: AgentState;
  /** The session's messages as `{ id, message, status }`, in arrival order. */
  messages: AgentMessageInfo[];
  /** A request of this runtime is in flight: its run has not ended yet. */
  isRequesting: boolean;
  /** Each command of a run not finished yet, by command id. Never part of AgentState. */
  commandStates: Readonly<Record<string, AgentCommandState>>;
  /** The latest command id of each action key (`getAgentActionKey`). */
  latestCommandByAction: Readonly<Record<string, string>>;
  /**
   * The last error a run of this runtime broke off with outside a caller's await (an
   * automatic continuation whose provider broke its contract, say). Runs that fail are in AgentState.
   */
  error: unknown;
}

export interface XChatRequestOptions<Input> {
  /** The provider of this run; the conversation stays the same whichever provider runs it. */
  // biome-ignore lint/suspicious/noExplicitAny: a provider of this input and any request, chunk and context
  provider?: AgentProvider<Input, any, any, any>;
}

/** What an action resolves with: the command it created, or sent again. */
export interface AgentActionResult {
  commandId: string;
  idempotencyKey: string;
}

/**
 * The user's intents, checked by the machines before anything is sent: a failed
 * precondition or a missing capability rejects with an `AgentCommandError` (its message
 * names the precondition), creates no command and calls no provider. Each action resolves
 * when its command has succeeded and rejects with the `AgentCommandError` it failed with;
 * its state is in `commandStates` either way.
 */
export interface AgentActions {
  /**
   * Sends a decision on a waiting approval. In a running run it goes to the provider's
   * `executeCommand`; on an approval a run ended waiting on (an interrupt), the answer is
   * kept until every approval and tool call the run waits on is answered, then a run that
   * continues it carries the answers (AG-UI `resume`), and the command succeeds once that
   * run has resolved the approval. The same decision sent again reuses its idempotency key.
   */
  resolveApproval(input: {
    runId: string;
    approvalId: string;
    decision: 'approved' | 'rejected' | 'modified';
    data?: unknown;
    expectedVersion?: string | number;
  }): Promise<AgentActionResult>;
  /** Asks the runtime to run a failed, retryable tool call again: the retry arrives as a new tool call. */
  retryTool(input: { runId: string; toolCallId: string }): Promise<AgentActionResult>;
  /**
   * Asks the runtime to cancel a running run and waits for its `run.cancelled`; then the
   * run's stream is closed here. No confirmation within `cancelTimeoutMs`: the command fails
   * and the run stays as it is. Later commands of the run are refused meanwhile.
   */
  cancelRun(input: { runId: string; reason?: string }): Promise<AgentActionResult>;
  /**
   * The result of a tool the application executed. In a running run it goes to the
   * provider (`tool.submit_result`); for a tool call a run ended waiting on, the tool call is
   * settled here (`completed` or `failed`, `meta.agentstate.executedBy: 'client'`), and when
   * the run has all it waited for, the conversation continues (`autoContinue`).
   */
  submitToolResult(input: {
    runId: string;
    toolCallId: string;
    result?: unknown;
    error?: { message: string; code?: string; retryable?: boolean };
  }): Promise<AgentActionResult>;
  /**
   * Continues a run that ended waiting for input now, without waiting for the rest: the
   * approvals not answered go as `cancelled`. For `autoContinue: false`, or after
   * `maxAutoContinuations`.
   */
  continueRun(input: { runId: string }): Promise<AgentRunResult>;
}

/** One conversation: its store, the runs it started, its commands, and what a view reads. */
export interface XChatRuntime<Input> {
  readonly sessionId: string;
  readonly store: AgentStore;
  readonly agentActions: AgentActions;
  getSnapshot(): XChatSnapshot;
  subscribe(listener: () => void): () => void;
  /**
   * Starts a new run with this input; the provider builds its request with the
   * conversation so far. Resolves with how the run ended; a failed or cancelled run is a
   * result, not a rejection. It rejects only when the provider breaks its contract
   * (`AgentProviderError`) or the store throws (strict protocol mode).
   */
  request(input: Input, options?: XChatRequestOptions<Input>): Promise<AgentRunResult>;
  /**
   * Drops the local streams at once: every run this runtime is streaming ends `cancelled`
   * here, and commands in flight fail `interrupted`. It never asks the runtime to stop
   * (that is `agentActions.cancelRun`) and never calls `executeCommand`.
   */
  abort(reason?: unknown): void;
  /**
   * Marks one user of this runtime (a mounted chat). When the last one releases it, the
   * runs still going are cancelled: unmounting a chat is the same abort as the user's.
   */
  retain(): () => void;
}

/** A run this runtime started. */
interface RunEntry {
  provider: AnyAgentProvider;
  input: unknown;
  /** While its stream is open. */
  controller: AbortController | undefined;
  /** A cancel was confirmed: the stream is closed here and its last events are dropped. */
  closedByCommand: boolean;
  /** Automatic continuations in a row that led to this run. */
  autoDepth: number;
}

/** A command submitted and not settled yet. */
interface LiveCommand {
  command: AgentCommand;
  provider: AnyAgentProvider | undefined;
  controller: AbortController;
  resolve: (result: AgentActionResult) => void;
  reject: (error: AgentCommandError) => void;
}

type CommandLane = Actor<typeof commandLaneMachine>;

const RUN_TERMINALS = new Set(['run.completed', 'run.failed', 'run.cancelled']);

function checkAgentProvider(provider: unknown): void {
  if (!isAgentProvider(provider)) {
    throw new AgentProviderError(
      'unsupported_protocol',
      String((provider as { id?: unknown } | undefined)?.id),
      'is not an AgentProvider: useXChat needs protocol.name "agent-event"',
    );
  }
}

function sameJson(left: unknown, right: unknown): boolean {
  return JSON.stringify(left) === JSON.stringify(right);
}

function toCommandError(error: unknown): AgentCommandError {
  if (AgentCommandError.isInstance(error)) return error;
  // What the store threw at the command's events (strict mode), or anything else unforeseen.
  const message = error instanceof Error ? error.message : String(error);
  return new AgentCommandError('protocol_error', `The command's events were refused: ${message}`, { cause: error });
}

/**
 * The interaction runtime behind `useXChat`, without React: one store per conversation,
 * runs started through `runAgentProvider` with the conversation so far, the user's
 * commands (`agentActions`) checked by the machines and sent through `runAgentCommand`
 * one at a time per run, their command states, and the agent loop: client tool results,
 * answers to interrupts, and the runs that continue the conversation after them.
 *
 * @example
 * const chat = createXChatRuntime({ provider, sessionId: 'conversation-1' });
 * chat.subscribe(() => render(chat.getSnapshot()));
 * const { runId } = await chat.request({ prompt: 'Book the flight' });
 * const [approval] = selectPendingInput(chat.getSnapshot().agentState, runId).approvals;
 * await chat.agentActions.resolveApproval({ runId, approvalId: approval.id, decision: 'approved' });
 */
export function createXChatRuntime<Input, Request, Chunk, Context>(
  options: XChatRuntimeOptions<Input, Request, Chunk, Context>,
): XChatRuntime<Input> {
  checkAgentProvider(options.provider);
  const sessionId = options.sessionId ?? randomId();
  const now = options.now ?? Date.now;
  const autoContinue = options.autoContinue ?? true;
  const maxAutoContinuations = options.maxAutoContinuations ?? 5;
  const cancelTimeoutMs = options.cancelTimeoutMs ?? 10_000;
  const store = createAgentStore(options.store);
  const runs = new Map<string, RunEntry>();
  const commands = new Map<string, LiveCommand>();
  const lanes = new Map<string, CommandLane>();
  /** Answers to the approvals of runs that ended waiting on them, by run and approval. */
  const answers = new Map<string, Map<string, RecordedAnswer>>();
  /** Waiting runs a continuation has been started for. */
  const continued = new Set<string>();
  /** Who waits for a run's terminal event (a cancel waiting for its confirmation). */
  const terminalWaiters = new Map<string, Set<() => void>>();
  const book = new CommandBook(now);
  const listeners = new Set<() => void>();
  let holders = 0;
  let snapshot: XChatSnapshot | undefined;
  let lastError: unknown;

  let scheduled = false;
  const notify = () => {
    scheduled = false;
    for (const listener of [...listeners]) listener();
  };
  // Listeners hear of changes in a task of their own, after the run has dispatched what
  // one read of the stream holds: a transport yields frame by frame, through microtasks,
  // and reading AgentState after each event would undo the store's coalescing.
  const schedule = () => {
    if (scheduled) return;
    scheduled = true;
    setTimeout(notify, 0);
  };
  store.subscribe(schedule);

  const streaming = () => {
    let count = 0;
    for (const entry of runs.values()) if (entry.controller !== undefined) count += 1;
    return count;
  };

  const getSnapshot = (): XChatSnapshot => {
    const agentState = store.getSnapshot();
    // In flight from the call until the run has ended. Not "a run is running" in AgentState:
    // a run whose events a strict store refused stays running there, with nobody streaming it.
    const isRequesting = streaming() > 0;
    if (
      snapshot?.agentState !== agentState ||
      snapshot.isRequesting !== isRequesting ||
      snapshot.commandStates !== book.states ||
      snapshot.latestCommandByAction !== book.latestByAction ||
      snapshot.error !== lastError
    ) {
      snapshot = {
        agentState,
        messages: snapshot?.agentState === agentState ? snapshot.messages : selectMessages(agentState),
        isRequesting,
        commandStates: book.states,
        latestCommandByAction: book.latestByAction,
        error: lastError,
      };
    }
    return snapshot;
  };

  // --- Events into the store -------------------------------------------------------------

  /** A run's terminal event went into the store: wake who waits for it, and tidy up. */
  const onRunTerminal = (runId: string) => {
    const waiters = terminalWaiters.get(runId);
    if (waiters !== undefined) for (const wake of [...waiters]) wake();
    forgetIfFinished(runId);
  };

  const dispatch = (event: AgentEvent, admission?: AgentEventAdmission) => {
    store.dispatch(event, admission);
    if (RUN_TERMINALS.has(event.type)) onRunTerminal(event.runId);
  };

  // --- Runs ------------------------------------------------------------------------------

  const startRun = async (
    input: unknown,
    provider: AnyAgentProvider,
    continuation: AgentRunContinuation | undefined,
    autoDepth: number,
  ): Promise<AgentRunResult> => {
    checkAgentProvider(provider);
    const runId = randomId();
    const entry: RunEntry = { provider, input, controller: new AbortController(), closedByCommand: false, autoDepth };
    runs.set(runId, entry);
    schedule();
    try {
      return await runAgentProvider({
        provider,
        input,
        sessionId,
        runId,
        signal: (entry.controller as AbortController).signal,
        history: store.getSnapshot(),
        ...(continuation === undefined ? {} : { continuation }),
        onEvent: (event, admission) => {
          // After a confirmed cancel the stream is closed here: its closing events are not news.
          if (!entry.closedByCommand) dispatch(event, admission);
        },
        now,
      });
    } finally {
      entry.controller = undefined;
      schedule();
    }
  };

  const request = (input: Input, requestOptions: XChatRequestOptions<Input> = {}): Promise<AgentRunResult> =>
    startRun(input, (requestOptions.provider ?? options.provider) as AnyAgentProvider, undefined, 0);

  /** The provider commands of a run go to: the one that ran it here, else the runtime's. */
  const providerOf = (runId: string): AnyAgentProvider =>
    runs.get(runId)?.provider ?? (options.provider as AnyAgentProvider);

  /** The input a continuation of a run is made with: the run's own. */
  const inputOf = (runId: string): unknown =>
    runs.has(runId) ? runs.get(runId)?.input : getOwn(store.getSnapshot().runs, runId)?.input;

  /**
   * Starts the run that continues a waiting run with its answers, then settles the answer
   * commands by what that run did: an approval it resolved succeeded, one it left waiting
   * failed, and may be answered again.
   */
  const continueWaitingRun = async (runId: string, dismissRest: boolean, autoDepth: number) => {
    const state = store.getSnapshot();
    const recorded = answers.get(runId);
    const continuation: AgentRunContinuation = { runId, approvals: answersFor(state, runId, recorded, dismissRest) };
    continued.add(runId);
    let result: AgentRunResult | undefined;
    let failure: unknown;
    try {
      result = await startRun(inputOf(runId), providerOf(runId), continuation, autoDepth);
      return result;
    } catch (error) {
      failure = error;
      throw error;
    } finally {
      settleAnswers(runId, result, failure);
    }
  };

  const settleAnswers = (runId: string, result: AgentRunResult | undefined, failure: unknown) => {
    const recorded = answers.get(runId);
    if (recorded === undefined) return;
    const state = store.getSnapshot();
    for (const [approvalId, { commandId }] of [...recorded]) {
      const live = commands.get(commandId);
      if (live === undefined) continue;
      const approval = getOwn(state.approvals, getAgentEntityKey(runId, approvalId));
      if (approval?.status === 'resolved') {
        recorded.delete(approvalId);
        succeed(live);
        continue;
      }
      const how = result === undefined ? 'broke off' : `ended ${result.status}`;
      recorded.delete(approvalId);
      fail(
        live,
        new AgentCommandError(
          'provider_error',
          `The run that continued run "${runId}" ${how} without resolving approval "${approvalId}"`,
          { retryable: true, cause: failure ?? result?.error },
        ),
      );
    }
    // Not resolved: the run still waits, and a new answer may continue it again.
    const run = getOwn(state.runs, runId);
    if (run !== undefined && isWaitingForInput(state, run)) continued.delete(runId);
    forgetIfFinished(runId);
  };

  /** After an answer or a client tool result: continue the run when it has all it waited for. */
  const maybeContinue = (runId: string) => {
    if (!autoContinue || continued.has(runId)) return;
    const depth = (runs.get(runId)?.autoDepth ?? 0) + 1;
    if (depth > maxAutoContinuations) return;
    if (!isReadyToContinue(store.getSnapshot(), runId, answers.get(runId))) return;
    continueWaitingRun(runId, false, depth).catch((error: unknown) => {
      lastError = error;
      schedule();
    });
  };

  // --- Commands --------------------------------------------------------------------------

  const forgetIfFinished = (runId: string) => {
    const run = getOwn(store.getSnapshot().runs, runId);
    if (run === undefined || run.status === 'running') return;
    if (isWaitingForInput(store.getSnapshot(), run) || book.hasSubmitting(runId)) return;
    if (answers.get(runId)?.size) return;
    book.forgetRun(runId);
    answers.delete(runId);
    lanes.get(runId)?.stop();
    lanes.delete(runId);
    schedule();
  };

  const succeed = (live: LiveCommand) => {
    commands.delete(live.command.commandId);
    store.settle(live.command);
    book.settle(live.command, undefined);
    schedule();
    live.resolve({ commandId: live.command.commandId, idempotencyKey: live.command.idempotencyKey });
    forgetIfFinished(live.command.runId);
  };

  const fail = (live: LiveCommand, error: AgentCommandError) => {
    commands.delete(live.command.commandId);
    store.settle(live.command);
    book.settle(live.command, error);
    if (live.command.type === 'run.cancel') lanes.get(live.command.runId)?.send({ type: 'lane.cancel_settled' });
    schedule();
    live.reject(error);
    forgetIfFinished(live.command.runId);
  };

  /** Waits for the run's terminal event, or fails `interrupted` after the cancel timeout. */
  const waitForTerminal = (runId: string, signal: AbortSignal): Promise<void> =>
    new Promise<void>((resolve, reject) => {
      const ended = () => {
        const status = getOwn(store.getSnapshot().runs, runId)?.status;
        return status !== undefined && status !== 'running';
      };
      if (ended()) {
        resolve();
        return;
      }
      let waiters = terminalWaiters.get(runId);
      if (waiters === undefined) {
        waiters = new Set();
        terminalWaiters.set(runId, waiters);
      }
      const own = waiters;
      const done = () => {
        clearTimeout(timer);
        signal.removeEventListener('abort', onAbort);
        own.delete(wake);
        if (own.size === 0) terminalWaiters.delete(runId);
      };
      const wake = () => {
        done();
        resolve();
      };
      const onAbort = () => {
        done();
        reject(
          new AgentCommandError('interrupted', 'The cancel was interrupted before the runtime confirmed it', {
            retryable: true,
            cause: signal.reason,
          }),
        );
      };
      const timer = setTimeout(() => {
        done();
        reject(
          new AgentCommandError(
            'interrupted',
            `The runtime did not confirm the cancel of run "${runId}" within ${cancelTimeoutMs} ms; the run stays as it is`,
            { retryable: true },
          ),
        );
      }, cancelTimeoutMs);
      own.add(wake);
      signal.addEventListener('abort', onAbort, { once: true });
    });

  /** After the runtime confirmed a cancel, the run's own stream is closed here, quietly. */
  const closeCancelledRun = (runId: string) => {
    const status = getOwn(store.getSnapshot().runs, runId)?.status;
    if (status !== 'cancelled') {
      throw new AgentCommandError('provider_error', `Run "${runId}" ended ${status} instead of cancelled`);
    }
    const entry = runs.get(runId);
    if (entry?.controller !== undefined) {
      entry.closedByCommand = true;
      entry.controller.abort(new DOMException('The run was cancelled by the runtime', 'AbortError'));
    }
  };

  /** Settles a tool call a waiting run left to the application, with an event of that run. */
  const settleClientTool = (command: AgentCommandOf<'tool.submit_result'>) => {
    const initialSequence = store.getSnapshot().lastSequenceByRun[command.runId] ?? 0;
    const events = createAgentEventFactory({ sessionId, runId: command.runId, initialSequence, now });
    const meta = { agentstate: { executedBy: 'client', commandId: command.commandId } };
    const { toolCallId, result, error } = command.payload;
    const event =
      error !== undefined
        ? events.create('tool.failed', { toolCallId, error }, { meta })
        : events.create('tool.completed', result === undefined ? { toolCallId } : { toolCallId, result }, { meta });
    dispatch(event);
  };

  /** Carries out one command, in its run's lane. Never rejects: the outcome is the command's state. */
  const execute = async (commandId: string) => {
    const live = commands.get(commandId);
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
      fail(live, toCommandError(error));
    }
    if (command.type === 'tool.submit_result') maybeContinue(command.runId);
  };

  const laneOf = (runId: string): CommandLane => {
    let lane = lanes.get(runId);
    if (lane === undefined) {
      lane = createActor(
        commandLaneMachine.provide({
          actors: { execute: fromPromise(({ input }: { input: { commandId: string } }) => execute(input.commandId)) },
        }),
        { input: { runId } },
      );
      lane.start();
      lanes.set(runId, lane);
    }
    return lane;
  };

  /**
   * The one way a command is made: checked (schema, capability, the lane, the machines),
   * then submitting, then carried out, or kept as an answer for a waiting run.
   */
  const act = <Type extends AgentCommandType>(
    type: Type,
    runId: string,
    payload: AgentCommandPayloadMap[Type],
  ): Promise<AgentActionResult> => {
    const state = store.getSnapshot();
    const run = getOwn(state.runs, runId);
    const waiting = run !== undefined && isWaitingForInput(state, run);
    // A waiting run's input is settled here (tool results) or carried by its continuation (answers).
    const local = waiting && (type === 'tool.submit_result' || type === 'approval.resolve');
    const provider = local ? undefined : providerOf(runId);
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
    if (provider !== undefined) {
      if (!(provider.capabilities.commands ?? []).includes(type) || typeof provider.executeCommand !== 'function') {
        return Promise.reject(
          new AgentCommandError('unsupported_capability', `Provider "${provider.id}" does not support ${type}`),
        );
      }
    }
    const lane = laneOf(runId);
    const laneEvent = { type: 'lane.enqueue', commandId: command.commandId, cancels: type === 'run.cancel' } as const;
    if (!local && !lane.getSnapshot().can(laneEvent)) {
      return Promise.reject(
        new AgentCommandError('invalid_command', `Run "${runId}" is being cancelled: later commands are refused`),
      );
    }
    if (!store.submit(command)) {
      const reason = explainCommandRefusal(store.getSnapshot(), command);
      forgetIfFinished(runId);
      return Promise.reject(new AgentCommandError('invalid_command', `${type} refused: ${reason}`));
    }
    return new Promise<AgentActionResult>((resolve, reject) => {
      const live: LiveCommand = { command, provider, controller: new AbortController(), resolve, reject };
      commands.set(command.commandId, live);
      book.submitting(command);
      schedule();
      if (local && type === 'approval.resolve') {
        const { approvalId, decision, data } = (command as AgentCommandOf<'approval.resolve'>).payload;
        let recorded = answers.get(runId);
        if (recorded === undefined) {
          recorded = new Map();
          answers.set(runId, recorded);
        }
        const answer =
          data === undefined
            ? { approvalId, status: 'resolved' as const, decision }
            : { approvalId, status: 'resolved' as const, decision, data };
        recorded.set(approvalId, { answer, commandId: command.commandId });
        maybeContinue(runId);
        return;
      }
      lane.send(laneEvent);
    });
  };

  const agentActions: AgentActions = {
    resolveApproval: ({ runId, approvalId, decision, data, expectedVersion }) => {
      const payload: AgentCommandPayloadMap['approval.resolve'] = { approvalId, decision };
      if (data !== undefined) payload.data = data;
      if (expectedVersion !== undefined) payload.expectedVersion = expectedVersion;
      return act('approval.resolve', runId, payload);
    },
    retryTool: ({ runId, toolCallId }) => act('tool.retry', runId, { toolCallId }),
    cancelRun: ({ runId, reason }) => act('run.cancel', runId, reason === undefined ? {} : { reason }),
    submitToolResult: ({ runId, toolCallId, result, error }) => {
      const payload: AgentCommandPayloadMap['tool.submit_result'] = { toolCallId };
      if (result !== undefined) payload.result = result;
      if (error !== undefined) payload.error = error;
      return act('tool.submit_result', runId, payload);
    },
    continueRun: async ({ runId }) => {
      const run = getOwn(store.getSnapshot().runs, runId);
      const listed = (run?.pendingToolCallIds?.length ?? 0) + (run?.pendingApprovalIds?.length ?? 0);
      if (run?.sessionId !== sessionId || run.status !== 'completed' || listed === 0 || continued.has(runId)) {
        throw new AgentCommandError(
          'invalid_command',
          `continueRun refused: run "${runId}" did not end waiting for input in this conversation, or was continued`,
        );
      }
      return continueWaitingRun(runId, true, 0);
    },
  };

  const abort = (reason?: unknown) => {
    for (const entry of runs.values()) entry.controller?.abort(reason);
    for (const live of commands.values()) live.controller.abort(reason);
  };

  return {
    sessionId,
    store,
    agentActions,
    getSnapshot,
    subscribe(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    request,
    abort,
    retain() {
      holders += 1;
      let released = false;
      return () => {
        if (released) return;
        released = true;
        holders -= 1;
        if (holders === 0) abort(new DOMException('The chat was unmounted', 'AbortError'));
      };
    },
  };
}
