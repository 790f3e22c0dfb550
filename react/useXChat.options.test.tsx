// @vitest-environment jsdom
import { act, cleanup, render, waitFor } from '@testing-library/react';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { AgentCheckpoint, AgentCheckpointStorage } from '../checkpoint/AgentCheckpoint';
import { createMemoryAgentCheckpointStorage } from '../checkpoint/createMemoryAgentCheckpointStorage';
import type { AgentMessageState } from '../machines/agentState';
import { AgentCommandError } from '../providers/AgentCommandError';
import type { AgentProvider } from '../providers/AgentProvider';
import { defineAgentProvider } from '../providers/defineAgentProvider';
import { eventTypesOf } from '../providers/eventTypeGroups';
import { createLocalAgentProvider } from '../providers/local/createLocalAgentProvider';
import type { AgentRunResult } from '../providers/runAgentProvider';
import type { AgentConnectionState } from '../runtime/connectionMachine';
import { createXChatConversations } from '../runtime/xChatConversations';
import { createRemoteRuntime } from '../tests/support/remoteRuntime';
import { AgentTransportError } from '../transports/AgentTransportError';
import { type UseXChatOptions, type UseXChatResult, useXChat } from './useXChat';

afterEach(() => {
  cleanup();
  vi.restoreAllMocks();
});

type Input = { prompt: string };
type Chat = UseXChatResult<Input, AgentMessageState>;
// biome-ignore lint/suspicious/noExplicitAny: a provider of the prompt input, whatever it sends and reads
type Options = UseXChatOptions<Input, any, any, any, AgentMessageState>;

interface Probe {
  current: Chat | undefined;
  /** The connection state of each render, without repeats. */
  connectionStates: AgentConnectionState[];
}

/** A chat that reads every field it is tested on, and hands its latest result to `probe`. */
function ChatProbe({ options, probe }: { options: Options; probe: Probe }) {
  const chat = useXChat(options);
  void [chat.messages, chat.agentState, chat.isRequesting, chat.error, chat.commandStates];
  if (probe.connectionStates.at(-1) !== chat.connectionState) probe.connectionStates.push(chat.connectionState);
  probe.current = chat;
  return null;
}

function renderChat(options: Options) {
  const probe: Probe = { current: undefined, connectionStates: [] };
  const view = render(<ChatProbe options={options} probe={probe} />);
  return {
    probe,
    get chat(): Chat {
      if (probe.current === undefined) throw new Error('not rendered');
      return probe.current;
    },
    unmount: view.unmount,
  };
}

function textOf(chat: Chat): Array<[string, unknown]> {
  return chat.messages.map(({ message }) => [message.role, message.content]);
}

type TypingChunk = { cursor: string; delta?: string; done?: true };

/** One connection of `droppingProvider`: the chunks it delivers, then whether it ends or drops. */
interface Connection {
  deltas: string[];
  ending: 'end' | 'drop';
}

/**
 * A resumable provider whose stream is played connection by connection: the first is opened,
 * each later one is a resume from the last cursor. A connection that drops fails with a
 * retryable `network_error`; the one that ends completes the run. `calls` records each open
 * and resume, with its cursor.
 */
function droppingProvider(connections: Connection[]) {
  const calls: string[] = [];
  let cursor = 0;
  const play = async function* (connection: Connection | undefined): AsyncGenerator<TypingChunk> {
    if (connection === undefined) throw new Error('No connection left to play');
    for (const delta of connection.deltas) {
      cursor += 1;
      yield { cursor: String(cursor), delta };
    }
    if (connection.ending === 'drop') throw new AgentTransportError('network_error', 'The connection dropped');
    cursor += 1;
    yield { cursor: String(cursor), done: true };
  };
  const provider = defineAgentProvider({
    id: 'dropping',
    capabilities: { eventTypes: eventTypesOf(['run', 'message']), resumable: true },
    transport: {
      kind: 'async-iterable',
      open: () => {
        calls.push('open');
        return play(connections[calls.length - 1]);
      },
      resume: (_request: Input, from: string) => {
        calls.push(`resume ${from}`);
        return play(connections[calls.length - 1]);
      },
      getCursor: (chunk: TypingChunk) => chunk.cursor,
    },
    createContext: (events) => ({ events }),
    start: (input: Input, { events }) => [
      events.emit('run.started', {}),
      events.emit('message.started', { messageId: 'prompt', role: 'user', content: input.prompt }),
      events.emit('message.completed', { messageId: 'prompt' }),
      events.emit('message.started', { messageId: 'answer', role: 'assistant' }),
    ],
    prepareRequest: (input) => input,
    transformChunk: (chunk, { events }) =>
      chunk.done === true
        ? [events.emit('message.completed', { messageId: 'answer' }), events.emit('run.completed', {})]
        : [events.emit('message.delta', { messageId: 'answer', delta: chunk.delta ?? '' })],
    incompleteStream: { message: 'The stream ended early', code: 'incomplete_stream' },
    isRetryable: (error) => AgentTransportError.isInstance(error) && error.code === 'network_error',
  });
  return { provider, calls };
}

/** Drops twice in a row: after `Hel`, and again before anything of the resume arrived; then ends. */
const twoDrops: Connection[] = [
  { deltas: ['Hel'], ending: 'drop' },
  { deltas: [], ending: 'drop' },
  { deltas: ['lo'], ending: 'end' },
];

async function requestSettled(chat: { readonly chat: Chat }, input: Input): Promise<AgentRunResult> {
  let result: Promise<AgentRunResult> | undefined;
  act(() => {
    result = chat.chat.onRequest(input);
  });
  const settled = await act(() => result as Promise<AgentRunResult>);
  await waitFor(() => expect(chat.chat.isRequesting).toBe(false));
  return settled;
}

describe('useXChat passes checkpointStorage to the conversation', () => {
  it('saves the conversation there, and a chat mounted afresh over the same storage and key restores it', async () => {
    const storage = createMemoryAgentCheckpointStorage();
    const provider = createLocalAgentProvider({
      script: { steps: [{ type: 'text', deltas: ['Lyon, ', 'then Paris'] }] },
    });
    const first = renderChat({
      provider,
      conversationKey: 'trip',
      conversations: createXChatConversations(),
      checkpointStorage: storage,
    });
    expect((await requestSettled(first, { prompt: 'Plan the trip' })).status).toBe('completed');
    await act(() => first.chat.chat.runtime.flushCheckpoint());
    const saved = (await storage.load('trip')) as AgentCheckpoint;
    expect(Object.values(saved.state.runs).map(({ status }) => status)).toEqual(['completed']);
    first.unmount();

    // The page reloads: a new registry, the same key and storage.
    const second = renderChat({
      provider,
      conversationKey: 'trip',
      conversations: createXChatConversations(),
      checkpointStorage: storage,
    });
    expect(second.probe.connectionStates[0]).toBe('restoring');
    await waitFor(() =>
      expect(textOf(second.chat)).toEqual([
        ['user', 'Plan the trip'],
        ['assistant', 'Lyon, then Paris'],
      ]),
    );
    expect(second.chat.messages.map(({ status }) => status)).toEqual(['local', 'success']);
    expect(Object.values(second.chat.agentState.runs).map(({ status }) => status)).toEqual(['completed']);
    await waitFor(() => expect(second.chat.connectionState).toBe('idle'));
    expect(second.chat.error).toBeUndefined();

    // Without the storage, the same key in a new registry starts empty.
    const forgetful = renderChat({ provider, conversationKey: 'trip', conversations: createXChatConversations() });
    expect(forgetful.probe.connectionStates[0]).toBe('idle');
    expect(forgetful.chat.messages).toEqual([]);
  });

  it("shows a save that failed as the chat's error, source 'checkpoint'", async () => {
    const unwritable: AgentCheckpointStorage = {
      load: async () => undefined,
      save: async () => {
        throw new Error('disk full');
      },
      remove: async () => undefined,
    };
    const provider = createLocalAgentProvider({ script: { steps: [{ type: 'text', deltas: ['Hi'] }] } });
    const chat = renderChat({
      provider,
      conversationKey: 'trip',
      conversations: createXChatConversations(),
      checkpointStorage: unwritable,
    });
    expect((await requestSettled(chat, { prompt: 'Hello' })).status).toBe('completed');
    await act(() => chat.chat.chat.runtime.flushCheckpoint());
    await waitFor(() =>
      expect(chat.chat.error).toMatchObject({
        source: 'checkpoint',
        code: 'storage_failed',
        message: 'The storage failed to save the checkpoint of session "trip"',
      }),
    );
  });
});

describe('useXChat passes reconnect to the conversation', () => {
  it('by default, resumes a dropped stream from its cursor and the run completes', async () => {
    // The default policy (3 attempts, the first wait up to 500 ms): no jitter keeps the waits at 0.
    vi.spyOn(Math, 'random').mockReturnValue(0);
    const { provider, calls } = droppingProvider(twoDrops);
    const chat = renderChat({ provider });
    expect((await requestSettled(chat, { prompt: 'Hi' })).status).toBe('completed');
    expect(calls).toEqual(['open', 'resume 1', 'resume 1']);
    await waitFor(() =>
      expect(textOf(chat.chat)).toEqual([
        ['user', 'Hi'],
        ['assistant', 'Hello'],
      ]),
    );
    await waitFor(() => expect(chat.chat.connectionState).toBe('idle'));
    expect(chat.chat.error).toBeUndefined();
    expect(Object.values(chat.chat.agentState.runs).map(({ status }) => status)).toEqual(['completed']);
  });

  it("with `false`, fails at the first drop: the connection ends 'failed', the error's source is 'connection'", async () => {
    const { provider, calls } = droppingProvider(twoDrops);
    const chat = renderChat({ provider, reconnect: false });
    expect((await requestSettled(chat, { prompt: 'Hi' })).status).toBe('failed');
    expect(calls).toEqual(['open']);
    await waitFor(() => expect(chat.chat.connectionState).toBe('failed'));
    expect(chat.chat.error).toMatchObject({
      source: 'connection',
      code: 'network_error',
      message: 'The connection dropped',
    });
    expect(AgentTransportError.isInstance(chat.chat.error?.cause)).toBe(true);
    expect(Object.values(chat.chat.agentState.runs).map(({ status }) => status)).toEqual(['failed']);
  });

  it('with options, follows them: one attempt is spent by a resume that drops again', async () => {
    const { provider, calls } = droppingProvider(twoDrops);
    const chat = renderChat({ provider, reconnect: { maxAttempts: 1, initialDelay: 1, maxDelay: 1 } });
    expect((await requestSettled(chat, { prompt: 'Hi' })).status).toBe('failed');
    expect(calls).toEqual(['open', 'resume 1']);
    await waitFor(() => expect(chat.chat.connectionState).toBe('failed'));
    expect(chat.chat.error).toMatchObject({ source: 'connection', code: 'network_error' });
  });
});

describe('useXChat shows a failed command as its error', () => {
  it("source 'command', with the AgentCommandError's message and code, and the command state failed", async () => {
    const remote = createRemoteRuntime({
      onCommand: () => {
        throw new Error('Payments are down');
      },
    });
    const chat = renderChat({ provider: remote.provider as AgentProvider<Input, unknown, unknown, unknown> });
    const started = remote.nextRun();
    act(() => {
      void chat.chat.onRequest({ prompt: 'Pay the invoice' });
    });
    const run = await started;
    run.push((events) => [events.emit('approval.requested', { approvalId: 'pay' })]);
    await waitFor(() => expect(Object.values(chat.chat.agentState.approvals)[0]?.status).toBe('waiting'));
    expect(chat.chat.error).toBeUndefined();

    const rejection = await act(() =>
      chat.chat.agentActions.resolveApproval({ runId: run.runId, approvalId: 'pay', decision: 'approved' }).then(
        () => undefined,
        (error: unknown) => error,
      ),
    );
    expect(AgentCommandError.isInstance(rejection)).toBe(true);
    await waitFor(() =>
      expect(chat.chat.error).toEqual({
        message: 'Provider "remote" failed to execute approval.resolve: Payments are down',
        code: 'provider_error',
        source: 'command',
        cause: rejection,
      }),
    );
    expect(Object.values(chat.chat.commandStates).map(({ status }) => status)).toEqual(['failed']);
    // The run goes on: the command failed, not the run.
    expect(Object.values(chat.chat.agentState.runs).map(({ status }) => status)).toEqual(['running']);
    run.end();
  });
});
