// @vitest-environment jsdom
import { act, cleanup, render, waitFor } from '@testing-library/react';
import { StrictMode } from 'react';
import { afterEach, describe, expect, it } from 'vitest';
import type { AgentMessageState } from '../machines/agentState';
import { AgentCommandError } from '../providers/AgentCommandError';
import type { AgentProvider } from '../providers/AgentProvider';
import type { AgentRunResult } from '../providers/runAgentProvider';
import { createXChatConversations, type XChatConversations } from '../runtime/xChatConversations';
import { createRemoteRuntime } from '../tests/support/remoteRuntime';
import { type UseXChatOptions, type UseXChatResult, useXChat } from './useXChat';

afterEach(cleanup);

type Input = { prompt: string };
type Chat = UseXChatResult<Input, AgentMessageState>;
// biome-ignore lint/suspicious/noExplicitAny: a provider of the prompt input, whatever it sends and reads
type Options = UseXChatOptions<Input, any, any, any, AgentMessageState>;

const nextTask = () => new Promise((resolve) => setTimeout(resolve, 0));

/**
 * A runtime simulated in process: the test feeds each run's stream (`run.aborted` tells
 * whether its signal was aborted), and each command waits until its own signal is aborted
 * (`commandSignals`, one per `executeCommand` call).
 */
function stallingRemote() {
  const commandSignals: AbortSignal[] = [];
  const remote = createRemoteRuntime({
    onCommand: async function* (_command, _run, signal) {
      commandSignals.push(signal);
      await new Promise((_resolve, reject) => {
        signal.addEventListener('abort', () => reject(signal.reason), { once: true });
      });
    },
  });
  return { remote, commandSignals, provider: remote.provider as AgentProvider<Input, unknown, unknown, unknown> };
}

function ChatProbe({ options, probe }: { options: Options; probe: { current?: Chat } }) {
  const chat = useXChat(options);
  void [chat.messages, chat.agentState, chat.isRequesting, chat.commandStates];
  probe.current = chat;
  return null;
}

function renderChat(options: Options) {
  const probe: { current?: Chat } = {};
  const view = render(<ChatProbe options={options} probe={probe} />);
  return {
    get chat(): Chat {
      if (probe.current === undefined) throw new Error('not rendered');
      return probe.current;
    },
    rerender: (next: Options) => view.rerender(<ChatProbe options={next} probe={probe} />),
    unmount: view.unmount,
  };
}

/** Starts a request in `chat` and resolves with its run, once the runtime has opened its stream. */
async function startRun(chat: { readonly chat: Chat }, remote: ReturnType<typeof createRemoteRuntime>, prompt: string) {
  const started = remote.nextRun();
  let result: Promise<AgentRunResult> | undefined;
  act(() => {
    result = chat.chat.onRequest({ prompt });
  });
  const run = await started;
  return { run, result: result as Promise<AgentRunResult> };
}

describe('useXChat switching conversationKey', () => {
  it("stops the old conversation's stream and interrupts its command in flight, and keeps its state for when it is shown again", async () => {
    const { remote, commandSignals, provider } = stallingRemote();
    const conversations: XChatConversations = createXChatConversations();
    const chat = renderChat({ provider, conversationKey: 'a', conversations });
    const { run, result } = await startRun(chat, remote, 'Pay the invoice');
    run.push((events) => [events.emit('approval.requested', { approvalId: 'pay' })]);
    await waitFor(() => expect(Object.values(chat.chat.agentState.approvals)[0]?.status).toBe('waiting'));
    let approving: Promise<unknown> = Promise.resolve();
    act(() => {
      approving = chat.chat.agentActions
        .resolveApproval({ runId: run.runId, approvalId: 'pay', decision: 'approved' })
        .catch((error: unknown) => error);
    });
    await waitFor(() => expect(commandSignals).toHaveLength(1));
    const first = chat.chat.chat.runtime;

    chat.rerender({ provider, conversationKey: 'b', conversations });
    expect(chat.chat.messages).toEqual([]);
    expect((await result).status).toBe('cancelled');
    expect(run.aborted).toBe(true);
    expect(commandSignals[0]?.aborted).toBe(true);
    const failure = await approving;
    expect(AgentCommandError.isInstance(failure) && failure.code).toBe('interrupted');

    chat.rerender({ provider, conversationKey: 'a', conversations });
    expect(chat.chat.chat.runtime).toBe(first);
    await waitFor(() => expect(chat.chat.isRequesting).toBe(false));
    expect(chat.chat.messages.map(({ message }) => message.content)).toEqual(['Pay the invoice']);
    expect(chat.chat.agentState.runs[run.runId]?.status).toBe('cancelled');
    expect(Object.values(chat.chat.commandStates).map(({ status }) => status)).toEqual([]);
  });

  it('leaves the conversation streaming while another chat still shows it', async () => {
    const { remote, provider } = stallingRemote();
    const conversations = createXChatConversations();
    const list = renderChat({ provider, conversationKey: 'a', conversations });
    const detail = renderChat({ provider, conversationKey: 'a', conversations });
    const { run, result } = await startRun(list, remote, 'Plan the trip');
    run.push((events) => [events.emit('message.started', { messageId: 'answer', role: 'assistant' })]);

    list.rerender({ provider, conversationKey: 'b', conversations });
    await nextTask();
    await nextTask();
    expect(run.aborted).toBe(false);
    run.push((events) => [
      events.emit('message.delta', { messageId: 'answer', delta: 'Day one: Paris.' }),
      events.emit('message.completed', { messageId: 'answer' }),
      events.emit('run.completed', {}),
    ]);
    run.end();
    expect((await result).status).toBe('completed');
    await waitFor(() => expect(detail.chat.messages.at(-1)?.message.content).toBe('Day one: Paris.'));
    expect(list.chat.messages).toEqual([]);
  });

  it("keeps a keyed conversation streaming through StrictMode's double mount", async () => {
    const { remote, provider } = stallingRemote();
    const conversations = createXChatConversations();
    const probe: { current?: Chat } = {};
    render(
      <StrictMode>
        <ChatProbe options={{ provider, conversationKey: 'a', conversations }} probe={probe} />
      </StrictMode>,
    );
    const { run, result } = await startRun({ chat: probe.current as Chat }, remote, 'Hi');
    await nextTask();
    await nextTask();
    expect(run.aborted).toBe(false);
    run.push((events) => [events.emit('run.completed', {})]);
    run.end();
    expect((await result).status).toBe('completed');
    expect(conversations.get('a', provider)).toBe(probe.current?.chat.runtime);
  });

  it('switched back before the next task, the conversation goes on as if it had not been left', async () => {
    const { remote, provider } = stallingRemote();
    const conversations = createXChatConversations();
    const chat = renderChat({ provider, conversationKey: 'a', conversations });
    const { run, result } = await startRun(chat, remote, 'Hi');
    chat.rerender({ provider, conversationKey: 'b', conversations });
    chat.rerender({ provider, conversationKey: 'a', conversations });
    await nextTask();
    expect(run.aborted).toBe(false);
    run.push((events) => [events.emit('run.completed', {})]);
    run.end();
    expect((await result).status).toBe('completed');
  });
});
