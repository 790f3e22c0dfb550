// @vitest-environment jsdom
import { act, cleanup, render, waitFor } from '@testing-library/react';
import { useSelector } from '@xstate/react';
import { useSyncExternalStore } from 'react';
import { afterEach, describe, expect, it } from 'vitest';
import { createMemoryAgentCheckpointStorage } from '../checkpoint/createMemoryAgentCheckpointStorage';
import { createXChatRuntime, type XChatRuntime } from '../runtime/createXChatRuntime';
import { createRemoteRuntime, requestCompletedRun } from '../tests/support/remoteRuntime';

afterEach(cleanup);

/** The number of messages, read through the runtime's `subscribe` and `getSnapshot`. */
function MessageCount({ chat, rendered }: { chat: XChatRuntime<unknown>; rendered: number[] }) {
  const count = useSyncExternalStore(chat.subscribe, () => chat.getSnapshot().messages.length);
  rendered.push(count);
  return <p data-testid="count">{count}</p>;
}

/** The conversation machine's state, read with `useSelector` straight from the runtime's actor. */
function Phase({ chat }: { chat: XChatRuntime<unknown> }) {
  const phase = useSelector(chat.actor, (snapshot) => String(snapshot.value));
  const runs = useSelector(
    chat.actor,
    (snapshot) => Object.keys(snapshot.children.session?.getSnapshot().children ?? {}).length,
  );
  return <p data-testid="phase">{`${phase} ${runs}`}</p>;
}

describe('reading the runtime from React', () => {
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
    });
    // The runtime notifies at its next animation frame (jsdom paints them): wait for it.
    await waitFor(() => expect(view.getByTestId('count').textContent).toBe('2'));
  });

  it('selects the conversation machine from its actor: restoring, then ready, with no run actor left after a run', async () => {
    const remote = createRemoteRuntime();
    const chat = createXChatRuntime({
      provider: remote.provider,
      sessionId: 'session-1',
      checkpointStorage: createMemoryAgentCheckpointStorage(),
    });
    const view = render(<Phase chat={chat} />);
    expect(view.getByTestId('phase').textContent).toBe('restoring 0');
    await act(async () => {
      await chat.restored;
    });
    expect(view.getByTestId('phase').textContent).toBe('ready 0');
    await act(async () => {
      await requestCompletedRun(chat, remote, 'Go');
    });
    expect(view.getByTestId('phase').textContent).toBe('ready 0');
  });
});
