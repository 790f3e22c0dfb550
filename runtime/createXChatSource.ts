import type { AgentState } from '../machines/agentState';
import { type AgentMessageInfo, selectRunningRuns } from '../machines/selectors';
import type { AgentTool } from '../providers/agent/defineAgentTool';
import type { AgentCommandState } from './commandBook';
import type { AgentConnectionState } from './connectionMachine';
import type { XChatRuntime } from './createXChatRuntime';
import { isSameXChatError, toXChatError, type XChatError } from './toXChatError';
import { changedXChatMessageKeys } from './xChatMessageIndex';
import type { XChatMessageLayer } from './xChatMessageLayer';

/** What a chat view reads: the runtime's snapshot with the message layer applied. The same object until something in it changes. */
export interface XChatView {
  agentState: AgentState;
  /** The conversation's messages through the message layer; unchanged entries keep their identity. */
  messages: AgentMessageInfo[];
  /**
   * A request is in flight, or a run of the conversation is running in AgentState (but for
   * runs the runtime cannot follow after a restore: `runtime.getSnapshot().strandedRunIds`).
   */
  isRequesting: boolean;
  commandStates: Readonly<Record<string, AgentCommandState>>;
  latestCommandByAction: Readonly<Record<string, string>>;
  error: XChatError | undefined;
  connectionState: AgentConnectionState;
}

/** An observer as `@xstate/react`'s `useSelector` passes it. */
export interface XChatObserver {
  next?: (view: XChatView) => void;
  error?: (error: unknown) => void;
}

/**
 * One chat's view of a conversation, shaped as `useSelector` takes an actor
 * (`getSnapshot`, `subscribe(observer) => { unsubscribe }`), with render batching: the
 * runtime's changes reach observers when the runtime tells of them, at most once per
 * animation frame (once per task where no frame comes), or once per `throttleMs` when it is
 * given. Changes of the message layer reach them at once.
 */
export interface XChatSource<Input = unknown> {
  readonly runtime: XChatRuntime<Input>;
  readonly layer: XChatMessageLayer;
  /**
   * The conversation's tools by name (`runtime.tools`): what a component that renders a tool
   * call (`useXChatToolCall`) looks the tool up in, for its description or its own UI.
   */
  readonly tools: ReadonlyMap<string, AgentTool>;
  /** With observers, the view as of the last flush; without, the view now. */
  getSnapshot(): XChatView;
  subscribe(observer: XChatObserver | ((view: XChatView) => void)): { unsubscribe(): void };
  /**
   * Calls `listener` at a flush that changed the entry of `view.messages` with this key (or
   * added or removed it), and at no other: a token streamed into one message wakes that
   * message's listeners only, however long the thread. Returns the unsubscribe function.
   */
  subscribeMessage(messageKey: string, listener: () => void): () => void;
}

export interface XChatSourceOptions {
  /** Notify at most once per this many milliseconds instead of once per animation frame. */
  throttleMs?: number;
}

type Cancel = () => void;

/** Whether a run of the session is running in AgentState that the runtime still follows or may yet end. */
function isFollowingARun(agentState: AgentState, sessionId: string, stranded: readonly string[]): boolean {
  const running = selectRunningRuns(agentState, sessionId);
  return stranded.length === 0 ? running.length > 0 : running.some((run) => !stranded.includes(run.id));
}

/** Runs `flush` after `throttleMs`. */
function scheduleFlush(flush: () => void, throttleMs: number): Cancel {
  const timer = setTimeout(flush, throttleMs);
  return () => clearTimeout(timer);
}

/**
 * Makes the `useSelector` source of one conversation: its runtime seen through its message
 * layer. It subscribes to the runtime only while it has observers.
 *
 * @example
 * const chat = createXChatSource(runtime, layer, { throttleMs: 50 });
 * const { unsubscribe } = chat.subscribe(() => render(chat.getSnapshot().messages));
 */
export function createXChatSource<Input>(
  runtime: XChatRuntime<Input>,
  layer: XChatMessageLayer,
  options: XChatSourceOptions = {},
): XChatSource<Input> {
  const observers = new Set<XChatObserver>();
  const messageListeners = new Map<string, Set<() => void>>();
  let listenerCount = 0;
  let view: XChatView | undefined;
  let cancelFlush: Cancel | undefined;
  let stopListening: Cancel | undefined;

  const compute = (): XChatView => {
    const snapshot = runtime.getSnapshot();
    const messages = layer.apply(snapshot.messages);
    const isRequesting =
      snapshot.isRequesting || isFollowingARun(snapshot.agentState, runtime.sessionId, snapshot.strandedRunIds);
    const error = toXChatError(snapshot, runtime.sessionId);
    if (
      view !== undefined &&
      view.agentState === snapshot.agentState &&
      view.messages === messages &&
      view.isRequesting === isRequesting &&
      view.commandStates === snapshot.commandStates &&
      view.latestCommandByAction === snapshot.latestCommandByAction &&
      isSameXChatError(view.error, error) &&
      view.connectionState === snapshot.connectionState
    ) {
      return view;
    }
    return {
      agentState: snapshot.agentState,
      messages,
      isRequesting,
      commandStates: snapshot.commandStates,
      latestCommandByAction: snapshot.latestCommandByAction,
      error: isSameXChatError(view?.error, error) ? view?.error : error,
      connectionState: snapshot.connectionState,
    };
  };

  const flush = () => {
    cancelFlush?.();
    cancelFlush = undefined;
    const next = compute();
    if (next === view) return;
    const previous = view;
    view = next;
    for (const observer of [...observers]) observer.next?.(next);
    if (messageListeners.size === 0 || previous === undefined || previous.messages === next.messages) return;
    for (const key of changedXChatMessageKeys(previous.messages, next.messages)) {
      const listeners = messageListeners.get(key);
      if (listeners !== undefined) for (const listener of [...listeners]) listener();
    }
  };

  const { throttleMs } = options;
  // The runtime tells of its changes already batched, once per frame or task
  // (`scheduleNotification`): the view flushes then, with no wait of its own on top.
  const onRuntimeChange =
    throttleMs === undefined
      ? flush
      : () => {
          cancelFlush ??= scheduleFlush(flush, throttleMs);
        };

  const listen = () => {
    const stopRuntime = runtime.subscribe(onRuntimeChange);
    // What the user did shows at once: one change, not a stream.
    const stopLayer = layer.subscribe(flush);
    return () => {
      stopRuntime();
      stopLayer();
      cancelFlush?.();
      cancelFlush = undefined;
    };
  };

  /** Counts one observer or message listener in; the first starts listening to the runtime. */
  const retain = () => {
    listenerCount += 1;
    if (listenerCount > 1) return;
    view = compute();
    stopListening = listen();
  };
  const release = () => {
    listenerCount -= 1;
    if (listenerCount > 0) return;
    stopListening?.();
    stopListening = undefined;
  };

  return {
    runtime,
    layer,
    get tools() {
      return runtime.tools;
    },
    getSnapshot() {
      if (view === undefined || listenerCount === 0) view = compute();
      return view;
    },
    subscribe(observerOrNext) {
      const observer = typeof observerOrNext === 'function' ? { next: observerOrNext } : { ...observerOrNext };
      retain();
      observers.add(observer);
      return {
        unsubscribe() {
          if (observers.delete(observer)) release();
        },
      };
    },
    subscribeMessage(messageKey, listener) {
      // One entry per call: the same function subscribed twice is two subscriptions.
      const entry = () => listener();
      retain();
      let listeners = messageListeners.get(messageKey);
      if (listeners === undefined) {
        listeners = new Set();
        messageListeners.set(messageKey, listeners);
      }
      listeners.add(entry);
      return () => {
        const current = messageListeners.get(messageKey);
        if (current === undefined || !current.delete(entry)) return;
        if (current.size === 0) messageListeners.delete(messageKey);
        release();
      };
    },
  };
}
