import { type ComponentType, createElement, Fragment, memo, type ReactNode, useState } from 'react';
import type { XChatSource } from '../runtime/createXChatSource';
import { createXChatStableChunks, type XChatMessageGroup } from '../runtime/xChatMessageGroups';
import { useXChatMessageGroups } from './useXChatMessageGroups';

/** What `XChatMessageList` gives each message component. */
export interface XChatMessageProps<Input = unknown> {
  chat: XChatSource<Input>;
  messageKey: string;
}

export interface XChatMessageListProps<Input = unknown> {
  chat: XChatSource<Input>;
  /**
   * Renders one message, reading it with `useXChatMessage(chat, messageKey)`. A component
   * made once (not in a render), best wrapped in `memo`.
   */
  messageComponent: ComponentType<XChatMessageProps<Input>>;
  /** Messages a group (default 32). */
  size?: number;
}

/** Groups a section: a token visits the sections, its section's groups and its group's messages. */
const SECTION_SIZE = 8;

type MessageComponent = ComponentType<XChatMessageProps<never>>;

// Each view renders one keyed fragment, not its items: React skips an unchanged view
// without walking its items (a memo component's own children would each be visited), so
// a token costs about the same beside 10 or 1,000 messages.

const XChatMessageGroupView = memo(function XChatMessageGroupView(props: {
  chat: XChatSource<never>;
  messageKeys: XChatMessageGroup;
  messageComponent: MessageComponent;
}) {
  const { chat, messageKeys, messageComponent } = props;
  return createElement(
    Fragment,
    { key: 'messages' },
    messageKeys.map((messageKey) => createElement(messageComponent, { key: messageKey, chat, messageKey })),
  );
});

const XChatMessageSectionView = memo(function XChatMessageSectionView(props: {
  chat: XChatSource<never>;
  groups: readonly XChatMessageGroup[];
  messageComponent: MessageComponent;
}) {
  const { chat, groups, messageComponent } = props;
  return createElement(
    Fragment,
    { key: 'groups' },
    groups.map((messageKeys) =>
      createElement(XChatMessageGroupView, { key: messageKeys[0], chat, messageKeys, messageComponent }),
    ),
  );
});

/**
 * A thread's messages, each rendered by `messageComponent`, in memoized groups of `size`
 * (`useXChatMessageGroups`) and sections of 8 groups: a streamed token renders its
 * message's component, and React visits the sections, one section's groups and one
 * group's messages, not every message. It renders no element of its own: put it in the
 * list element.
 *
 * @example
 * const Message = memo(function Message({ chat, messageKey }: XChatMessageProps) {
 *   const info = useXChatMessage(chat, messageKey);
 *   return <li>{String(info?.message.content ?? '')}</li>;
 * });
 * <ol><XChatMessageList chat={chat} messageComponent={Message} /></ol>
 */
export function XChatMessageList<Input>(props: XChatMessageListProps<Input>): ReactNode {
  const chat = props.chat as XChatSource<never>;
  const messageComponent = props.messageComponent as MessageComponent;
  const groups = useXChatMessageGroups(chat, props.size === undefined ? {} : { size: props.size });
  const [sections] = useState(() => createXChatStableChunks<XChatMessageGroup>(SECTION_SIZE));
  return sections
    .select(groups)
    .map((section) =>
      createElement(XChatMessageSectionView, { key: section[0]?.[0], chat, groups: section, messageComponent }),
    );
}
