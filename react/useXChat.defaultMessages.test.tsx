// @vitest-environment jsdom
import { act, cleanup, render, waitFor } from '@testing-library/react';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { AgentMessageState } from '../machines/agentState';
import { createLocalAgentProvider } from '../providers/local/createLocalAgentProvider';
import { createXChatConversations } from '../runtime/xChatConversations';
import { createXChatMessageLayer, type XChatDefaultMessage } from '../runtime/xChatMessageLayer';
import { type UseXChatOptions, type UseXChatResult, useXChat } from './useXChat';

afterEach(cleanup);

type Input = { prompt: string };
type Chat = UseXChatResult<Input, AgentMessageState>;
// biome-ignore lint/suspicious/noExplicitAny: a provider of the prompt input
type Options = UseXChatOptions<Input, any, any, any, AgentMessageState>;

const provider = createLocalAgentProvider({ script: { steps: [{ type: 'text', deltas: ['Hi'] }] } });

function historyMessage(id: string, content: string): AgentMessageState {
  return {
    id,
    key: id,
    runId: 'history',
    sessionId: 'history',
    role: 'user',
    content,
    status: 'completed',
    createdAt: 0,
    updatedAt: 0,
  };
}

interface Probe {
  current: Chat | undefined;
}

function ChatProbe({ options, probe }: { options: Options; probe: Probe }) {
  const chat = useXChat(options);
  void chat.messages;
  probe.current = chat;
  return null;
}

function renderChat(options: Options) {
  const probe: Probe = { current: undefined };
  render(<ChatProbe options={options} probe={probe} />);
  return {
    get chat(): Chat {
      if (probe.current === undefined) throw new Error('not rendered');
      return probe.current;
    },
  };
}

const textOf = (chat: Chat) => chat.messages.map(({ message }) => message.content);

describe('defaultMessages as a loader (seed 003)', () => {
  it('is given the conversationKey, and may answer synchronously', async () => {
    const loader = vi.fn(({ conversationKey }: { conversationKey: string }): XChatDefaultMessage[] => [
      { message: historyMessage('h1', `history of ${conversationKey}`) },
    ]);
    const view = renderChat({
      provider,
      conversationKey: 'trip-1',
      conversations: createXChatConversations(),
      defaultMessages: loader,
    });
    await waitFor(() => expect(textOf(view.chat)).toEqual(['history of trip-1']));
    expect(loader.mock.calls).toEqual([[{ conversationKey: 'trip-1' }]]);
    await act(() => view.chat.onRequest({ prompt: 'Again' }));
    await waitFor(() => expect(textOf(view.chat)).toEqual(['history of trip-1', 'Again', 'Hi']));
    expect(loader).toHaveBeenCalledTimes(1);
  });

  it("is given the chat's own session id when there is no conversationKey, and may be async", async () => {
    const keys: string[] = [];
    const view = renderChat({
      provider,
      defaultMessages: async ({ conversationKey }) => {
        keys.push(conversationKey);
        return [{ message: historyMessage('h1', 'loaded') }];
      },
    });
    await waitFor(() => expect(textOf(view.chat)).toEqual(['loaded']));
    expect(keys).toHaveLength(1);
    await act(() => view.chat.onRequest({ prompt: 'Again' }));
    await waitFor(() => expect(view.chat.messages).toHaveLength(3));
    expect(Object.values(view.chat.agentState.runs).map((run) => run.sessionId)).toEqual(keys);
  });
});

describe('createXChatMessageLayer: a synchronous loader', () => {
  it('applies its messages as load is called, and keeps what it throws as loadError', async () => {
    const layer = createXChatMessageLayer({
      readMessages: () => [],
      conversationKey: 'k',
      defaultMessages: ({ conversationKey }) => [{ id: 'd', message: historyMessage('d', conversationKey) }],
    });
    const loading = layer.load();
    expect(layer.apply([]).map(({ id, message }) => [id, message.content])).toEqual([['d', 'k']]);
    await loading;
    expect(layer.load()).toBe(loading);

    const failure = new Error('History service down');
    const failing = createXChatMessageLayer({
      readMessages: () => [],
      conversationKey: 'k',
      defaultMessages: () => {
        throw failure;
      },
    });
    await failing.load();
    expect(failing.loadError).toBe(failure);
    expect(failing.apply([])).toEqual([]);
  });
});
