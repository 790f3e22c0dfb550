import type { AgentState } from '../machines/agentState';
import { type AgentStore, type AgentStoreOptions, createAgentStore } from '../machines/createAgentStore';
import { type AgentMessageInfo, selectMessages } from '../machines/selectors';
import { randomId } from '../protocol/randomId';
import { type AgentProvider, isAgentProvider } from '../providers/AgentProvider';
import { AgentProviderError } from '../providers/AgentProviderError';
import { type AgentRunResult, runAgentProvider } from '../providers/runAgentProvider';

export interface XChatRuntimeOptions<Input, Request, Chunk, Context> {
  /** The provider runs use unless `request` is given another. */
  provider: AgentProvider<Input, Request, Chunk, Context>;
  /** The session every run of this chat belongs to. Default: a random id. */
  sessionId?: string;
  store?: AgentStoreOptions;
}

/** What a chat view reads. The same object until the AgentState or the request count changes. */
export interface XChatSnapshot {
  agentState: AgentState;
  /** The session's messages as `{ id, message, status }`, in arrival order. */
  messages: AgentMessageInfo[];
  /** A request of this runtime is in flight: its run has not ended yet. */
  isRequesting: boolean;
}

export interface XChatRequestOptions<Input> {
  /** The provider of this run; the conversation stays the same whichever provider runs it. */
  // biome-ignore lint/suspicious/noExplicitAny: a provider of this input and any request, chunk and context
  provider?: AgentProvider<Input, any, any, any>;
}

/** One conversation: its store, the runs it started, and what a view reads. */
export interface XChatRuntime<Input> {
  readonly sessionId: string;
  readonly store: AgentStore;
  getSnapshot(): XChatSnapshot;
  subscribe(listener: () => void): () => void;
  /**
   * Starts a new run with this input. Resolves with how the run ended; a failed or
   * cancelled run is a result, not a rejection. It rejects only when the provider breaks
   * its contract (`AgentProviderError`) or the store throws (strict protocol mode).
   */
  request(input: Input, options?: XChatRequestOptions<Input>): Promise<AgentRunResult>;
  /** Cancels every run this runtime started that is still going; each ends `cancelled`. */
  abort(reason?: unknown): void;
  /**
   * Marks one user of this runtime (a mounted chat). When the last one releases it, the
   * runs still going are cancelled: unmounting a chat is the same abort as the user's.
   */
  retain(): () => void;
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
 * The chat bridge behind `useXChat`, without React: one store, runs started through
 * `runAgentProvider` with one AbortController each, and a snapshot for
 * `useSyncExternalStore`.
 *
 * @example
 * const chat = createXChatRuntime({ provider, sessionId: 'conversation-1' });
 * chat.subscribe(() => render(chat.getSnapshot().messages));
 * await chat.request({ prompt: 'Summarize this report' });
 */
export function createXChatRuntime<Input, Request, Chunk, Context>(
  options: XChatRuntimeOptions<Input, Request, Chunk, Context>,
): XChatRuntime<Input> {
  checkAgentProvider(options.provider);
  const sessionId = options.sessionId ?? randomId();
  const store = createAgentStore(options.store);
  const controllers = new Set<AbortController>();
  const listeners = new Set<() => void>();
  let holders = 0;
  let snapshot: XChatSnapshot | undefined;

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

  const getSnapshot = (): XChatSnapshot => {
    const agentState = store.getSnapshot();
    // In flight from the call until the run has ended. Not "a run is running" in AgentState:
    // a run whose events a strict store refused stays running there, with nobody streaming it.
    const isRequesting = controllers.size > 0;
    if (snapshot?.agentState !== agentState || snapshot.isRequesting !== isRequesting) {
      snapshot = { agentState, messages: selectMessages(agentState), isRequesting };
    }
    return snapshot;
  };

  const request = async (input: Input, requestOptions: XChatRequestOptions<Input> = {}): Promise<AgentRunResult> => {
    const provider = requestOptions.provider ?? options.provider;
    checkAgentProvider(provider);
    const controller = new AbortController();
    controllers.add(controller);
    schedule();
    try {
      return await runAgentProvider({
        provider,
        input,
        sessionId,
        signal: controller.signal,
        onEvent: store.dispatch,
      });
    } finally {
      controllers.delete(controller);
      schedule();
    }
  };

  const abort = (reason?: unknown) => {
    for (const controller of [...controllers]) controller.abort(reason);
  };

  return {
    sessionId,
    store,
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
