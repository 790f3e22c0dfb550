import { useCallback, useEffect, useMemo, useRef, useState, useSyncExternalStore } from 'react';
import type { AgentCheckpointStorage } from '../checkpoint/AgentCheckpoint';
import type { AgentMessageState, AgentState } from '../machines/agentState';
import type { AgentMessageInfo } from '../machines/selectors';
import { randomId } from '../protocol/randomId';
import type { AgentProvider } from '../providers/AgentProvider';
import type { AgentRunResult } from '../providers/runAgentProvider';
import type { AgentCommandState } from '../runtime/commandBook';
import type { AgentConnectionState } from '../runtime/connectionMachine';
import type { AgentActions, XChatRuntimeOptions } from '../runtime/createXChatRuntime';
import { parseXChatMessages, type XChatMessageParser, type XChatParsedMessage } from './parseXChatMessages';
import {
  createXChatConversations,
  getPageXChatConversations,
  type XChatConversationOptions,
  type XChatConversations,
} from './xChatConversations';

export interface UseXChatOptions<Input, Request, Chunk, Context, Parsed> {
  /**
   * The only way in: transport, address and headers belong to the provider. Each request
   * uses the provider of the latest render; changing it keeps the conversation.
   */
  provider: AgentProvider<Input, Request, Chunk, Context>;
  /**
   * Names the conversation: it is the session id of its runs, and chats mounted with the
   * same key share its state. It stays while a chat holds it, and after the last one
   * unmounts until another conversation is held. Without it, each mounted chat has a
   * session of its own.
   */
  conversationKey?: string;
  /**
   * Where keyed conversations live. Default: the page's registry in a browser. A server
   * render passes one made per request (`createXChatConversations()`); without one there,
   * a keyed chat gets a conversation of its own, never another user's.
   */
  conversations?: XChatConversations;
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
}

export interface UseXChatResult<Input, Parsed> {
  /** Messages as `{ id, message, status }` for Bubble-style lists; unchanged entries keep their identity. */
  messages: AgentMessageInfo[];
  /** `messages` through `parser` (without one, the messages themselves). */
  parsedMessages: XChatParsedMessage<Parsed>[];
  /** Runs, messages, reasoning, tool calls, approvals, tasks, artifacts, shared state and issues. */
  agentState: AgentState;
  /** True from `onRequest` until its run has ended (completed, failed or cancelled). */
  isRequesting: boolean;
  /** Starts a run; resolves with how it ended (see `XChatRuntime.request`). */
  onRequest: (input: Input) => Promise<AgentRunResult>;
  /** Drops the local streams: the running runs end `cancelled` here. `agentActions.cancelRun` asks the runtime instead. */
  abort: () => void;
  /** Approve, retry, cancel, submit a tool result, continue: checked by the machines, sent as commands. */
  agentActions: AgentActions;
  /** Each command of a run not finished yet, by command id (never part of AgentState). */
  commandStates: Readonly<Record<string, AgentCommandState>>;
  /** The latest command id of each action key (`getAgentActionKey`). */
  latestCommandByAction: Readonly<Record<string, string>>;
  /** The last error a run or the connection broke off with outside an awaited call. */
  error: unknown;
  /** `idle | restoring | connecting | connected | reconnecting | unrecoverable | failed`. */
  connectionState: AgentConnectionState;
}

/**
 * The React hook for an AgentProvider: subscribes to one chat runtime and returns plain
 * state plus `onRequest`, `abort` and the user's commands (`agentActions`) with their
 * states. Unmounting cancels the runs it started.
 *
 * @example
 * const { messages, agentState, onRequest, abort, isRequesting } = useXChat({ provider });
 * onRequest({ prompt: 'Summarize this report' });
 */
export function useXChat<Input, Request, Chunk, Context, Parsed = AgentMessageState>(
  options: UseXChatOptions<Input, Request, Chunk, Context, Parsed>,
): UseXChatResult<Input, Parsed> {
  const { provider, conversationKey, parser } = options;
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
  const runtime = conversations.get(key, provider, runtimeOptions);
  const latestProvider = useRef(provider);
  latestProvider.current = provider;
  useEffect(() => conversations.hold(key, runtime), [conversations, key, runtime]);
  const snapshot = useSyncExternalStore(runtime.subscribe, runtime.getSnapshot, runtime.getSnapshot);
  // One cache per parser: a new parser function parses everything again.
  const parsedCache = useMemo(
    () =>
      parser === undefined
        ? undefined
        : { parser, results: new WeakMap<AgentMessageInfo, XChatParsedMessage<Parsed>[]>() },
    [parser],
  );
  const parsedMessages = useMemo(
    () =>
      parsedCache === undefined
        ? // Without a parser, Parsed is AgentMessageState: the messages are the parsed messages.
          (snapshot.messages as unknown as XChatParsedMessage<Parsed>[])
        : parseXChatMessages(snapshot.messages, parsedCache.parser, parsedCache.results),
    [snapshot.messages, parsedCache],
  );
  const onRequest = useCallback(
    (input: Input) => runtime.request(input, { provider: latestProvider.current }),
    [runtime],
  );
  const abort = useCallback(() => runtime.abort(), [runtime]);
  return {
    messages: snapshot.messages,
    parsedMessages,
    agentState: snapshot.agentState,
    isRequesting: snapshot.isRequesting,
    onRequest,
    abort,
    agentActions: runtime.agentActions,
    commandStates: snapshot.commandStates,
    latestCommandByAction: snapshot.latestCommandByAction,
    error: snapshot.error,
    connectionState: snapshot.connectionState,
  };
}
