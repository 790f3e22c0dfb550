// @vitest-environment jsdom
import { act, cleanup, render, waitFor } from '@testing-library/react';
import { memo } from 'react';
import { afterEach, describe, expect, it } from 'vitest';
import type { AgentEvent } from '../protocol/eventSchemas';
import type { XChatSource } from '../runtime/createXChatSource';
import type { XChatMessageGroup } from '../runtime/xChatMessageGroups';
import { streamingThread } from '../tests/support/messageThread';
import { useXChatMessageGroups } from './useXChatMessageGroups';
import { useXChatMessage } from './useXChatSelector';

afterEach(cleanup);

/** How often each part rendered, and every groups array the list rendered with. */
interface Renders {
  list: number;
  groups: Map<string, number>;
  bubbles: Map<string, number>;
  seen: (readonly XChatMessageGroup[])[];
}

const count = (counts: Map<string, number>, key: string) => counts.set(key, (counts.get(key) ?? 0) + 1);

const Bubble = memo(function Bubble(props: { chat: XChatSource; messageKey: string; renders: Renders }) {
  const info = useXChatMessage(props.chat, props.messageKey);
  count(props.renders.bubbles, props.messageKey);
  return <li>{String(info?.message.content ?? '')}</li>;
});

const Group = memo(function Group(props: { chat: XChatSource; messageKeys: XChatMessageGroup; renders: Renders }) {
  count(props.renders.groups, props.messageKeys[0] as string);
  return props.messageKeys.map((key) => (
    <Bubble key={key} chat={props.chat} messageKey={key} renders={props.renders} />
  ));
});

function Thread(props: { chat: XChatSource; renders: Renders }) {
  const groups = useXChatMessageGroups(props.chat, { size: 2 });
  props.renders.list += 1;
  props.renders.seen.push(groups);
  return (
    <ol>
      {groups.map((keys) => (
        <Group key={keys[0]} chat={props.chat} messageKeys={keys} renders={props.renders} />
      ))}
    </ol>
  );
}

/** A conversation of `earlier` finished messages (m0, m1, ...) and an answer streaming in the same run. */
function renderThread(earlier: number) {
  const { runtime, events, chat } = streamingThread(earlier, (index) => (index % 2 === 0 ? 'user' : 'assistant'));
  const renders: Renders = { list: 0, groups: new Map(), bubbles: new Map(), seen: [] };
  const view = render(<Thread chat={chat} renders={renders} />);
  const keyOf = (messageId: string) => chat.getSnapshot().messages.find((info) => info.message.id === messageId)?.id;
  const dispatch = (...batch: AgentEvent[]) => act(() => runtime.store.batch(batch));
  const shown = () => Array.from(view.container.querySelectorAll('li'), (item) => item.textContent);
  return { chat, events, renders, keyOf, dispatch, shown };
}

const snapshotOf = (counts: Map<string, number>) => Object.fromEntries(counts);

describe('useXChatMessageGroups', () => {
  it('groups the thread by size and keeps every array while a message streams', async () => {
    const { events, renders, keyOf, dispatch, shown } = renderThread(4);
    const first = renders.seen.at(-1) as readonly XChatMessageGroup[];
    expect(first).toEqual([[keyOf('m0'), keyOf('m1')], [keyOf('m2'), keyOf('m3')], [keyOf('answer')]]);

    for (const delta of ['Hel', 'lo']) {
      dispatch(events.create('message.delta', { messageId: 'answer', delta }));
      await waitFor(() => expect(shown().at(-1)).toBe(delta === 'Hel' ? 'Hel' : 'Hello'));
    }
    expect(renders.list).toBe(1);
    expect(renders.seen).toEqual([first]);
  });

  it("renders only the streamed message's bubble for a token: no other bubble, no group, not the list", async () => {
    const { events, renders, keyOf, dispatch, shown } = renderThread(4);
    const groupsBefore = snapshotOf(renders.groups);
    const bubblesBefore = snapshotOf(renders.bubbles);
    expect(Object.values(bubblesBefore)).toEqual([1, 1, 1, 1, 1]);

    const tokens = ['One', ' two', ' three'];
    for (const [index, delta] of tokens.entries()) {
      dispatch(events.create('message.delta', { messageId: 'answer', delta }));
      await waitFor(() => expect(shown().at(-1)).toBe(tokens.slice(0, index + 1).join('')));
    }
    const answer = keyOf('answer') as string;
    expect(snapshotOf(renders.groups)).toEqual(groupsBefore);
    expect(snapshotOf(renders.bubbles)).toEqual({ ...bubblesBefore, [answer]: 1 + tokens.length });
    expect(renders.list).toBe(1);
  });

  it('appending a message extends the last group, then starts a new one; the groups before stay', async () => {
    const { events, renders, keyOf, dispatch, shown } = renderThread(4);
    const [first, second] = renders.seen.at(-1) as readonly XChatMessageGroup[];
    const bubblesBefore = snapshotOf(renders.bubbles);

    dispatch(events.create('message.started', { messageId: 'next', role: 'assistant' }));
    await waitFor(() => expect(shown()).toHaveLength(6));
    const extended = renders.seen.at(-1) as readonly XChatMessageGroup[];
    expect(extended).toEqual([first, second, [keyOf('answer'), keyOf('next')]]);
    expect(extended[0]).toBe(first);
    expect(extended[1]).toBe(second);
    expect(renders.groups.get(first?.[0] as string)).toBe(1);
    expect(renders.groups.get(second?.[0] as string)).toBe(1);
    expect(renders.groups.get(keyOf('answer') as string)).toBe(2);

    dispatch(events.create('message.started', { messageId: 'last', role: 'assistant' }));
    await waitFor(() => expect(shown()).toHaveLength(7));
    const added = renders.seen.at(-1) as readonly XChatMessageGroup[];
    expect(added.slice(0, 3)).toEqual([...extended]);
    for (const [index, group] of added.slice(0, 3).entries()) expect(group).toBe(extended[index]);
    expect(added[3]).toEqual([keyOf('last')]);
    expect(renders.groups.get(keyOf('answer') as string)).toBe(2);
    // The earlier bubbles never rendered again; each new one rendered once.
    expect(snapshotOf(renders.bubbles)).toEqual({
      ...bubblesBefore,
      [keyOf('next') as string]: 1,
      [keyOf('last') as string]: 1,
    });
  });
});
