import type { AgentProvider } from '../providers/AgentProvider';
import { createXChatRuntime, type XChatRuntime, type XChatRuntimeOptions } from './createXChatRuntime';

/** What a new conversation's runtime is made with, beside its provider and session id. */
export type XChatConversationOptions = Omit<
  XChatRuntimeOptions<unknown, unknown, unknown, unknown>,
  'provider' | 'sessionId'
>;

/**
 * Keyed conversations: one chat runtime per key, shared by every chat that holds or keeps it
 * and dropped once none does. A chat holds the conversation it shows (its runs go on while it
 * is held) and keeps those it showed before (their state stays, their runs are cancelled
 * once nobody holds them). A browser page has one (`getPageXChatConversations`); a server
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
   * id is `key` and whose runs use `provider` (also when the one it had was destroyed).
   * Getting it does not hold it, so a render may call this and be thrown away.
   */
  get<Input, Request, Chunk, Context>(
    key: string,
    provider: AgentProvider<Input, Request, Chunk, Context>,
    options?: XChatConversationOptions,
  ): XChatRuntime<Input>;
  /**
   * Holds `runtime` as the conversation `key`, and retains it, until the returned function
   * is called (a second call does nothing). When its last holder lets go (and none holds it
   * again within the task), its runs are cancelled and its commands in flight interrupted
   * (`XChatRuntime.retain`); the conversation itself stays while it is kept, and then until
   * another conversation is held: a chat that unmounts and mounts again (StrictMode's
   * effects, a panel closed and opened) finds it.
   */
  hold<Input>(key: string, runtime: XChatRuntime<Input>): () => void;
  /**
   * Keeps `runtime` as the conversation `key`, with its store and its message layer, without
   * keeping its runs going, until the returned function is called: what a chat does with the
   * conversations it switched away from, so it finds them as they were when switched back.
   */
  keep<Input>(key: string, runtime: XChatRuntime<Input>): () => void;
}

interface Conversation {
  runtime: XChatRuntime<never>;
  /** Who holds or keeps it. */
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

  /** Registers `runtime` as the conversation `key` until the returned function is called. */
  const register = (key: string, runtime: XChatRuntime<never>): (() => void) => {
    dropReleased(key);
    // A destroyed conversation is never handed out again: the next `get` makes a new one.
    if (runtime.destroyed) return () => undefined;
    let conversation = conversations.get(key);
    // The runtime a chat rendered with wins: it is what the chat shows.
    if (conversation?.runtime !== runtime) {
      conversation = { runtime, holders: 0 };
      conversations.set(key, conversation);
    }
    const held = conversation;
    held.holders += 1;
    let holding = true;
    return () => {
      if (!holding) return;
      holding = false;
      held.holders -= 1;
      if (held.holders === 0 && conversations.get(key) === held) released.add(key);
    };
  };

  return {
    get(key, provider, options = {}) {
      let conversation = conversations.get(key);
      if (conversation?.runtime.destroyed === true) {
        conversations.delete(key);
        conversation = undefined;
      }
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
      const unregister = register(key, runtime as XChatRuntime<never>);
      const releaseRuntime = runtime.retain();
      let holding = true;
      return () => {
        if (!holding) return;
        holding = false;
        unregister();
        releaseRuntime();
      };
    },
    keep(key, runtime) {
      return register(key, runtime as XChatRuntime<never>);
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
