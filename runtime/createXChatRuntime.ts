import { type Actor, createActor, fromPromise, type SnapshotFrom } from 'xstate';
import { createAgentStoreOn } from '../machines/createAgentStore';
import { AgentError } from '../protocol/errors';
import { randomId } from '../protocol/randomId';
import { type AnyAgentProvider, isAgentProvider } from '../providers/AgentProvider';
import { AgentProviderError } from '../providers/AgentProviderError';
import { createAgentLoop } from './agentLoop';
import { CommandBook } from './commandBook';
import { commandLaneMachine } from './commandLaneMachine';
import type { AgentConnectionState } from './connectionMachine';
import { createConversationSaver, restoreAndResume } from './conversationCheckpoint';
import { createConversationLifecycle } from './conversationLifecycle';
import { createConversationStreams } from './conversationStreams';
import { createAgentActions } from './createAgentActions';
import { createClientToolRunner } from './createClientToolRunner';
import { createCommandRunner } from './createCommandRunner';
import { closeLaneWhenIdle, type RuntimeCore } from './runtimeCore';
import { type CommandLaneRef, commandLaneId, xChatRuntimeMachine } from './xChatRuntimeMachine';
import type { XChatRequestOptions, XChatRuntime, XChatRuntimeOptions } from './xChatRuntimeTypes';
import { createXChatView } from './xChatView';

export type { AgentActionResult } from './createCommandRunner';
export type { AgentActions, XChatRequestOptions, XChatRuntime, XChatRuntimeOptions } from './xChatRuntimeTypes';
export type { XChatSnapshot } from './xChatSnapshot';

type ChildrenOf<A> = A extends Actor<infer Logic> ? SnapshotFrom<Logic>['children'] : never;

function checkAgentProvider(provider: unknown): void {
  if (!isAgentProvider(provider)) {
    const id = String((provider as { id?: unknown } | undefined)?.id);
    throw new AgentProviderError(
      'unsupported_protocol',
      id,
      'is not an AgentProvider: useXChat needs protocol.name "agent-event"',
    );
  }
}

/**
 * The interaction runtime behind `useXChat`, without React: one conversation as one actor
 * system (`xChatRuntimeMachine`: the store's session actor, the connection machine and the
 * command lanes), runs started through `runAgentProvider` with the conversation so far, the
 * user's commands (`agentActions`) checked by the machines and sent through
 * `runAgentCommand` one at a time per run, their command states, and the agent loop: client
 * tool results, answers to interrupts, and the runs that continue the conversation after them.
 * Client tools given with `execute` (`tools`) run here when a run waits for them, and their
 * results continue the conversation as the application's would.
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
  const storage = options.checkpointStorage;
  const destroyedMessage = `The chat runtime of session "${sessionId}" was destroyed`;
  // The lanes carry out their commands through the command runner, made below.
  const execute = fromPromise<void, { commandId: string }>(({ input }) => commandRunner.execute(input.commandId));
  const machine = xChatRuntimeMachine.provide({
    actors: { commandLane: commandLaneMachine.provide({ actors: { execute } }) },
  });
  const inspect = options.inspect ?? options.store?.inspect;
  const actor = createActor(machine, {
    id: 'xChat',
    systemId: 'xChat',
    input: { sessionId, checkpointed: storage !== undefined },
    ...(inspect === undefined ? {} : { inspect }),
  });
  actor.start();
  const { session, connection } = actor.getSnapshot().children as Required<ChildrenOf<typeof actor>>;
  const store = createAgentStoreOn(session, options.store ?? {}, false);
  const findLane = (runId: string) =>
    (actor.getSnapshot().children as Record<string, CommandLaneRef | undefined>)[commandLaneId(runId)];
  const isRestoring = () => actor.getSnapshot().matches('restoring');

  const core: RuntimeCore = {
    sessionId,
    now: options.now ?? Date.now,
    store,
    runs: new Map(),
    book: new CommandBook(options.now ?? Date.now),
    status: { error: undefined, checkpointError: undefined, waiting: 0, destroyed: false, disposed: false },
    strandedRuns: new Set(),
    schedule: () => lifecycle.schedule(),
    send: (event) => {
      if (!core.status.disposed) actor.send(event);
    },
    providerOf: (runId) => core.runs.get(runId)?.provider ?? (options.provider as AnyAgentProvider),
    checkpoint: (reason) => {
      if (!isRestoring()) coordinator?.schedule(reason);
    },
    isRestoring,
    findLane,
    enqueueCommand: (runId, commandId, cancels) => core.send({ type: 'lane.enqueue', runId, commandId, cancels }),
    settleCancel: (runId) => core.send({ type: 'lane.cancel_settled', runId }),
    closeLane: (runId) => closeLaneWhenIdle(core, runId),
  };
  const { status } = core;
  const coordinator = createConversationSaver(core, storage, options.checkpoint);
  // Its results go through `agentActions`, made below, as the application's would.
  const clientTools = createClientToolRunner({
    tools: options.tools,
    readState: () => store.getSnapshot(),
    isDestroyed: () => status.destroyed,
    submit: (input) => agentActions.submitToolResult(input),
    onError: (error) => status.destroyed || failed(error),
  });
  const lifecycle = createConversationLifecycle(core, {
    runner: () => commandRunner,
    abortClientTools: (reason) => clientTools.abort(reason),
    stop: () => {
      store.destroy();
      actor.stop();
    },
    stopSaving: () => coordinator?.stop(),
  });
  connection.subscribe(core.schedule);
  const stream = createConversationStreams(core, {
    reconnect: options.reconnect,
    dispatch: (event, admission) => {
      const refused = commandRunner.dispatch(event, admission);
      clientTools.onEvent(event);
      return refused;
    },
    checkProvider: checkAgentProvider,
    randomId,
  });
  const failed = (error: unknown) => {
    status.error = error;
    core.schedule();
  };
  const restored =
    storage === undefined
      ? Promise.resolve()
      : restoreAndResume(core, { storage, migrate: options.checkpoint?.migrate }, stream, failed);
  /** A run of the user's or a continuation: it waits for the restore; the last error was about what came before it. */
  const startRun = async (...args: Parameters<typeof stream>) => {
    await restored;
    if (status.destroyed) throw new AgentError('runtime_destroyed', destroyedMessage);
    status.error = undefined;
    return stream(...args);
  };
  const loop = createAgentLoop(core, () => commandRunner, startRun, {
    autoContinue: options.autoContinue ?? true,
    maxAutoContinuations: options.maxAutoContinuations ?? 5,
    onError: failed,
  });
  const commandRunner = createCommandRunner(core, {
    cancelTimeoutMs: options.cancelTimeoutMs ?? 10_000,
    onInput: loop.onInput,
  });
  const connectionState = () => connection.getSnapshot().value as AgentConnectionState;
  const agentActions = createAgentActions(commandRunner, loop, status, destroyedMessage);
  // A run restored waiting for a client tool's result gets it as one that ended so here.
  restored.then(
    () => clientTools.onRestored(sessionId),
    () => undefined,
  );

  return {
    sessionId,
    store,
    actor,
    agentActions,
    get tools() {
      return clientTools.tools;
    },
    setTools: (tools) => {
      if (!status.destroyed) clientTools.setTools(tools);
    },
    restored,
    flushCheckpoint: () => coordinator?.flush() ?? Promise.resolve(),
    getSnapshot: createXChatView(core, connectionState),
    subscribe: lifecycle.subscribe,
    async request(input: Input, requestOptions: XChatRequestOptions<Input> = {}) {
      if (status.destroyed) throw new AgentError('runtime_destroyed', destroyedMessage);
      const provider = (requestOptions.provider ?? options.provider) as AnyAgentProvider;
      checkAgentProvider(provider);
      status.waiting += 1;
      core.schedule();
      try {
        await restored;
      } finally {
        status.waiting -= 1;
      }
      return startRun(input, provider, undefined, 0);
    },
    abort: lifecycle.abort,
    retain: lifecycle.retain,
    destroy: lifecycle.destroy,
    get destroyed() {
      return status.destroyed;
    },
  };
}
