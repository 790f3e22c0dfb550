import { useSelector } from '@xstate/react';
import { useCallback, useEffect, useMemo, useRef, useState } from 'react';
import type { AgentCheckpointStorage } from '../checkpoint/AgentCheckpoint';
import type { AgentMessageState, AgentState } from '../machines/agentState';
import type { AgentStoreOptions } from '../machines/createAgentStore';
import type { AgentMessageInfo } from '../machines/selectors';
import { randomId } from '../protocol/randomId';
import type { AgentProvider } from '../providers/AgentProvider';
import type { AgentTool } from '../providers/agent/defineAgentTool';
import type { AgentRunResult } from '../providers/runAgentProvider';
import type { AgentCommandState } from '../runtime/commandBook';
import type { AgentConnectionState } from '../runtime/connectionMachine';
import type { AgentActions, XChatRuntime, XChatRuntimeOptions } from '../runtime/createXChatRuntime';
import { createXChatSource, type XChatSource, type XChatView } from '../runtime/createXChatSource';
import { parseXChatMessages, type XChatMessageParser, type XChatParsedMessage } from '../runtime/parseXChatMessages';
import type { XChatError } from '../runtime/toXChatError';
import {
  createXChatConversations,
  getPageXChatConversations,
  type XChatConversationOptions,
  type XChatConversations,
} from '../runtime/xChatConversations';
import {
  createXChatMessageLayer,
  type XChatDefaultMessages,
  type XChatMessageLayer,
  type XChatMessagePatch,
  type XChatMessagesUpdate,
} from '../runtime/xChatMessageLayer';

export interface UseXChatOptions<Input, Request, Chunk, Context, Parsed> {
  /**
   * The only way in: transport, address and headers belong to the provider. Each request
   * uses the provider of the latest render; changing it keeps the conversation.
   */
  provider: AgentProvider<Input, Request, Chunk, Context>;
  /**
   * Tools the application runs (`defineAgentTool`): when a run waits for a call of one given
   * with `execute`, the chat runs it with the validated input and submits its result (or
   * its error), and the conversation goes on; tools without `execute` are for the
   * application's UI. Each render's tools are the ones used, so `execute` sees the latest
   * props and state. Components look a tool up by name in `chat.tools`. See
   * `XChatRuntimeOptions.tools`.
   */
  tools?: readonly AgentTool[];
  /**
   * Names the conversation: it is the session id of its runs, and chats mounted with the
   * same key share its state and its message layer. Switched to another key, a chat lets go
   * of the conversation it showed: unless another mounted chat shows it, its streams are
   * dropped (its running runs end `cancelled`) and its commands in flight fail
   * `interrupted`, as at unmount (seed 003 §17). Its state is kept until the chat unmounts,
   * so switching back shows it as it was left; then it stays until another conversation is
   * held. Without a key, each mounted chat has a session of its own.
   */
  conversationKey?: string;
  /**
   * Where keyed conversations live. Default: the page's registry in a browser. A server
   * render passes one made per request (`createXChatConversations()`); without one there,
   * a keyed chat gets a conversation of its own, never another user's.
   */
  conversations?: XChatConversations;
  /**
   * Messages shown before the conversation's own, in the message layer (never in
   * AgentState): a list, or a loader run once after the conversation's first mount, given
   * `{ conversationKey }` (the chat's own session id without a key) and answering at once or
   * with a promise. Read when the conversation's layer is made.
   */
  defaultMessages?: XChatDefaultMessages;
  /**
   * Turns a message into what the view shows; one message may become several. Results are
   * kept per message while the parser stays the same function, so pass a stable one.
   */
  parser?: XChatMessageParser<Parsed>;
  /**
   * Where the conversation's checkpoint is kept: it is restored from it when first held
   * (its running runs resumed from their cursors) and saved as it changes. Missing: nothing
   * is persisted. Read when the conversation is made.
   */
  checkpointStorage?: AgentCheckpointStorage;
  /** Reconnecting dropped streams (default on: 3 attempts, 500 ms to 5 s); `false` turns it off. */
  reconnect?: XChatRuntimeOptions<Input, Request, Chunk, Context>['reconnect'];
  /** `record` (default) lists protocol issues in `agentState.issues`; `strict` fails the run. Read when the conversation is made. */
  protocolMode?: AgentStoreOptions['protocolMode'];
  /**
   * Sees the conversation's actors: the runtime's (`xChat`, its `connection` machine and the
   * command lanes) and the store's whole system (the Stately inspector, say). The runtime's
   * snapshots carry its whole view: sanitize them for an inspector that copies each one.
   * Read when the conversation is made.
   */
  inspect?: XChatRuntimeOptions<Input, Request, Chunk, Context>['inspect'];
  /** Render at most once per this many milliseconds while streaming. Default: once per animation frame. */
  throttleMs?: number;
}

export interface UseXChatResult<Input, Parsed> {
  /** Messages as `{ id, message, status }` for Bubble-style lists, through the message layer; unchanged entries keep their identity. */
  messages: AgentMessageInfo[];
  /** `messages` through `parser` (without one, the messages themselves). */
  parsedMessages: XChatParsedMessage<Parsed>[];
  /** Runs, messages, reasoning, tool calls, approvals, tasks, artifacts, shared state and issues. */
  agentState: AgentState;
  /** A request is in flight, or a run of the conversation is running. */
  isRequesting: boolean;
  /**
   * Starts a run with `input`; resolves with how it ended (see `XChatRuntime.request`). Earlier
   * runs stay as they ended: asking again, editing and resending, and starting again after a
   * stranded run are each a new request.
   */
  onRequest: (input: Input) => Promise<AgentRunResult>;
  /** Drops the local streams: the running runs end `cancelled` here. `agentActions.cancelRun` asks the runtime instead. */
  abort: () => void;
  /** Approve, retry, cancel, submit a tool result, continue: checked by the machines, sent as commands. */
  agentActions: AgentActions;
  /** Each command of a run not finished yet, by command id (never part of AgentState). */
  commandStates: Readonly<Record<string, AgentCommandState>>;
  /** The latest command id of each action key (`getAgentActionKey`). */
  latestCommandByAction: Readonly<Record<string, string>>;
  /** The error to show: of a run, the connection, a command or the checkpoint (see `toXChatError`). */
  error: XChatError | undefined;
  /** `idle | restoring | connecting | connected | reconnecting | unrecoverable | failed`. */
  connectionState: AgentConnectionState;
  /** Replaces the shown messages in the message layer; AgentState stays as it is. */
  setMessages: (update: XChatMessagesUpdate) => void;
  /** Edits one shown message in the message layer; AgentState stays as it is. */
  setMessage: (id: string, patch: XChatMessagePatch | ((current: AgentMessageInfo) => XChatMessagePatch)) => void;
  /** Hides one message in the message layer; AgentState stays as it is. */
  removeMessage: (id: string) => void;
  /** This chat's source, for the selector hooks (`useXChatMessage(chat, id)`, ...). Stable while the conversation is. */
  chat: XChatSource<Input>;
}

/** The message layer of each conversation, made with the conversation's first chat. */
const layers = new WeakMap<XChatRuntime<never>, XChatMessageLayer>();

function layerOf(runtime: XChatRuntime<never>, defaultMessages: XChatDefaultMessages | undefined): XChatMessageLayer {
  let layer = layers.get(runtime);
  if (layer === undefined) {
    layer = createXChatMessageLayer({
      readMessages: () => runtime.getSnapshot().messages,
      // The conversation's key is its session id (a chat without a key has one of its own).
      conversationKey: runtime.sessionId,
      ...(defaultMessages === undefined ? {} : { defaultMessages }),
    });
    layers.set(runtime, layer);
  }
  return layer;
}

type ViewField = keyof XChatView;

/**
 * The React hook for an AgentProvider: subscribes to one chat runtime through
 * `@xstate/react`'s `useSelector` and returns plain state plus `onRequest`, `abort`, the
 * user's commands (`agentActions`) with their states, and the message layer's
 * setters. A component re-renders only when a field it read changed, at most once per
 * animation frame while streaming. Unmounting cancels the runs it started.
 *
 * @example
 * const { messages, agentState, onRequest, abort, isRequesting } = useXChat({ provider });
 * onRequest({ prompt: 'Summarize this report' });
 */
export function useXChat<Input, Request, Chunk, Context, Parsed = AgentMessageState>(
  options: UseXChatOptions<Input, Request, Chunk, Context, Parsed>,
): UseXChatResult<Input, Parsed> {
  const { provider, tools, conversationKey, parser, throttleMs } = options;
  // A chat without a key, or with one on a server given no registry, keeps a conversation
  // of its own: a registry of one, which goes with the chat. A new provider object (one
  // made in the component body, say) runs the next requests and keeps the conversation.
  const [own] = useState(createXChatConversations);
  const [ownKey] = useState(randomId);
  const shared = conversationKey === undefined ? undefined : (options.conversations ?? getPageXChatConversations());
  const conversations = shared ?? own;
  const key = conversationKey ?? ownKey;
  const runtimeOptions: XChatConversationOptions = {};
  if (options.checkpointStorage !== undefined) runtimeOptions.checkpointStorage = options.checkpointStorage;
  if (options.reconnect !== undefined) runtimeOptions.reconnect = options.reconnect;
  if (options.protocolMode !== undefined) runtimeOptions.store = { protocolMode: options.protocolMode };
  if (options.inspect !== undefined) runtimeOptions.inspect = options.inspect;
  if (tools !== undefined) runtimeOptions.tools = tools;
  const runtime = conversations.get(key, provider, runtimeOptions);
  const layer = layerOf(runtime as XChatRuntime<never>, options.defaultMessages);
  const chat = useMemo(
    () => createXChatSource(runtime, layer, throttleMs === undefined ? {} : { throttleMs }),
    [runtime, layer, throttleMs],
  );
  const latestProvider = useRef(provider);
  latestProvider.current = provider;
  // The conversation shown is held: its runs go on. Those this chat showed before are kept
  // until it unmounts, as they were left; one switched away from that no other chat holds
  // has its streams dropped and its commands interrupted (the runtime's `retain`).
  const [kept] = useState(() => new Map<XChatRuntime<never>, () => void>());
  useEffect(() => {
    const shown = runtime as XChatRuntime<never>;
    if (!kept.has(shown)) kept.set(shown, conversations.keep(key, runtime));
    return conversations.hold(key, runtime);
  }, [kept, conversations, key, runtime]);
  useEffect(
    () => () => {
      for (const release of kept.values()) release();
      kept.clear();
    },
    [kept],
  );
  useEffect(() => void layer.load(), [layer]);
  // The conversation was made with the first render's tools; later renders bring theirs.
  useEffect(() => {
    if (tools !== undefined) runtime.setTools(tools);
  }, [runtime, tools]);

  // The fields this component read: a change of any other one does not re-render it.
  const [read] = useState(() => new Set<ViewField>());
  const view = useSelector(chat, selectView, (previous, next) => {
    for (const field of read) if (previous[field] !== next[field]) return false;
    return true;
  });
  const field = <Field extends ViewField>(name: Field): XChatView[Field] => {
    if (read.has(name)) return view[name];
    // Not read before: the selected view may be older than the last change of this field.
    read.add(name);
    return chat.getSnapshot()[name];
  };

  // One cache per parser: a new parser function parses everything again.
  const parsedCache = useMemo(
    () =>
      parser === undefined
        ? undefined
        : { parser, results: new WeakMap<AgentMessageInfo, XChatParsedMessage<Parsed>[]>() },
    [parser],
  );
  const parsed = useRef<{ messages: AgentMessageInfo[]; result: XChatParsedMessage<Parsed>[] }>(undefined);
  const parseMessages = (messages: AgentMessageInfo[]): XChatParsedMessage<Parsed>[] => {
    // Without a parser, Parsed is AgentMessageState: the messages are the parsed messages.
    if (parsedCache === undefined) return messages as unknown as XChatParsedMessage<Parsed>[];
    if (parsed.current?.messages !== messages) {
      parsed.current = { messages, result: parseXChatMessages(messages, parsedCache.parser, parsedCache.results) };
    }
    return parsed.current.result;
  };

  const request = useCallback(
    (input: Input) => runtime.request(input, { provider: latestProvider.current }),
    [runtime],
  );
  const abort = useCallback(() => runtime.abort(), [runtime]);
  return {
    get messages() {
      return field('messages');
    },
    get parsedMessages() {
      return parseMessages(field('messages'));
    },
    get agentState() {
      return field('agentState');
    },
    get isRequesting() {
      return field('isRequesting');
    },
    get commandStates() {
      return field('commandStates');
    },
    get latestCommandByAction() {
      return field('latestCommandByAction');
    },
    get error() {
      return field('error');
    },
    get connectionState() {
      return field('connectionState');
    },
    onRequest: request,
    abort,
    agentActions: runtime.agentActions,
    setMessages: layer.setMessages,
    setMessage: layer.setMessage,
    removeMessage: layer.removeMessage,
    chat,
  };
}

function selectView(view: XChatView): XChatView {
  return view;
}
