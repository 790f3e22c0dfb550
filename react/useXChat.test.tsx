// @vitest-environment jsdom
import { act, cleanup, render, waitFor } from '@testing-library/react';
import { memo, Profiler, StrictMode } from 'react';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { AnyActorRef } from 'xstate';
import type { AgentMessageState } from '../machines/agentState';
import { AgentProtocolError } from '../protocol/errors';
import type { AgentProvider } from '../providers/AgentProvider';
import { createLocalAgentProvider, type LocalAgentInput } from '../providers/local/createLocalAgentProvider';
import type { LocalAgentChunk, LocalAgentScript } from '../providers/local/localAgentChunks';
import type { XChatSource } from '../runtime/createXChatSource';
import { createXChatConversations, type XChatConversations } from '../runtime/xChatConversations';
import { type UseXChatOptions, type UseXChatResult, useXChat } from './useXChat';
import { useXChatApproval, useXChatMessage, useXChatSelector, useXChatToolCall } from './useXChatSelector';

afterEach(cleanup);

type Chat = UseXChatResult<LocalAgentInput, AgentMessageState>;
// biome-ignore lint/suspicious/noExplicitAny: any provider of the local input
type Options = Partial<UseXChatOptions<LocalAgentInput, any, any, any, AgentMessageState>>;

function scripted(script: LocalAgentScript | ((input: LocalAgentInput) => LocalAgentScript)) {
  return createLocalAgentProvider({ script });
}

interface Probe {
  current: Chat | undefined;
  renders: number;
}

// biome-ignore lint/suspicious/noExplicitAny: any provider of the local input
type LocalProvider = AgentProvider<LocalAgentInput, any, any, any>;

/** A chat that hands its latest result to `probe`; `read` names the fields it reads. */
function ChatProbe(props: { provider: LocalProvider; options: Options; probe: Probe; read: (chat: Chat) => unknown }) {
  const chat = useXChat({ provider: props.provider, ...props.options });
  props.probe.renders += 1;
  props.read(chat);
  props.probe.current = chat;
  return null;
}

const readAll = (chat: Chat) => [chat.messages, chat.agentState, chat.isRequesting, chat.error];

/** Renders a chat and hands out its latest result. */
function renderChat(provider: LocalProvider, options: Options = {}, read: (chat: Chat) => unknown = readAll) {
  const latest: Probe = { current: undefined, renders: 0 };
  const view = render(<ChatProbe provider={provider} options={options} probe={latest} read={read} />);
  return {
    latest,
    get chat(): Chat {
      if (latest.current === undefined) throw new Error('not rendered');
      return latest.current;
    },
    rerender: (next: Options) =>
      view.rerender(<ChatProbe provider={provider} options={next} probe={latest} read={read} />),
    unmount: view.unmount,
  };
}

/** Shows the length of all the text, so each commit renders the streamed message. */
function StreamedText({ provider, probe, throttleMs }: { provider: LocalProvider; probe: Probe; throttleMs?: number }) {
  const chat = useXChat(throttleMs === undefined ? { provider } : { provider, throttleMs });
  probe.current = chat;
  return <p>{chat.messages.map(({ message }) => String(message.content)).join('|').length}</p>;
}

type RenderCounts = Map<string, number>;

const MessageItem = memo(function MessageItem(props: {
  chat: XChatSource<LocalAgentInput>;
  id: string;
  renders: RenderCounts;
}) {
  const info = useXChatMessage(props.chat, props.id);
  props.renders.set(props.id, (props.renders.get(props.id) ?? 0) + 1);
  return <li>{String(info?.message.content)}</li>;
});

function MessageList({ provider, probe, renders }: { provider: LocalProvider; probe: Probe; renders: RenderCounts }) {
  const chat = useXChat({ provider });
  probe.current = chat;
  return (
    <ol>
      {chat.messages.map(({ id }) => (
        <MessageItem key={id} chat={chat.chat} id={id} renders={renders} />
      ))}
    </ol>
  );
}

interface SeenCards {
  tool: string[];
  approval: string[];
}

const Cards = memo(function Cards(props: { chat: XChatSource<LocalAgentInput>; runId: string; seen: SeenCards }) {
  const { chat, runId, seen } = props;
  const tool = useXChatToolCall(chat, { runId, toolCallId: 'tool-0' });
  const approval = useXChatApproval(chat, { runId, approvalId: 'approval-2' });
  if (seen.tool.at(-1) !== tool?.status) seen.tool.push(tool?.status ?? 'none');
  seen.approval.push(approval?.decision ?? approval?.status ?? 'none');
  return null;
});

const RequestingBadge = memo(function RequestingBadge(props: { chat: XChatSource<LocalAgentInput>; seen: boolean[] }) {
  props.seen.push(useXChatSelector(props.chat, (view) => view.isRequesting));
  return null;
});

function BadgeApp({ provider, probe, seen }: { provider: LocalProvider; probe: Probe; seen: boolean[] }) {
  const chat = useXChat({ provider });
  probe.current = chat;
  // The list re-renders for every streamed frame; the memoized badge only for its own value.
  return (
    <>
      <p>{chat.messages.length}</p>
      <RequestingBadge chat={chat.chat} seen={seen} />
    </>
  );
}

function CardsApp({ provider, probe, seen }: { provider: LocalProvider; probe: Probe; seen: SeenCards }) {
  const chat = useXChat({ provider });
  probe.current = chat;
  const runId = Object.keys(chat.agentState.runs)[0];
  return runId === undefined ? null : <Cards chat={chat.chat} runId={runId} seen={seen} />;
}

function textOf(chat: Chat): string[] {
  return chat.messages.map(({ message }) => String(message.content));
}

function historyMessage(id: string, role: 'user' | 'assistant', content: string): AgentMessageState {
  return {
    id,
    key: id,
    runId: 'history',
    sessionId: 'history',
    role,
    content,
    status: 'completed',
    createdAt: 0,
    updatedAt: 0,
  };
}

const tokens = (count: number) => Array.from({ length: count }, (_, index) => `t${index} `);

describe('useXChat projects the conversation', () => {
  it('shows statuses while streaming and after, and is requesting until the run ends', async () => {
    const provider = scripted({ steps: [{ type: 'text', deltas: ['Hel', 'lo', ' there', '!'] }], delayMs: 25 });
    const chat = renderChat(provider, { parser: (message) => ({ text: String(message.content) }) as never });
    expect(chat.chat.messages).toEqual([]);
    expect(chat.chat.isRequesting).toBe(false);

    let result: Promise<unknown> = Promise.resolve();
    act(() => {
      result = chat.chat.onRequest({ prompt: 'Hi' });
    });
    await waitFor(() => expect(chat.chat.messages[1]?.status).toBe('updating'));
    expect(chat.chat.isRequesting).toBe(true);
    expect(chat.chat.messages[0]).toMatchObject({ status: 'local', message: { role: 'user', content: 'Hi' } });

    await act(() => result);
    await waitFor(() => expect(chat.chat.isRequesting).toBe(false));
    expect(textOf(chat.chat)).toEqual(['Hi', 'Hello there!']);
    expect(chat.chat.messages.map(({ status }) => status)).toEqual(['local', 'success']);
    expect(chat.chat.parsedMessages.map(({ message }) => message)).toEqual([{ text: 'Hi' }, { text: 'Hello there!' }]);
    expect(Object.values(chat.chat.agentState.runs).map(({ status }) => status)).toEqual(['completed']);
    expect(chat.chat.error).toBeUndefined();
  });

  it('shows an error the run reported, and a broken stream, as errors a view can show', async () => {
    const reported = renderChat(
      scripted({ steps: [{ type: 'error', error: { message: 'Quota used up', code: 'quota' } }] }),
    );
    await act(() => reported.chat.onRequest({ prompt: 'Hi' }));
    await waitFor(() =>
      expect(reported.chat.error).toMatchObject({ source: 'run', message: 'Quota used up', code: 'quota' }),
    );
    expect(reported.chat.isRequesting).toBe(false);

    const broken = renderChat(scripted({ steps: [{ type: 'fail', error: { message: 'Model server down' } }] }), {
      reconnect: false,
    });
    await act(() => broken.chat.onRequest({ prompt: 'Hi' }));
    await waitFor(() =>
      expect(broken.chat.error).toMatchObject({ source: 'connection', message: 'Model server down' }),
    );
  });

  it('passes protocolMode to the conversation store: strict fails the request at a protocol violation', async () => {
    const ghostDelta = createLocalAgentProvider({
      runtime: async function* (): AsyncGenerator<LocalAgentChunk> {
        yield { type: 'text.delta', id: 'ghost', delta: 'boo' };
        yield { type: 'done' };
      },
    });
    const recording = renderChat(ghostDelta);
    await act(() => recording.chat.onRequest({ prompt: 'Hi' }));
    await waitFor(() => expect(recording.chat.agentState.issues.map(({ code }) => code)).toEqual(['missing_entity']));

    const strict = renderChat(ghostDelta, { protocolMode: 'strict' });
    const failure = await act(() => strict.chat.onRequest({ prompt: 'Hi' }).catch((error: unknown) => error));
    expect(AgentProtocolError.isInstance(failure)).toBe(true);
    expect(strict.chat.agentState.issues).toEqual([]);
  });

  it("passes inspect to the conversation: it sees the runtime's actor, its connection machine and the store's actors", async () => {
    const actors = new Map<string, unknown>();
    const provider = scripted({ steps: [{ type: 'text', deltas: ['ok'] }] });
    const chat = renderChat(provider, {
      inspect: (event) => {
        if (event.type === '@xstate.snapshot') actors.set((event.actorRef as AnyActorRef).id, event.snapshot);
      },
    });
    await act(() => chat.chat.onRequest({ prompt: 'Hi' }));
    expect(actors.get('xChat')).toMatchObject({ value: 'ready' });
    expect(actors.get('connection')).toMatchObject({ value: 'idle' });
    // The store's session, run and message actors: their snapshots carry the run's messages.
    expect(actors.size).toBeGreaterThan(3);
    // One system: the store's session actor is the conversation actor's child.
    expect(actors.get('session')).toMatchObject({ status: 'active' });
    expect(chat.chat.chat.runtime.actor.getSnapshot().children.session?.getSnapshot()).toBe(actors.get('session'));
    expect(chat.chat.chat.runtime.getSnapshot().messages).toHaveLength(2);
  });
});

describe('useXChat switches conversations', () => {
  it('cancels the run of the conversation switched away from, and shows it as it was left when switched back', async () => {
    const conversations: XChatConversations = createXChatConversations();
    const provider = scripted((input) =>
      input.prompt === 'long' ? { steps: [{ type: 'text', deltas: tokens(40) }], delayMs: 10 } : { steps: [] },
    );
    const chat = renderChat(provider, { conversationKey: 'a', conversations });
    let longRun: Promise<{ status: string }> = Promise.resolve({ status: '' });
    act(() => {
      longRun = chat.chat.onRequest({ prompt: 'long' });
    });
    await waitFor(() => expect(chat.chat.messages[1]?.status).toBe('updating'));

    chat.rerender({ conversationKey: 'b', conversations });
    expect(chat.chat.messages).toEqual([]);
    expect((await longRun).status).toBe('cancelled');
    const first = conversations.get('a', provider);
    const streamed = String(first.getSnapshot().messages[1]?.message.content);
    expect(streamed.length).toBeGreaterThan(0);
    expect(streamed.length).toBeLessThan(tokens(40).join('').length);

    chat.rerender({ conversationKey: 'a', conversations });
    await waitFor(() => expect(chat.chat.messages[1]?.status).toBe('abort'));
    expect(chat.chat.messages[1]?.message.content).toBe(streamed);
  });
});

describe('useXChat starts and stops runs', () => {
  it('asks again with a new request, leaving the earlier run as it ended', async () => {
    const provider = scripted((input) => ({ steps: [{ type: 'text', deltas: [`Answer to ${input.prompt}`] }] }));
    const chat = renderChat(provider);
    await act(() => chat.chat.onRequest({ prompt: 'one' }));
    await act(() => chat.chat.onRequest({ prompt: 'one again' }));
    await waitFor(() => expect(chat.chat.messages).toHaveLength(4));
    expect(textOf(chat.chat)).toEqual(['one', 'Answer to one', 'one again', 'Answer to one again']);
    expect(Object.values(chat.chat.agentState.runs).map(({ status }) => status)).toEqual(['completed', 'completed']);
  });

  it("keeps the run going through StrictMode's double mount", async () => {
    const provider = scripted({ steps: [{ type: 'text', deltas: ['Working'] }, { type: 'stall' }] });
    const latest: Probe = { current: undefined, renders: 0 };
    const view = render(
      <StrictMode>
        <ChatProbe provider={provider} options={{}} probe={latest} read={readAll} />
      </StrictMode>,
    );
    act(() => {
      void latest.current!.onRequest({ prompt: 'Hi' });
    });
    await waitFor(() => expect(latest.current?.messages[1]?.status).toBe('success'));
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(Object.values(latest.current!.agentState.runs).map(({ status }) => status)).toEqual(['running']);
    view.unmount();
  });

  it('cancels the running run when the chat unmounts', async () => {
    const provider = scripted({ steps: [{ type: 'text', deltas: ['Working'] }, { type: 'stall' }] });
    const chat = renderChat(provider);
    let run: Promise<{ status: string }> = Promise.resolve({ status: '' });
    act(() => {
      run = chat.chat.onRequest({ prompt: 'Hi' });
    });
    await waitFor(() => expect(chat.chat.messages[1]?.status).toBe('success'));
    expect(chat.chat.isRequesting).toBe(true);
    const runtime = chat.chat.chat.runtime;
    chat.unmount();
    expect((await run).status).toBe('cancelled');
    expect(Object.values(runtime.getSnapshot().agentState.runs).map(({ status }) => status)).toEqual(['cancelled']);
  });
});

describe('useXChat wires agentActions', () => {
  it('approves an approval the run waits on, and a chat that reads only messages does not re-render for the command', async () => {
    const conversations = createXChatConversations();
    const provider = scripted({
      steps: [
        { type: 'text', deltas: ['May I send it?'] },
        { type: 'approval', description: 'Send the email?', waitFor: 'command' },
        { type: 'stall' },
      ],
    });
    const chat = renderChat(provider, { conversationKey: 'mail', conversations });
    const messagesOnly = renderChat(provider, { conversationKey: 'mail', conversations }, (result) => result.messages);
    act(() => {
      void chat.chat.onRequest({ prompt: 'Email the team' });
    });
    await waitFor(() => expect(Object.values(chat.chat.agentState.approvals)[0]?.status).toBe('waiting'));
    await waitFor(() => expect(messagesOnly.chat.messages[1]?.status).toBe('success'));
    const approval = Object.values(chat.chat.agentState.approvals)[0]!;
    const rendersBefore = messagesOnly.latest.renders;

    await act(() =>
      chat.chat.agentActions.resolveApproval({ runId: approval.runId, approvalId: approval.id, decision: 'approved' }),
    );
    await waitFor(() =>
      expect(Object.values(chat.chat.agentState.approvals)[0]).toMatchObject({
        status: 'resolved',
        decision: 'approved',
      }),
    );
    expect(Object.values(chat.chat.commandStates).map(({ status }) => status)).toEqual(['succeeded']);
    expect(messagesOnly.latest.renders).toBe(rendersBefore);
    act(() => chat.chat.abort());
  });

  it('retries a failed retryable tool call', async () => {
    const provider = scripted({
      steps: [
        {
          type: 'tool',
          name: 'search',
          argumentDeltas: ['{"q":"paris"}'],
          error: { message: 'Search is down', retryable: true },
          retryResult: { hits: 3 },
        },
        { type: 'await_command' },
        { type: 'text', deltas: ['Found 3'] },
      ],
    });
    const chat = renderChat(provider);
    let run: Promise<unknown> = Promise.resolve();
    act(() => {
      run = chat.chat.onRequest({ prompt: 'Search' });
    });
    await waitFor(() => expect(Object.values(chat.chat.agentState.toolCalls)[0]?.status).toBe('failed'));
    const failed = Object.values(chat.chat.agentState.toolCalls)[0]!;
    await act(() => chat.chat.agentActions.retryTool({ runId: failed.runId, toolCallId: failed.id }));
    await act(() => run);
    await waitFor(() => expect(Object.values(chat.chat.agentState.toolCalls)).toHaveLength(2));
    expect(Object.values(chat.chat.agentState.toolCalls).map(({ status, result }) => [status, result])).toEqual([
      ['failed', undefined],
      ['completed', { hits: 3 }],
    ]);
    expect(textOf(chat.chat).at(-1)).toBe('Found 3');
  });
});

/**
 * Sends a prompt and runs the clock until the run has ended, a frame (16 ms) at a time, on fake
 * timers (real again after the test): the tokens' 1 ms pauses, the animation frames and `throttleMs` all keep their ratio
 * whatever the machine's load, so the commits counted are the batching's, not the scheduler's.
 * Returns the clock's time the run took.
 */
async function streamOnFakeClock(latest: Probe, prompt = 'Stream'): Promise<number> {
  vi.useFakeTimers({
    toFake: ['setTimeout', 'clearTimeout', 'requestAnimationFrame', 'cancelAnimationFrame', 'Date', 'performance'],
  });
  const started = Date.now();
  let ended = false;
  act(() => {
    void latest.current!.onRequest({ prompt }).finally(() => {
      ended = true;
    });
  });
  for (let frames = 0; !ended || latest.current?.isRequesting !== false; frames += 1) {
    if (frames > 10_000) throw new Error('the run did not end within 160 s of the fake clock');
    await act(() => vi.advanceTimersByTimeAsync(16));
  }
  return Date.now() - started;
}

describe('useXChat batches renders', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('commits far fewer times than tokens arrive while streaming 500 tokens', async () => {
    const count = 500;
    const provider = scripted({ steps: [{ type: 'text', deltas: tokens(count) }], delayMs: 1 });
    let commits = 0;
    const latest: Probe = { current: undefined, renders: 0 };
    render(
      <Profiler id="chat" onRender={() => (commits += 1)}>
        <StreamedText provider={provider} probe={latest} />
      </Profiler>,
    );
    const before = commits;
    const elapsed = await streamOnFakeClock(latest);
    const streamed = commits - before;
    console.info(`500 tokens (delayMs 1): ${streamed} commits in ${elapsed} ms`);
    expect(latest.current?.messages[1]?.message.content).toBe(tokens(count).join(''));
    expect(streamed).toBeLessThanOrEqual(count / 5);
  });

  it('commits once per throttleMs when given', async () => {
    const count = 200;
    const provider = scripted({ steps: [{ type: 'text', deltas: tokens(count) }], delayMs: 1 });
    let commits = 0;
    const latest: Probe = { current: undefined, renders: 0 };
    render(
      <Profiler id="chat" onRender={() => (commits += 1)}>
        <StreamedText provider={provider} probe={latest} throttleMs={100} />
      </Profiler>,
    );
    const before = commits;
    const elapsed = await streamOnFakeClock(latest);
    const streamed = commits - before;
    console.info(`200 tokens (delayMs 1, throttleMs 100): ${streamed} commits in ${elapsed} ms`);
    expect(latest.current?.messages[1]?.message.content).toBe(tokens(count).join(''));
    expect(streamed).toBeLessThanOrEqual(Math.ceil(elapsed / 100) + 2);
  });

  it('re-renders a useXChatSelector component only when its selected value changes', async () => {
    const provider = scripted({ steps: [{ type: 'text', deltas: tokens(60) }], delayMs: 2 });
    const seen: boolean[] = [];
    const latest: Probe = { current: undefined, renders: 0 };
    render(<BadgeApp provider={provider} probe={latest} seen={seen} />);
    await act(() => latest.current!.onRequest({ prompt: 'Stream' }));
    await waitFor(() => expect(latest.current?.isRequesting).toBe(false));
    await waitFor(() => expect(seen.at(-1)).toBe(false));
    expect(seen).toEqual([false, true, false]);
  });

  it('does not re-render a message component of an earlier message while another one streams', async () => {
    const provider = scripted({ steps: [{ type: 'text', deltas: tokens(60) }], delayMs: 2 });
    const renders: RenderCounts = new Map();
    const latest: Probe = { current: undefined, renders: 0 };
    render(<MessageList provider={provider} probe={latest} renders={renders} />);
    await act(() => latest.current!.onRequest({ prompt: 'Stream' }));
    await waitFor(() => expect(latest.current?.messages[1]?.status).toBe('success'));
    const [prompt, answer] = latest.current!.messages;
    expect(renders.get(prompt!.id)).toBe(1);
    expect(renders.get(answer!.id)).toBeGreaterThan(1);
  });

  it('re-renders a tool card and an approval card only for their own records', async () => {
    const provider = scripted({
      steps: [
        { type: 'tool', name: 'search', argumentDeltas: ['{"q":', '"paris"}'], result: { hits: 1 } },
        { type: 'text', deltas: tokens(30) },
        { type: 'approval', description: 'Book it?', decision: 'approved' },
      ],
      delayMs: 2,
    });
    const seen: SeenCards = { tool: [], approval: [] };
    const latest: Probe = { current: undefined, renders: 0 };
    render(<CardsApp provider={provider} probe={latest} seen={seen} />);
    await streamOnFakeClock(latest, 'Book');
    expect(seen.tool.at(-1)).toBe('completed');
    // One render per approval record: none, waiting or not, approved; never one per streamed token.
    expect(seen.approval.length).toBeLessThanOrEqual(4);
    expect(seen.approval.at(-1)).toBe('approved');
  });
});

describe('useXChat message layer', () => {
  it('setMessages, setMessage and removeMessage change messages and leave agentState as it is', async () => {
    const provider = scripted({ steps: [{ type: 'text', deltas: ['Hello'] }] });
    const chat = renderChat(provider);
    await act(() => chat.chat.onRequest({ prompt: 'Hi' }));
    await waitFor(() => expect(chat.chat.messages).toHaveLength(2));
    const agentState = chat.chat.agentState;
    const [prompt, answer] = chat.chat.messages;

    act(() => chat.chat.setMessage(answer!.id, { status: 'error' }));
    expect(chat.chat.messages.map(({ status }) => status)).toEqual(['local', 'error']);
    expect(chat.chat.messages[0]).toBe(prompt);

    const note = { id: 'note', message: historyMessage('note', 'assistant', 'A local note'), status: 'local' as const };
    act(() => chat.chat.setMessages((current) => [...current, note]));
    expect(textOf(chat.chat)).toEqual(['Hi', 'Hello', 'A local note']);

    act(() => chat.chat.removeMessage(prompt!.id));
    expect(textOf(chat.chat)).toEqual(['Hello', 'A local note']);
    act(() => chat.chat.removeMessage('note'));
    expect(textOf(chat.chat)).toEqual(['Hello']);

    expect(chat.chat.agentState).toBe(agentState);
    expect(Object.keys(chat.chat.agentState.messages)).toHaveLength(2);
    expect(chat.chat.chat.runtime.getSnapshot().messages.map(({ status }) => status)).toEqual(['local', 'success']);
  });

  it('shows default messages before the conversation, from a list or an async loader', async () => {
    const provider = scripted({ steps: [{ type: 'text', deltas: ['Welcome back'] }] });
    const history = [
      { message: historyMessage('h1', 'user', 'Earlier question') },
      { id: 'h2', message: historyMessage('h2', 'assistant', 'Earlier answer'), status: 'success' as const },
    ];
    const fromList = renderChat(provider, { defaultMessages: history });
    expect(fromList.chat.messages.map(({ id, status }) => [id, status])).toEqual([
      ['default-0', 'local'],
      ['h2', 'success'],
    ]);
    await act(() => fromList.chat.onRequest({ prompt: 'Again' }));
    await waitFor(() => expect(fromList.chat.messages).toHaveLength(4));
    expect(textOf(fromList.chat)).toEqual(['Earlier question', 'Earlier answer', 'Again', 'Welcome back']);
    expect(Object.keys(fromList.chat.agentState.messages)).toHaveLength(2);

    const loaded = renderChat(provider, { defaultMessages: async () => history });
    expect(loaded.chat.messages).toEqual([]);
    await waitFor(() => expect(textOf(loaded.chat)).toEqual(['Earlier question', 'Earlier answer']));
  });
});
