// @vitest-environment jsdom
import { act, cleanup, render } from '@testing-library/react';
import { useSelector } from '@xstate/react';
import { afterEach, describe, expect, it } from 'vitest';
import { createXChatRuntime, type XChatRuntime } from '../runtime/createXChatRuntime';
import { createRemoteRuntime, requestCompletedRun } from '../tests/support/remoteRuntime';

afterEach(cleanup);

const tick = () => new Promise((resolve) => setTimeout(resolve, 0));

/** The number of messages, read with `useSelector` straight from the runtime's actor. */
function MessageCount({ chat, rendered }: { chat: XChatRuntime<unknown>; rendered: number[] }) {
  const count = useSelector(chat.actor, ({ context }) => context.view.messages.length);
  rendered.push(count);
  return <p data-testid="count">{count}</p>;
}

describe('useSelector on the runtime actor', () => {
  it('renders the view as it is now, and follows it', async () => {
    const remote = createRemoteRuntime();
    const chat = createXChatRuntime({ provider: remote.provider, sessionId: 'session-1' });
    await requestCompletedRun(chat, remote, 'Go');
    // Nobody watched that run: the first render still shows it.
    const rendered: number[] = [];
    const view = render(<MessageCount chat={chat} rendered={rendered} />);
    expect(rendered[0]).toBe(1);

    await act(async () => {
      await requestCompletedRun(chat, remote, 'Again');
      for (let index = 0; index < 3; index += 1) await tick();
    });
    expect(view.getByTestId('count').textContent).toBe('2');
  });
});
