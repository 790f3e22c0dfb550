import {
  type Actor,
  type AnyActorRef,
  createActor,
  fromPromise,
  type InspectionEvent,
  type SnapshotFrom,
} from 'xstate';
import type { AgentCheckpointStorage } from '../checkpoint/AgentCheckpoint';
import { AgentCheckpointError } from '../checkpoint/AgentCheckpointError';
import { createAgentCheckpointCoordinator } from '../checkpoint/createAgentCheckpointCoordinator';
import type { ParseAgentCheckpointOptions } from '../checkpoint/parseAgentCheckpoint';
import { type AgentStore, type AgentStoreOptions, createAgentStore } from '../machines/createAgentStore';
import { selectMessages } from '../machines/selectors';
import type { AgentCommandPayloadMap } from '../protocol/commandSchemas';
import { AgentError } from '../protocol/errors';
import { randomId } from '../protocol/randomId';
import { AgentCommandError } from '../providers/AgentCommandError';
import type { AgentRunContinuation } from '../providers/AgentProvider';
import { type AgentProvider, type AnyAgentProvider, isAgentProvider } from '../providers/AgentProvider';
import { AgentProviderError } from '../providers/AgentProviderError';
import {
  type AgentConnectionChange,
  type AgentRunResult,
  type RunAgentProviderOptions,
  runAgentProvider,
} from '../providers/runAgentProvider';
import { createAgentLoop, type StartRun } from './agentLoop';
import { CommandBook } from './commandBook';
import { commandLaneMachine } from './commandLaneMachine';
import type { AgentConnectionState } from './connectionMachine';
import { buildConversationCheckpoint, type RestoredRun, restoreConversation } from './conversationCheckpoint';
import { type AgentActionResult, createCommandRunner } from './createCommandRunner';
import type { RuntimeCore, RuntimeRun } from './runtimeCore';
import { type CommandLaneRef, commandLaneId, type XChatRuntimeEvent, xChatRuntimeMachine } from './xChatRuntimeMachine';
import type { XChatSnapshot } from './xChatSnapshot';

export type { AgentActionResult } from './createCommandRunner';
export type { XChatSnapshot } from './xChatSnapshot';

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
  /**
   * Where the conversation's checkpoint is kept. Given, the runtime restores the
   * conversation from it when created (resuming its running runs from their cursors) and
   * saves it as it changes. Missing: nothing is persisted.
   */
  checkpointStorage?: AgentCheckpointStorage;
  /** Checkpoint timing and migration: `throttleMs` (1000), `saveTimeoutMs` (10 000), `migrate`. */
  checkpoint?: {
    throttleMs?: number;
    saveTimeoutMs?: number;
    migrate?: ParseAgentCheckpointOptions['migrate'];
  };
  /** Reconnecting a dropped stream from its cursor (see `runAgentProvider`); `false` turns it off. */
  reconnect?: RunAgentProviderOptions<unknown, unknown, unknown, unknown>['reconnect'];
  /**
   * Sees the runtime's actor (its connection machine and command lanes) and, unless
   * `store.inspect` is given, the store's actor system: the Stately inspector, say.
   */
  inspect?: (event: InspectionEvent) => void;
}

export interface XChatRequestOptions<Input> {
  /** The provider of this run; the conversation stays the same whichever provider runs it. */
  // biome-ignore lint/suspicious/noExplicitAny: a provider of this input and any request, chunk and context
  provider?: AgentProvider<Input, any, any, any>;
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
   * settled here (`completed` or `failed`, `meta.agentMachines.executedBy: 'client'`), and when
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
  /**
   * The runtime as an XState actor (`xChatRuntimeMachine`): `restoring` or `ready`, its
   * children the connection machine and each run's command lane, its context the view its
   * subscribers were last told of (kept up to date while it has subscribers, once per change
   * in a task of its own). `useSelector(runtime.actor, (s) => s.context.view.isRequesting)`
   * reads it; `getSnapshot()` is the same view, computed now.
   */
  readonly actor: Actor<typeof xChatRuntimeMachine>;
  readonly agentActions: AgentActions;
  /** Settles when the restore from the checkpoint is done (at once without a checkpoint storage). */
  readonly restored: Promise<void>;
  /** Saves the checkpoint now if anything changed since the last save. */
  flushCheckpoint(): Promise<void>;
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
   * Marks one user of this runtime (a mounted chat). When the last one releases it and none
   * takes it again within the same task (StrictMode's effects, a remount), the runs still
   * going are cancelled and the commands in flight interrupted: unmounting a chat, or
   * switching it to another conversation, is the same abort as the user's.
   */
  retain(): () => void;
  /**
   * Disposes the conversation: its streams are dropped (their runs end `cancelled` here, as
   * with `abort`), its commands in flight and those queued behind them fail `interrupted`,
   * and its checkpoint saves nothing more (what was scheduled is dropped: `flushCheckpoint()`
   * first to keep it; the storage keeps the last save). Once those streams and commands have
   * ended (in the tasks that follow), its actor (connection machine, command lanes) and its
   * store are stopped and its listeners are told no more. An answer kept for a waiting run's
   * continuation stays `submitting`: no run will carry it.
   *
   * Afterwards `request` and `agentActions.continueRun` reject with an `AgentError` whose code
   * is `runtime_destroyed`, the other actions with an `AgentCommandError` of that code;
   * `abort`, `retain`, `subscribe`, `flushCheckpoint` and `destroy` itself do nothing, and
   * `getSnapshot` keeps answering with the last view. A registry
   * (`createXChatConversations`) never hands out a destroyed conversation again.
   *
   * @example
   * chat.destroy();
   * chat.destroyed; // true
   */
  destroy(): void;
  /** Whether `destroy` was called. */
  readonly destroyed: boolean;
}

function checkAgentProvider(provider: unknown): void {
  if (!isAgentProvider(provider)) {
    throw new AgentProviderError(
      'unsupported_protocol',
      String((provider as { id?: unknown } | undefined)?.id),
      'is not an AgentProvider: useXChat needs protocol.name "agent-event"',
    );
  }
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
  const store = createAgentStore(
    options.inspect === undefined || options.store?.inspect !== undefined
      ? options.store
      : { ...options.store, inspect: options.inspect },
  );
  const runs = new Map<string, RuntimeRun>();
  const strandedRuns = new Set<string>();
  /** `strandedRuns` as the snapshot shows it, made again only when a run joins it. */
  let strandedRunIds: readonly string[] = [];
  const book = new CommandBook(now);
  let holders = 0;
  let snapshot: XChatSnapshot | undefined;
  let lastError: unknown;
  let checkpointError: AgentCheckpointError | undefined;
  /** Requests waiting for the restore to finish. */
  let waiting = 0;
  /** `destroy` was called; `disposed`: and its streams and commands have wound down, its actor and store are stopped. */
  let destroyed = false;
  let disposed = false;
  const destroyedMessage = () => `The chat runtime of session "${sessionId}" was destroyed`;
  const storage = options.checkpointStorage;

  // The lanes carry out their commands through the command runner, made below.
  const execute = fromPromise<void, { commandId: string }>(({ input }) => commandRunner.execute(input.commandId));
  const machine = xChatRuntimeMachine.provide({
    actors: { commandLane: commandLaneMachine.provide({ actors: { execute } }) },
  });
  // The actor's own snapshot, read inside the runtime (its public `getSnapshot` may make the
  // view first). Before the actor exists nothing has happened yet: the connection is idle.
  let actorSnapshot: (() => SnapshotFrom<typeof xChatRuntimeMachine>) | undefined;
  const connectionState = (): AgentConnectionState =>
    (actorSnapshot?.().children.connection?.getSnapshot().value as AgentConnectionState | undefined) ?? 'idle';
  const runtimeActor = createActor(machine, {
    id: 'xChat',
    input: { sessionId, checkpointed: storage !== undefined, view: computeView() },
    ...(options.inspect === undefined ? {} : { inspect: options.inspect }),
  });
  const ownSnapshot = runtimeActor.getSnapshot.bind(runtimeActor);
  actorSnapshot = ownSnapshot;
  runtimeActor.start();
  /** Tells the runtime's actor, which a disposed runtime has stopped: what its last streams say then is not news. */
  const send = (event: XChatRuntimeEvent) => {
    if (!disposed) runtimeActor.send(event);
  };

  /** Brings the actor's view up to date: the one transition a change costs, once per task. */
  const tell = () => {
    const view = getSnapshot();
    if (view !== ownSnapshot().context.view) send({ type: 'view.changed', view });
  };
  // The view is made for subscribers only: a conversation nobody watches (one switched away
  // from, one on a server) pays nothing per task for a view that nobody reads. Read while
  // nobody watches, the actor's snapshot brings its view up to date first.
  const listeners = new Set<() => void>();
  let actorSubscribers = 0;
  const watched = () => listeners.size > 0 || actorSubscribers > 0;
  runtimeActor.getSnapshot = () => {
    if (!watched()) tell();
    return ownSnapshot();
  };
  const subscribeToActor = runtimeActor.subscribe.bind(runtimeActor);
  runtimeActor.subscribe = ((...args: Parameters<typeof subscribeToActor>) => {
    actorSubscribers += 1;
    const subscription = subscribeToActor(...args);
    // The new subscriber hears of a view made since the actor was last read.
    if (actorSubscribers === 1 && listeners.size === 0) tell();
    let subscribed = true;
    return {
      unsubscribe() {
        if (!subscribed) return;
        subscribed = false;
        actorSubscribers -= 1;
        subscription.unsubscribe();
      },
    };
  }) as typeof runtimeActor.subscribe;

  let scheduled = false;
  const notify = () => {
    scheduled = false;
    if (disposed) return;
    // The last of a destroyed runtime's streams and commands has ended: its listeners hear of that, then of nothing more.
    const ending = destroyed && !isWindingDown();
    if (watched()) {
      tell();
      // Listeners are called after the actor has taken the change, never from within it: one
      // that acts at once (approves, retries) finds the actor ready to take that too.
      for (const listener of [...listeners]) listener();
    }
    if (ending) dispose();
  };
  // Listeners hear of changes in a task of their own, after the run has dispatched what
  // one read of the stream holds: a transport yields frame by frame, through microtasks,
  // and reading AgentState after each event would undo the store's coalescing.
  const schedule = () => {
    if (scheduled) return;
    scheduled = true;
    setTimeout(notify, 0);
  };
  ownSnapshot().children.connection?.subscribe(schedule);

  const children = () => ownSnapshot().children as Record<string, AnyActorRef | undefined>;
  const findLane = (runId: string) => children()[commandLaneId(runId)] as CommandLaneRef | undefined;

  const coordinator =
    storage === undefined
      ? undefined
      : createAgentCheckpointCoordinator({
          storage,
          sessionId,
          build: () => buildConversationCheckpoint(core),
          ...(options.checkpoint?.throttleMs === undefined ? {} : { throttleMs: options.checkpoint.throttleMs }),
          ...(options.checkpoint?.saveTimeoutMs === undefined
            ? {}
            : { saveTimeoutMs: options.checkpoint.saveTimeoutMs }),
          onError: (error) => {
            checkpointError = error;
            schedule();
          },
        });
  const isRestoring = () => ownSnapshot().matches('restoring');
  store.subscribe(() => {
    schedule();
    // Not while restoring: the restored state is what was saved.
    if (!isRestoring()) coordinator?.schedule('batch');
  });

  const core: RuntimeCore = {
    sessionId,
    now,
    store,
    runs,
    book,
    strandedRuns,
    schedule,
    providerOf: (runId) => runs.get(runId)?.provider ?? (options.provider as AnyAgentProvider),
    checkpoint: (reason) => {
      if (!isRestoring()) coordinator?.schedule(reason);
    },
    isRestoring,
    findLane,
    enqueueCommand: (runId, commandId, cancels) => send({ type: 'lane.enqueue', runId, commandId, cancels }),
    settleCancel: (runId) => send({ type: 'lane.cancel_settled', runId }),
    closeLane: (runId) => {
      const lane = findLane(runId);
      if (lane === undefined) return;
      // The outcome of a lane's last command closes it from within that command: the lane
      // finishes the command (back to idle) before it is stopped.
      if (!lane.getSnapshot().matches({ execution: 'idle' })) {
        const subscription = lane.subscribe((snapshot) => {
          if (!snapshot.matches({ execution: 'idle' })) return;
          subscription.unsubscribe();
          if (findLane(runId) === lane) send({ type: 'lane.close', runId });
        });
        return;
      }
      send({ type: 'lane.close', runId });
    },
  };

  /**
   * What the runner says of one stream, for the connection machine; `resume`: a restored run
   * resumed from its cursor. A run whose stream cannot go on (dropped mid-answer, a gap) stays
   * as its last event left it, with nobody to end it: it joins the stranded runs.
   */
  const onConnection = (resume: boolean, runId: string) => (change: AgentConnectionChange) => {
    switch (change.type) {
      case 'connecting':
        // The first attempt opens the stream; later ones are the runner's reconnects.
        if (change.attempt === 0) send({ type: 'stream.connecting', resume });
        return;
      case 'connected':
        send({ type: 'stream.connected' });
        return;
      case 'reconnecting':
        send({ type: 'stream.reconnecting', attempt: change.attempt, error: change.error });
        return;
      case 'unrecoverable':
        lastError = change.error;
        strandedRuns.add(runId);
        send({ type: 'stream.unrecoverable', error: change.error });
        return;
      case 'failed':
        lastError = change.error;
        send({ type: 'stream.failed', error: change.error });
        return;
      case 'closed':
        send({ type: 'stream.closed' });
        return;
    }
  };

  /** Runs one stream of the conversation: a new run, a continuation, or a restored run resumed from its cursor. */
  const stream = async (
    input: unknown,
    provider: AnyAgentProvider,
    continuation: AgentRunContinuation | undefined,
    autoDepth: number,
    restored?: RestoredRun,
  ): Promise<AgentRunResult> => {
    checkAgentProvider(provider);
    const runId = restored?.runId ?? randomId();
    const controller = new AbortController();
    const run: RuntimeRun = {
      provider,
      input,
      controller,
      closedByCommand: false,
      autoDepth,
      cursor: restored?.cursor,
    };
    runs.set(runId, run);
    schedule();
    try {
      return await runAgentProvider({
        provider,
        input,
        sessionId,
        runId,
        signal: controller.signal,
        history: store.getSnapshot(),
        ...(continuation === undefined ? {} : { continuation }),
        ...(restored === undefined ? {} : { resume: { cursor: restored.cursor, lastSequence: restored.lastSequence } }),
        ...(options.reconnect === undefined ? {} : { reconnect: options.reconnect }),
        onEvent: (event, admission) => {
          // After a confirmed cancel the stream is closed here: its closing events are not news.
          if (!run.closedByCommand && !disposed) return commandRunner.dispatch(event, admission);
          return undefined;
        },
        onCursor: (cursor) => {
          run.cursor = cursor;
          core.checkpoint('cursor');
        },
        onConnection: onConnection(restored !== undefined, runId),
        now,
      });
    } finally {
      run.controller = undefined;
      schedule();
    }
  };

  const restored =
    storage === undefined
      ? Promise.resolve()
      : restoreConversation(
          core,
          { storage, ...(options.checkpoint?.migrate === undefined ? {} : { migrate: options.checkpoint.migrate }) },
          { send },
          (runId) => {
            const provider = core.providerOf(runId);
            return provider.capabilities.resumable === true && provider.transport.resume !== undefined;
          },
        )
          .then(({ resume, error }) => {
            if (destroyed) return;
            send({ type: 'restore.settled' });
            if (error !== undefined) {
              lastError = error;
              if (AgentCheckpointError.isInstance(error)) checkpointError = error;
            }
            schedule();
            for (const run of resume) {
              stream(run.input, core.providerOf(run.runId), undefined, 0, run).catch((failure: unknown) => {
                lastError = failure;
                schedule();
              });
            }
          })
          .catch((error: unknown) => {
            // Destroyed while restoring, the store it was filling is gone: there is nothing to restore into.
            if (!destroyed) throw error;
          });

  const startRun: StartRun = async (input, provider, continuation, autoDepth) => {
    // While the conversation is being restored, a request waits: it must not start on an empty one.
    await restored;
    if (destroyed) throw new AgentError('runtime_destroyed', destroyedMessage());
    // A run that continues the conversation: the last error was about what came before it.
    lastError = undefined;
    return stream(input, provider, continuation, autoDepth);
  };

  const loop = createAgentLoop(core, () => commandRunner, startRun, {
    autoContinue: options.autoContinue ?? true,
    maxAutoContinuations: options.maxAutoContinuations ?? 5,
    onError: (error) => {
      lastError = error;
      schedule();
    },
  });
  const commandRunner = createCommandRunner(core, {
    cancelTimeoutMs: options.cancelTimeoutMs ?? 10_000,
    onInput: loop.onInput,
  });

  function computeView(): XChatSnapshot {
    const agentState = store.getSnapshot();
    // In flight from the call until the run has ended. Not "a run is running" in AgentState:
    // a run whose events a strict store refused stays running there, with nobody streaming it.
    let isRequesting = waiting > 0 && !destroyed;
    if (!destroyed) for (const run of runs.values()) if (run.controller !== undefined) isRequesting = true;
    if (strandedRunIds.length !== strandedRuns.size) strandedRunIds = [...strandedRuns];
    if (
      snapshot?.agentState !== agentState ||
      snapshot.isRequesting !== isRequesting ||
      snapshot.commandStates !== book.states ||
      snapshot.latestCommandByAction !== book.latestByAction ||
      snapshot.error !== lastError ||
      snapshot.connectionState !== connectionState() ||
      snapshot.checkpointError !== checkpointError ||
      snapshot.strandedRunIds !== strandedRunIds
    ) {
      snapshot = {
        agentState,
        messages: snapshot?.agentState === agentState ? snapshot.messages : selectMessages(agentState),
        isRequesting,
        commandStates: book.states,
        latestCommandByAction: book.latestByAction,
        error: lastError,
        connectionState: connectionState(),
        checkpointError,
        strandedRunIds,
      };
    }
    return snapshot;
  }
  const getSnapshot = computeView;

  const request = async (input: Input, requestOptions: XChatRequestOptions<Input> = {}): Promise<AgentRunResult> => {
    if (destroyed) throw new AgentError('runtime_destroyed', destroyedMessage());
    const provider = (requestOptions.provider ?? options.provider) as AnyAgentProvider;
    checkAgentProvider(provider);
    waiting += 1;
    schedule();
    try {
      await restored;
    } finally {
      waiting -= 1;
    }
    if (destroyed) throw new AgentError('runtime_destroyed', destroyedMessage());
    // A new request of the user: the last error was about what came before it.
    lastError = undefined;
    return stream(input, provider, undefined, 0);
  };

  const refused = () => Promise.reject(new AgentCommandError('runtime_destroyed', destroyedMessage()));
  const agentActions: AgentActions = {
    resolveApproval: ({ runId, approvalId, decision, data, expectedVersion }) => {
      if (destroyed) return refused();
      const payload: AgentCommandPayloadMap['approval.resolve'] = { approvalId, decision };
      if (data !== undefined) payload.data = data;
      if (expectedVersion !== undefined) payload.expectedVersion = expectedVersion;
      return commandRunner.act('approval.resolve', runId, payload);
    },
    retryTool: ({ runId, toolCallId }) =>
      destroyed ? refused() : commandRunner.act('tool.retry', runId, { toolCallId }),
    cancelRun: ({ runId, reason }) =>
      destroyed ? refused() : commandRunner.act('run.cancel', runId, reason === undefined ? {} : { reason }),
    submitToolResult: ({ runId, toolCallId, result, error }) => {
      if (destroyed) return refused();
      const payload: AgentCommandPayloadMap['tool.submit_result'] = { toolCallId };
      if (result !== undefined) payload.result = result;
      if (error !== undefined) payload.error = error;
      return commandRunner.act('tool.submit_result', runId, payload);
    },
    continueRun: ({ runId }) =>
      destroyed ? Promise.reject(new AgentError('runtime_destroyed', destroyedMessage())) : loop.continueRun(runId),
  };

  const dropStreams = (reason: unknown) => {
    for (const run of runs.values()) run.controller?.abort(reason);
    commandRunner.abort(reason);
  };
  const abort = (reason?: unknown) => {
    if (!destroyed) dropStreams(reason);
  };

  /**
   * Whether a destroyed runtime still has a stream closing or a command to fail: its lanes
   * carry out their queued commands, which fail `interrupted` at once, their signals being
   * aborted. An answer kept for a waiting run's continuation is not waited for: no run will
   * carry it now.
   */
  function isWindingDown(): boolean {
    for (const run of runs.values()) if (run.controller !== undefined) return true;
    for (const command of book.submittingCommands()) {
      const kept =
        command.type === 'approval.resolve' &&
        commandRunner.answersOf(command.runId)?.get(command.payload.approvalId)?.commandId === command.commandId;
      if (!kept) return true;
    }
    return false;
  }
  /** The end of a destroyed runtime, once it has wound down: its actor and store stop, its listeners go. */
  function dispose(): void {
    disposed = true;
    runtimeActor.stop();
    store.destroy();
    listeners.clear();
  }
  const destroy = () => {
    if (destroyed) return;
    dropStreams(new DOMException('The chat runtime was destroyed', 'AbortError'));
    destroyed = true;
    coordinator?.stop();
    if (!isWindingDown()) dispose();
    else schedule();
  };

  return {
    sessionId,
    store,
    actor: runtimeActor,
    agentActions,
    restored,
    flushCheckpoint: () => coordinator?.flush() ?? Promise.resolve(),
    getSnapshot,
    subscribe(listener) {
      if (destroyed) return () => undefined;
      // One entry per call: the same function subscribed twice is two subscriptions.
      const entry = () => listener();
      listeners.add(entry);
      return () => listeners.delete(entry);
    },
    request,
    abort,
    retain() {
      if (destroyed) return () => undefined;
      holders += 1;
      let released = false;
      return () => {
        if (released) return;
        released = true;
        holders -= 1;
        if (holders > 0) return;
        // React runs an unmount and the next mount's effects apart (StrictMode does both at
        // once): a conversation held again by then is still in use, its runs go on.
        setTimeout(() => {
          if (holders === 0) abort(new DOMException('The chat was unmounted', 'AbortError'));
        }, 0);
      };
    },
    destroy,
    get destroyed() {
      return destroyed;
    },
  };
}
