import { useCallback, useEffect, useMemo, useRef, useState, useSyncExternalStore } from 'react';
import type { AgentMessageState, AgentState } from '../machines/agentState';
import type { AgentMessageInfo } from '../machines/selectors';
import type { AgentProvider } from '../providers/AgentProvider';
import type { AgentRunResult } from '../providers/runAgentProvider';
import { createXChatRuntime, type XChatRuntime } from './createXChatRuntime';
import { parseXChatMessages, type XChatMessageParser, type XChatParsedMessage } from './parseXChatMessages';

export interface UseXChatOptions<Input, Request, Chunk, Context, Parsed> {
  /**
   * The only way in: transport, address and headers belong to the provider. Each request
   * uses the provider of the latest render; changing it keeps the conversation.
   */
  provider: AgentProvider<Input, Request, Chunk, Context>;
  /**
   * Names the conversation: it is the session id of its runs, and mounting a chat again
   * with the same key finds the same state, for as long as the page lives. Without it,
   * each mounted chat has a session of its own.
   */
  conversationKey?: string;
  /**
   * Turns a message into what the view shows; one message may become several. Results are
   * kept per message while the parser stays the same function, so pass a stable one.
   */
  parser?: XChatMessageParser<Parsed>;
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
  /** Cancels the running runs; each ends `cancelled`, with its open entities. */
  abort: () => void;
}

// Keyed conversations live as long as the page: mounting a chat again with the same key
// finds its store, whichever provider it is given.
const conversations = new Map<string, XChatRuntime<never>>();

function conversationRuntime<Input, Request, Chunk, Context>(
  provider: AgentProvider<Input, Request, Chunk, Context>,
  conversationKey: string,
): XChatRuntime<Input> {
  let runtime = conversations.get(conversationKey) as XChatRuntime<Input> | undefined;
  if (runtime === undefined) {
    runtime = createXChatRuntime({ provider, sessionId: conversationKey });
    conversations.set(conversationKey, runtime as XChatRuntime<never>);
  }
  return runtime;
}

interface OwnRuntimeSlot<Input> {
  runtime?: XChatRuntime<Input>;
}

/** The runtime of a chat without a key, made on first use. */
function ownRuntime<Input, Request, Chunk, Context>(
  slot: OwnRuntimeSlot<Input>,
  provider: AgentProvider<Input, Request, Chunk, Context>,
): XChatRuntime<Input> {
  if (slot.runtime === undefined) slot.runtime = createXChatRuntime({ provider });
  return slot.runtime;
}

/**
 * The React hook for an AgentProvider: subscribes to one chat runtime and returns plain
 * state plus `onRequest` and `abort`. Unmounting cancels the runs it started.
 *
 * @example
 * const { messages, agentState, onRequest, abort, isRequesting } = useXChat({ provider });
 * onRequest({ prompt: 'Summarize this report' });
 */
export function useXChat<Input, Request, Chunk, Context, Parsed = AgentMessageState>(
  options: UseXChatOptions<Input, Request, Chunk, Context, Parsed>,
): UseXChatResult<Input, Parsed> {
  const { provider, conversationKey, parser } = options;
  // Without a key, each mounted chat has a conversation of its own. A new provider object
  // (one made in the component body, say) runs the next requests and keeps the conversation.
  const [ownSlot] = useState<OwnRuntimeSlot<Input>>(() => ({}));
  const runtime =
    conversationKey === undefined ? ownRuntime(ownSlot, provider) : conversationRuntime(provider, conversationKey);
  const latestProvider = useRef(provider);
  latestProvider.current = provider;
  useEffect(() => runtime.retain(), [runtime]);
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
  };
}
