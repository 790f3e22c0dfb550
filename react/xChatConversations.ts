import type { AgentProvider } from '../providers/AgentProvider';
import { createXChatRuntime, type XChatRuntime, type XChatRuntimeOptions } from '../runtime/createXChatRuntime';

/** What a new conversation's runtime is made with, beside its provider and session id. */
export type XChatConversationOptions = Omit<
  XChatRuntimeOptions<unknown, unknown, unknown, unknown>,
  'provider' | 'sessionId'
>;

/**
 * Keyed conversations: one chat runtime per key, shared by every chat that holds it and
 * dropped once none does. A browser page has one (`getPageXChatConversations`); a server
 * makes one per request, so two users never share a conversation.
 *
 * @example
 * const conversations = createXChatConversations();
 * const chat = conversations.get('trip-1', provider);
 * const release = conversations.hold('trip-1', chat);
 * await chat.request({ prompt: 'Weather in Paris?' });
 * release();
 */
export interface XChatConversations {
  /**
   * The conversation named `key`: the one this registry has, or a new runtime whose session
   * id is `key` and whose runs use `provider`. Getting it does not hold it, so a render may
   * call this and be thrown away.
   */
  get<Input, Request, Chunk, Context>(
    key: string,
    provider: AgentProvider<Input, Request, Chunk, Context>,
    options?: XChatConversationOptions,
  ): XChatRuntime<Input>;
  /**
   * Holds `runtime` as the conversation `key`, and retains it, until the returned function
   * is called (a second call does nothing). When its last holder lets go, its runs are
   * cancelled, and the conversation stays until another conversation is held: a chat that
   * unmounts and mounts again (StrictMode's effects, a panel closed and opened) finds it.
   */
  hold<Input>(key: string, runtime: XChatRuntime<Input>): () => void;
}

interface Conversation {
  runtime: XChatRuntime<never>;
  holders: number;
}

/**
 * A registry of keyed conversations. Make one per server request (and pass it to `useXChat`
 * as `conversations`); in the browser, `useXChat` uses the page's own.
 */
export function createXChatConversations(): XChatConversations {
  const conversations = new Map<string, Conversation>();
  // Keys whose last holder let go. They are dropped at the next hold of another key, not at
  // once: React runs an unmount and the next mount's effects apart, a microtask or more.
  const released = new Set<string>();

  const dropReleased = (keptKey: string) => {
    for (const key of released) {
      if (key !== keptKey && conversations.get(key)?.holders === 0) conversations.delete(key);
    }
    released.clear();
  };

  return {
    get(key, provider, options = {}) {
      let conversation = conversations.get(key);
      if (conversation === undefined) {
        const runtime = createXChatRuntime({ ...options, provider, sessionId: key } as XChatRuntimeOptions<
          unknown,
          unknown,
          unknown,
          unknown
        >);
        conversation = { runtime: runtime as XChatRuntime<never>, holders: 0 };
        conversations.set(key, conversation);
      }
      return conversation.runtime as XChatRuntime<never>;
    },
    hold(key, runtime) {
      dropReleased(key);
      let conversation = conversations.get(key);
      // The runtime a chat rendered with wins: it is what the chat shows.
      if (conversation?.runtime !== runtime) {
        conversation = { runtime: runtime as XChatRuntime<never>, holders: 0 };
        conversations.set(key, conversation);
      }
      const held = conversation;
      held.holders += 1;
      const releaseRuntime = runtime.retain();
      let holding = true;
      return () => {
        if (!holding) return;
        holding = false;
        held.holders -= 1;
        if (held.holders === 0 && conversations.get(key) === held) released.add(key);
        releaseRuntime();
      };
    },
  };
}

let pageConversations: XChatConversations | undefined;

/**
 * The conversations of this browser page, made on first use. `undefined` where there is no
 * `document` (a server render): a registry there would outlive the request and be shared
 * by every user, so each server request passes its own or gets unregistered conversations.
 */
export function getPageXChatConversations(): XChatConversations | undefined {
  if (typeof document === 'undefined') return undefined;
  pageConversations ??= createXChatConversations();
  return pageConversations;
}
