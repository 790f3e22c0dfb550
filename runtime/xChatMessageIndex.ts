import type { AgentMessageInfo } from '../machines/selectors';

/** Where each message of one messages array is, by its key (`AgentMessageInfo.id`). */
export interface XChatMessageIndex {
  /** The keys in order: the same array for every messages array indexed with the same keys. */
  readonly keys: readonly string[];
  readonly positions: ReadonlyMap<string, number>;
}

const indexes = new WeakMap<readonly AgentMessageInfo[], XChatMessageIndex>();

function hasKeys(messages: readonly AgentMessageInfo[], keys: readonly string[]): boolean {
  if (messages.length !== keys.length) return false;
  for (let position = 0; position < keys.length; position += 1) {
    if (messages[position]?.id !== keys[position]) return false;
  }
  return true;
}

/**
 * The index of a messages array, made once per array. A streamed token makes a new array
 * with the same keys: given the array before it (`previous`), its index is shared, so the
 * cost is one pass of comparisons instead of a new map of the whole thread.
 *
 * @example
 * const { positions } = indexXChatMessages(view.messages);
 * view.messages[positions.get(messageKey) ?? -1]; // the entry, or undefined
 */
export function indexXChatMessages(
  messages: readonly AgentMessageInfo[],
  previous?: readonly AgentMessageInfo[],
): XChatMessageIndex {
  let index = indexes.get(messages);
  if (index !== undefined) return index;
  const before = previous === undefined ? undefined : indexes.get(previous);
  if (before !== undefined && hasKeys(messages, before.keys)) {
    index = before;
  } else {
    const keys = messages.map((info) => info.id);
    index = { keys, positions: new Map(keys.map((key, position) => [key, position])) };
  }
  indexes.set(messages, index);
  return index;
}

/** The entry with this key in `messages`, or `undefined`. */
export function findXChatMessage(
  messages: readonly AgentMessageInfo[],
  messageKey: string,
): AgentMessageInfo | undefined {
  const position = indexXChatMessages(messages).positions.get(messageKey);
  return position === undefined ? undefined : messages[position];
}

/**
 * The keys whose entry differs between two messages arrays: changed, added or gone. With the
 * same keys (a streamed token), a pass of identity checks finds the one that changed.
 *
 * @example
 * changedXChatMessageKeys(before, after); // ['run-1:answer']
 */
export function changedXChatMessageKeys(
  previous: readonly AgentMessageInfo[],
  next: readonly AgentMessageInfo[],
): string[] {
  const before = indexXChatMessages(previous);
  const after = indexXChatMessages(next, previous);
  const changed: string[] = [];
  if (after === before) {
    for (let position = 0; position < next.length; position += 1) {
      if (next[position] !== previous[position]) changed.push(before.keys[position] as string);
    }
    return changed;
  }
  for (const key of after.keys) {
    if (findXChatMessage(next, key) !== findXChatMessage(previous, key)) changed.push(key);
  }
  for (const key of before.keys) if (!after.positions.has(key)) changed.push(key);
  return changed;
}
