import { useCallback, useEffect, useMemo, useState, useSyncExternalStore } from 'react';
import type { AgentMessageState, AgentState } from '../machines/agentState';
import type { AgentMessageInfo } from '../machines/selectors';
import type { AgentProvider } from '../providers/AgentProvider';
import type { AgentRunResult } from '../providers/runAgentProvider';
import { createXChatRuntime, type XChatRuntime } from './createXChatRuntime';
import { parseXChatMessages, type XChatMessageParser, type XChatParsedMessage } from './parseXChatMessages';

export interface UseXChatOptions<Input, Request, Chunk, Context, Parsed> {
  /** The only way in: transport, address and headers belong to the provider. */
  provider: AgentProvider<Input, Request, Chunk, Context>;
  /**
   * Names the conversation: it is the session id of its runs, and mounting a chat again
   * with the same provider and key finds the same state. Without it, each mounted chat
   * has a session of its own.
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
  isRequesting: boolean;
  /** Starts a run; resolves with how it ended (see `XChatRuntime.request`). */
  onRequest: (input: Input) => Promise<AgentRunResult>;
  /** Cancels the running runs; each ends `cancelled`, with its open entities. */
  abort: () => void;
}

// Runtimes of keyed conversations, per provider: remounting finds the same store.
const conversations = new WeakMap<object, Map<string, XChatRuntime<never>>>();

function conversationRuntime<Input, Request, Chunk, Context>(
  provider: AgentProvider<Input, Request, Chunk, Context>,
  conversationKey: string,
): XChatRuntime<Input> {
  let byKey = conversations.get(provider);
  if (byKey === undefined) {
    byKey = new Map();
    conversations.set(provider, byKey);
  }
  let runtime = byKey.get(conversationKey) as XChatRuntime<Input> | undefined;
  if (runtime === undefined) {
    runtime = createXChatRuntime({ provider, sessionId: conversationKey });
    byKey.set(conversationKey, runtime as XChatRuntime<never>);
  }
  return runtime;
}

function ownRuntime<Input, Request, Chunk, Context>(
  runtimes: WeakMap<object, XChatRuntime<Input>>,
  provider: AgentProvider<Input, Request, Chunk, Context>,
): XChatRuntime<Input> {
  let runtime = runtimes.get(provider);
  if (runtime === undefined) {
    runtime = createXChatRuntime({ provider });
    runtimes.set(provider, runtime);
  }
  return runtime;
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
  // Without a key, each mounted chat has its own runtime (a new one if the provider changes).
  const [ownRuntimes] = useState(() => new WeakMap<object, XChatRuntime<Input>>());
  const runtime =
    conversationKey === undefined ? ownRuntime(ownRuntimes, provider) : conversationRuntime(provider, conversationKey);
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
  const onRequest = useCallback((input: Input) => runtime.request(input), [runtime]);
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
