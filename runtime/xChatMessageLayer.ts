import type { AgentMessageState } from '../machines/agentState';
import type { AgentMessageInfo, AgentMessageInfoStatus } from '../machines/selectors';

/** A message shown before the conversation's own: `id` defaults to `default-<index>`, `status` to `local`. */
export interface XChatDefaultMessage {
  id?: string;
  message: AgentMessageState;
  status?: AgentMessageInfoStatus;
}

/**
 * Loads the messages a conversation starts with (seed 003): given the conversation's key, it
 * answers with them, synchronously or with a promise.
 */
export type XChatDefaultMessagesLoader = (info: {
  conversationKey: string;
}) => readonly XChatDefaultMessage[] | Promise<readonly XChatDefaultMessage[]>;

/** The messages a chat starts with: a list, or a loader (history fetched from a server, say). */
export type XChatDefaultMessages = readonly XChatDefaultMessage[] | XChatDefaultMessagesLoader;

/** What `setMessage` changes of one entry. */
export type XChatMessagePatch = Partial<Pick<AgentMessageInfo, 'message' | 'status'>>;

/** The next list, or a function of the current one (as React's `setState` takes). */
export type XChatMessagesUpdate =
  | readonly AgentMessageInfo[]
  | ((current: AgentMessageInfo[]) => readonly AgentMessageInfo[]);

/**
 * The compatibility message layer of one conversation: an overlay over AgentState's
 * messages that never touches AgentState. It keeps messages of its own (the default
 * messages, and those a `setMessages` added, each placed after the conversation message it
 * followed), edits by message id (they win over later changes of that message) and removed
 * ids. AgentState's order is kept: the layer adds, edits and hides messages, never reorders them.
 *
 * @example
 * const layer = createXChatMessageLayer({ readMessages: () => runtime.getSnapshot().messages });
 * layer.setMessage(messageId, { status: 'error' });
 * layer.apply(runtime.getSnapshot().messages); // the edited entry in place of the original
 */
export interface XChatMessageLayer {
  /** `messages` with the layer applied. Unchanged entries, and an unchanged list, keep their identity. */
  apply(messages: readonly AgentMessageInfo[]): AgentMessageInfo[];
  /**
   * Replaces what the chat shows: entries with a conversation message's id edit or keep it,
   * missing ones hide it, other entries become messages of the layer.
   */
  setMessages(update: XChatMessagesUpdate): void;
  /** Edits one message, of the layer or of the conversation; an unknown id changes nothing. */
  setMessage(id: string, patch: XChatMessagePatch | ((current: AgentMessageInfo) => XChatMessagePatch)): void;
  /** Hides one message; a message of the layer is dropped. */
  removeMessage(id: string): void;
  /**
   * Runs the default-messages loader once (later calls return the same promise); their
   * messages go first. A loader that answers synchronously has its messages applied before
   * `load` returns.
   */
  load(): Promise<void>;
  /** Why the default-messages loader failed, when it did. */
  readonly loadError: unknown;
  subscribe(listener: () => void): () => void;
}

interface LocalMessage {
  info: AgentMessageInfo;
  /** The conversation message it follows; `undefined`: before all of them. */
  after: string | undefined;
}

function toDefaultEntries(messages: readonly XChatDefaultMessage[]): LocalMessage[] {
  return messages.map((entry, index) => ({
    info: { id: entry.id ?? `default-${index}`, message: entry.message, status: entry.status ?? 'local' },
    after: undefined,
  }));
}

function sameEntries(a: readonly AgentMessageInfo[], b: readonly AgentMessageInfo[]): boolean {
  return a.length === b.length && a.every((entry, index) => entry === b[index]);
}

export function createXChatMessageLayer(options: {
  /** The conversation's messages now (the runtime's `getSnapshot().messages`). */
  readMessages: () => readonly AgentMessageInfo[];
  defaultMessages?: XChatDefaultMessages;
  /** What the loader is given as `conversationKey` (useXChat gives the conversation's session id). Default `''`. */
  conversationKey?: string;
}): XChatMessageLayer {
  const { readMessages, defaultMessages } = options;
  const conversationKey = options.conversationKey ?? '';
  let locals: LocalMessage[] = Array.isArray(defaultMessages) ? toDefaultEntries(defaultMessages) : [];
  let patches = new Map<string, XChatMessagePatch>();
  let removed = new Set<string>();
  let version = 0;
  let loading: Promise<void> | undefined;
  let loadError: unknown;
  const listeners = new Set<() => void>();
  // One edited entry per conversation entry and patch: a streamed delta makes a new one.
  const edited = new WeakMap<AgentMessageInfo, { patch: XChatMessagePatch; result: AgentMessageInfo }>();
  let last: { base: readonly AgentMessageInfo[]; version: number; result: AgentMessageInfo[] } | undefined;

  const changed = () => {
    version += 1;
    for (const listener of [...listeners]) listener();
  };

  const editedEntry = (info: AgentMessageInfo, patch: XChatMessagePatch): AgentMessageInfo => {
    const hit = edited.get(info);
    if (hit?.patch === patch) return hit.result;
    const result = { ...info, ...patch, id: info.id };
    edited.set(info, { patch, result });
    return result;
  };

  const build = (base: readonly AgentMessageInfo[]): AgentMessageInfo[] => {
    if (locals.length === 0 && patches.size === 0 && removed.size === 0) return [...base];
    const followers = new Map<string | undefined, AgentMessageInfo[]>();
    for (const { info, after } of locals) {
      const list = followers.get(after);
      if (list === undefined) followers.set(after, [info]);
      else list.push(info);
    }
    const result: AgentMessageInfo[] = [...(followers.get(undefined) ?? [])];
    followers.delete(undefined);
    for (const info of base) {
      if (!removed.has(info.id)) {
        const patch = patches.get(info.id);
        result.push(patch === undefined ? info : editedEntry(info, patch));
      }
      const after = followers.get(info.id);
      if (after !== undefined) {
        result.push(...after);
        followers.delete(info.id);
      }
    }
    // Messages that followed one the conversation no longer has go last.
    for (const rest of followers.values()) result.push(...rest);
    return result;
  };

  const apply = (base: readonly AgentMessageInfo[]): AgentMessageInfo[] => {
    if (last?.base === base && last.version === version) return last.result;
    const built = build(base);
    // AgentState changes that leave the messages as they were keep the list as it was.
    const result = last !== undefined && sameEntries(last.result, built) ? last.result : built;
    last = { base, version, result };
    return result;
  };

  return {
    apply,
    setMessages(update) {
      const base = readMessages();
      const current = apply(base);
      const next = typeof update === 'function' ? update(current) : update;
      const baseById = new Map(base.map((info) => [info.id, info]));
      const currentById = new Map(current.map((info) => [info.id, info]));
      const nextLocals: LocalMessage[] = [];
      const nextPatches = new Map<string, XChatMessagePatch>();
      const nextRemoved = new Set(baseById.keys());
      let after: string | undefined;
      for (const entry of next) {
        const original = baseById.get(entry.id);
        if (original === undefined) {
          nextLocals.push({ info: entry, after });
          continue;
        }
        nextRemoved.delete(entry.id);
        after = entry.id;
        const kept = patches.get(entry.id);
        if (kept !== undefined && entry === currentById.get(entry.id)) nextPatches.set(entry.id, kept);
        else if (entry.message !== original.message || entry.status !== original.status) {
          nextPatches.set(entry.id, { message: entry.message, status: entry.status });
        }
      }
      locals = nextLocals;
      patches = nextPatches;
      removed = nextRemoved;
      changed();
    },
    setMessage(id, patch) {
      const index = locals.findIndex((local) => local.info.id === id);
      const local = locals[index];
      if (local !== undefined) {
        const change = typeof patch === 'function' ? patch(local.info) : patch;
        locals = locals.map((entry, at) =>
          at === index ? { info: { ...local.info, ...change, id }, after: local.after } : entry,
        );
        changed();
        return;
      }
      const original = readMessages().find((info) => info.id === id);
      if (original === undefined || removed.has(id)) return;
      const kept = patches.get(id);
      const change =
        typeof patch === 'function' ? patch(kept === undefined ? original : editedEntry(original, kept)) : patch;
      patches = new Map(patches).set(id, { ...kept, ...change });
      changed();
    },
    removeMessage(id) {
      const kept = locals.filter((local) => local.info.id !== id);
      const inConversation = readMessages().some((info) => info.id === id);
      if (kept.length === locals.length && (!inConversation || removed.has(id))) return;
      locals = kept;
      if (inConversation) {
        removed = new Set(removed).add(id);
        patches = new Map(patches);
        patches.delete(id);
      }
      changed();
    },
    load() {
      if (loading !== undefined) return loading;
      if (typeof defaultMessages !== 'function') {
        loading = Promise.resolve();
        return loading;
      }
      const loaded = (messages: readonly XChatDefaultMessage[]) => {
        locals = [...toDefaultEntries(messages), ...locals];
        changed();
      };
      const failed = (error: unknown) => {
        loadError = error;
        changed();
      };
      let answer: readonly XChatDefaultMessage[] | Promise<readonly XChatDefaultMessage[]>;
      try {
        answer = defaultMessages({ conversationKey });
      } catch (error) {
        failed(error);
        loading = Promise.resolve();
        return loading;
      }
      if (Array.isArray(answer)) {
        loaded(answer);
        loading = Promise.resolve();
        return loading;
      }
      loading = Promise.resolve(answer).then(loaded, failed);
      return loading;
    },
    get loadError() {
      return loadError;
    },
    subscribe(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
  };
}
