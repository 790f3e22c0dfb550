import { useSelector } from '@xstate/react';
import { useMemo } from 'react';
import type { XChatSource } from '../runtime/createXChatSource';
import { createXChatMessageGroups, type XChatMessageGroup } from '../runtime/xChatMessageGroups';

export interface UseXChatMessageGroupsOptions {
  /** Messages a group (default 32): about the square root of the longest thread is best. */
  size?: number;
}

/**
 * The shown messages' keys in groups of `size`, for a thread of its own layout
 * (`XChatMessageList` renders one). A group keeps its array while its keys stay the same and
 * the list re-renders only when a message comes or goes. Render each group as a memoized
 * component with one child (a keyed fragment, or `memo` with a compare function: a plain
 * `memo` component's children are each visited when it is skipped) and each message with
 * `useXChatMessage`: a streamed token then costs the same beside 10 or 1,000 messages.
 *
 * @example
 * function Thread({ chat }) {
 *   const groups = useXChatMessageGroups(chat);
 *   return groups.map((keys) => <Group key={keys[0]} chat={chat} messageKeys={keys} />);
 * }
 * const Group = memo(function Group({ chat, messageKeys }) {
 *   return <Fragment key="messages">{messageKeys.map((key) => <Bubble key={key} chat={chat} messageKey={key} />)}</Fragment>;
 * });
 */
export function useXChatMessageGroups<Input>(
  chat: XChatSource<Input>,
  options: UseXChatMessageGroupsOptions = {},
): readonly XChatMessageGroup[] {
  const size = options.size ?? 32;
  const groups = useMemo(() => createXChatMessageGroups({ size }), [size]);
  return useSelector(chat, (view) => groups.select(view.messages));
}
