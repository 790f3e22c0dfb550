// @vitest-environment jsdom
import { act, cleanup, render, waitFor } from '@testing-library/react';
import { memo } from 'react';
import { afterEach, describe, expect, it } from 'vitest';
import type { AgentMessageState } from '../machines/agentState';
import { selectAgentTimeline, selectMessages, selectPendingInput, selectRunningRuns } from '../machines/selectors';
import { createLocalAgentProvider, type LocalAgentInput } from '../providers/local/createLocalAgentProvider';
import type { XChatSource } from '../runtime/createXChatSource';
import { type UseXChatResult, useXChat } from './useXChat';
import { useXChatSelector } from './useXChatSelector';

afterEach(cleanup);

type Chat = UseXChatResult<LocalAgentInput, AgentMessageState>;

const tokens = (count: number) => Array.from({ length: count }, (_, index) => `t${index} `);

/** Each render of a component, with what it selected. */
type Renders = Record<'running' | 'earlierRun' | 'pending', unknown[]>;

const RunningBadge = memo(function RunningBadge(props: { chat: XChatSource<LocalAgentInput>; renders: Renders }) {
  const { chat } = props;
  const running = useXChatSelector(chat, (view) => selectRunningRuns(view.agentState, chat.runtime.sessionId));
  props.renders.running.push(running.map((run) => run.status));
  return <span>{running.length}</span>;
});

/** The first run's timeline and messages: nothing of it changes while a later run streams. */
const EarlierRun = memo(function EarlierRun(props: {
  chat: XChatSource<LocalAgentInput>;
  runId: string;
  renders: Renders;
}) {
  const { chat, runId } = props;
  const timeline = useXChatSelector(chat, (view) => selectAgentTimeline(view.agentState, { runId }));
  const messages = useXChatSelector(chat, (view) => selectMessages(view.agentState, { runId }));
  const pending = useXChatSelector(chat, (view) => selectPendingInput(view.agentState, runId));
  props.renders.earlierRun.push([timeline.length, messages.length]);
  props.renders.pending.push(pending.toolCalls.length);
  return <span>{timeline.length}</span>;
});

function App(props: {
  provider: ReturnType<typeof createLocalAgentProvider>;
  probe: { chat?: Chat };
  renders: Renders;
  earlierRunId?: string;
}) {
  const chat = useXChat({ provider: props.provider });
  props.probe.chat = chat;
  return (
    <>
      <RunningBadge chat={chat.chat} renders={props.renders} />
      {props.earlierRunId === undefined ? null : (
        <EarlierRun chat={chat.chat} runId={props.earlierRunId} renders={props.renders} />
      )}
    </>
  );
}

describe('useXChatSelector with the selectors', () => {
  it('renders once per change of what it selects, not once per flush, while a message streams', async () => {
    const provider = createLocalAgentProvider({
      script: (input) =>
        input.prompt === 'first'
          ? { steps: [{ type: 'text', deltas: ['Done.'] }] }
          : { steps: [{ type: 'text', deltas: tokens(60) }], delayMs: 2 },
    });
    const renders: Renders = { running: [], earlierRun: [], pending: [] };
    const probe: { chat?: Chat } = {};
    const view = render(<App provider={provider} probe={probe} renders={renders} />);
    const first = await act(() => probe.chat!.onRequest({ prompt: 'first' }));
    await waitFor(() => expect(probe.chat!.isRequesting).toBe(false));
    view.rerender(<App provider={provider} probe={probe} renders={renders} earlierRunId={first.runId} />);
    await waitFor(() => expect(renders.earlierRun.at(-1)).toEqual([2, 2]));
    expect(renders.pending.at(-1)).toBe(0);
    for (const list of Object.values(renders)) list.length = 0;

    // Count the flushes the chat's view goes through while the second run streams.
    let flushes = 0;
    const { unsubscribe } = probe.chat!.chat.subscribe(() => {
      flushes += 1;
    });
    const second = await act(() => probe.chat!.onRequest({ prompt: 'second' }));
    await waitFor(() => expect(renders.running.at(-1)).toEqual([]));
    unsubscribe();

    expect(second.status).toBe('completed');
    expect(probe.chat!.messages.at(-1)?.message.content).toBe(tokens(60).join(''));
    expect(flushes).toBeGreaterThan(5);
    // The running runs: none, the second run, none again; never one render per flush.
    expect(renders.running).toEqual([['running'], []]);
    // Nothing of the first run changed: its timeline, messages and pending input rendered no more.
    expect(renders.earlierRun).toEqual([]);
    expect(renders.pending).toEqual([]);
  });
});
