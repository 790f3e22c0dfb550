// @vitest-environment jsdom
import { act, cleanup, render, waitFor } from '@testing-library/react';
import { memo, Profiler } from 'react';
import { afterEach, describe, expect, it } from 'vitest';
import type { AgentEvent } from '../protocol/eventSchemas';
import { streamingThread } from '../tests/support/messageThread';
import { useXChatMessage } from './useXChatSelector';
import { XChatMessageList, type XChatMessageProps } from './XChatMessageList';

afterEach(cleanup);

/** Renders of each message component, by message key. */
const renders = new Map<string, number>();

const Message = memo(function Message({ chat, messageKey }: XChatMessageProps) {
  const info = useXChatMessage(chat, messageKey);
  renders.set(messageKey, (renders.get(messageKey) ?? 0) + 1);
  return <li>{String(info?.message.content ?? '')}</li>;
});

/** A thread of `earlier` finished messages and a streaming answer, in groups of 2 (sections of 16 messages). */
function renderThread(earlier: number) {
  renders.clear();
  const { runtime, events, chat } = streamingThread(earlier);
  let commits = 0;
  const view = render(
    <Profiler id="thread" onRender={() => (commits += 1)}>
      <ol>
        <XChatMessageList chat={chat} messageComponent={Message} size={2} />
      </ol>
    </Profiler>,
  );
  return {
    events,
    dispatch: (...batch: AgentEvent[]) => act(() => runtime.store.batch(batch)),
    shown: () => Array.from(view.container.querySelectorAll('li'), (item) => item.textContent),
    keyOf: (messageId: string) => runtime.getSnapshot().messages.find((info) => info.message.id === messageId)?.id,
    commits: () => commits,
  };
}

describe('XChatMessageList', () => {
  it('renders every message in order, across groups and sections', () => {
    const { shown } = renderThread(40);
    expect(shown()).toEqual([...Array.from({ length: 40 }, (_, index) => `Message ${index}`), '']);
  });

  it('renders only the streamed message for each token, one commit a flush', async () => {
    const { events, dispatch, shown, keyOf, commits } = renderThread(40);
    const before = new Map(renders);
    const committed = commits();
    const tokens = ['One', ' two', ' three'];
    for (const [index, delta] of tokens.entries()) {
      dispatch(events.create('message.delta', { messageId: 'answer', delta }));
      await waitFor(() => expect(shown().at(-1)).toBe(tokens.slice(0, index + 1).join('')));
    }
    const answer = keyOf('answer') as string;
    expect(Object.fromEntries(renders)).toEqual({ ...Object.fromEntries(before), [answer]: 1 + tokens.length });
    expect(commits() - committed).toBe(tokens.length);
  });

  it('renders an appended message once and no message before it again', async () => {
    const { events, dispatch, shown, keyOf } = renderThread(40);
    const before = new Map(renders);
    dispatch(events.create('message.started', { messageId: 'next', role: 'user' }));
    await waitFor(() => expect(shown()).toHaveLength(42));
    expect(Object.fromEntries(renders)).toEqual({ ...Object.fromEntries(before), [keyOf('next') as string]: 1 });
  });
});
