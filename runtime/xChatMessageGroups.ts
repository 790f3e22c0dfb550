import type { AgentMessageInfo } from '../machines/selectors';
import { indexXChatMessages } from './xChatMessageIndex';

/** The keys of up to `size` consecutive messages, never empty. */
export type XChatMessageGroup = readonly string[];

/**
 * Splits a list into chunks of `size`, keeping identities: a chunk keeps its array while its
 * items stay the same (`===`), and the result keeps its array while every chunk does.
 * Appending changes only the last chunk (or adds one); removing an item changes its chunk
 * and the ones after it.
 */
export interface XChatStableChunks<Item> {
  select(items: readonly Item[]): readonly (readonly Item[])[];
}

function sameItems<Item>(chunk: readonly Item[], items: readonly Item[], start: number, end: number): boolean {
  if (chunk.length !== end - start) return false;
  for (let position = start; position < end; position += 1) {
    if (chunk[position - start] !== items[position]) return false;
  }
  return true;
}

/**
 * Makes the chunk memory of one list.
 *
 * @example
 * const chunks = createXChatStableChunks<string>(2);
 * const first = chunks.select(['a', 'b', 'c']); // [['a', 'b'], ['c']]
 * chunks.select(['a', 'b', 'c', 'd'])[0] === first[0]; // true
 */
export function createXChatStableChunks<Item>(size: number): XChatStableChunks<Item> {
  // A size below 1 would never move past the first chunk.
  if (!Number.isInteger(size) || size < 1) {
    throw new RangeError(`The group size must be a positive integer, not ${size}`);
  }
  let lastItems: readonly Item[] | undefined;
  let lastChunks: readonly (readonly Item[])[] = [];
  return {
    select(items) {
      if (items === lastItems) return lastChunks;
      const chunks: (readonly Item[])[] = [];
      let kept = true;
      for (let start = 0; start < items.length; start += size) {
        const end = Math.min(start + size, items.length);
        const before = lastChunks[chunks.length];
        const same = before !== undefined && sameItems(before, items, start, end);
        kept &&= same;
        chunks.push(same ? before : items.slice(start, end));
      }
      lastItems = items;
      if (!kept || chunks.length !== lastChunks.length) lastChunks = chunks;
      return lastChunks;
    },
  };
}

/** The group memory of one list: `select(view.messages)` gives the message keys in stable groups. */
export interface XChatMessageGroups {
  select(messages: readonly AgentMessageInfo[]): readonly XChatMessageGroup[];
}

/**
 * Groups a thread's message keys by `size` (see `XChatStableChunks`): a token streamed into
 * a message changes nothing, appending a message changes only the last group. React clones
 * every child of a component one of whose children rendered, so a flat list of 1,000 bubbles
 * visits 1,000 siblings per streamed token; memoized groups of 32 bound that.
 *
 * @example
 * const groups = createXChatMessageGroups({ size: 32 });
 * groups.select(view.messages); // [['m0', ..., 'm31'], ['m32', ...]]
 */
export function createXChatMessageGroups(options: { size: number }): XChatMessageGroups {
  const chunks = createXChatStableChunks<string>(options.size);
  let lastMessages: readonly AgentMessageInfo[] | undefined;
  return {
    select(messages) {
      // Given the messages before, a token's new array shares their index and its keys.
      const { keys } = indexXChatMessages(messages, lastMessages);
      lastMessages = messages;
      return chunks.select(keys);
    },
  };
}
