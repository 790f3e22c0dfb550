// The page bench/browser/tokenCost.ts drives: a thread of `n` earlier messages, put into the
// conversation's AgentState before the first render, then `tokens` tokens streamed into one
// new assistant message by a local in-page runtime. React's Profiler sums the commits'
// actualDuration while the stream runs. Query: `n`, `tokens`, `perFrame` (tokens a burst,
// one burst per animation frame, as a network delivers them; 0: all at once, no delay) and
// `list`: `subscribed` (the list renders the ids, each memoized bubble subscribes to its own
// message with `useXChatMessage`), `props` (the list maps `messages` to memoized bubbles
// given the stable `AgentMessageInfo`) or `grouped`, the recommended way (`XChatMessageList`:
// the same bubbles in memoized groups of GROUP_SIZE and sections of 8 groups). The page
// mounts the thread, then sets `tokenCostStart`: the driver reads Chromium's metrics around
// the call.
import { memo, Profiler, type ProfilerOnRenderCallback } from 'react';
// Bundled as react-dom/profiling: a production build that still times <Profiler>.
import { createRoot } from 'react-dom/client';
import type { AgentMessageState } from '../../machines/agentState';
import type { AgentMessageInfo } from '../../machines/selectors';
import { createAgentEventFactory } from '../../protocol/createAgentEventFactory';
import type { AgentEvent } from '../../protocol/eventSchemas';
import { createLocalAgentProvider, type LocalAgentInput } from '../../providers/local/createLocalAgentProvider';
import type { LocalAgentChunk } from '../../providers/local/localAgentChunks';
import { type UseXChatResult, useXChat } from '../../react/useXChat';
import { useXChatMessage, useXChatSelector } from '../../react/useXChatSelector';
import { XChatMessageList, type XChatMessageProps } from '../../react/XChatMessageList';
import type { XChatSource } from '../../runtime/createXChatSource';
import { createXChatConversations } from '../../runtime/xChatConversations';

/** What `window.tokenCostStart()` resolves with once the stream has been shown. */
export interface TokenCostResult {
  n: number;
  tokens: number;
  perFrame: number;
  list: string;
  /** Sum of the Profiler's actualDuration over the commits from the request to the last one, ms. */
  actualMs: number;
  commits: number;
  /** From the request to the run's end, ms. */
  wallMs: number;
  /** How often each component rendered while streaming. */
  listRenders: number;
  bubbleRenders: number;
  /** The streamed message's final length, to check the whole stream was shown. */
  shownLength: number;
  expectedLength: number;
}

declare global {
  interface Window {
    /** Streams the tokens; set once the thread is mounted. */
    tokenCostStart?: () => Promise<TokenCostResult>;
    tokenCostError?: string;
  }
}

const params = new URLSearchParams(window.location.search);
const n = Number(params.get('n') ?? 10);
const tokens = Number(params.get('tokens') ?? 5000);
const perFrame = Number(params.get('perFrame') ?? 10);
const list = params.get('list') ?? 'subscribed';
/**
 * React clones every child fiber of a parent one of whose children updates: in one flat list
 * a token streamed into the last bubble visits all the others. In groups, it visits the
 * sections, one section's groups and one group's bubbles. `XChatMessageList`'s default.
 */
const GROUP_SIZE = 32;

const tokenText = (index: number) => `w${index % 1000} `;
const expectedLength = Array.from({ length: tokens }, (_, index) => tokenText(index)).join('').length;
const nextFrame = () => new Promise<void>((resolve) => requestAnimationFrame(() => resolve()));

async function* streamTokens(): AsyncIterable<LocalAgentChunk> {
  yield { type: 'text.start', id: 'answer' };
  for (let index = 0; index < tokens; index += 1) {
    if (perFrame > 0 && index % perFrame === 0) await nextFrame();
    yield { type: 'text.delta', id: 'answer', delta: tokenText(index) };
  }
  yield { type: 'text.end', id: 'answer' };
  yield { type: 'done' };
}

const provider = createLocalAgentProvider({ runtime: () => streamTokens() });
const conversations = createXChatConversations();
const conversationKey = 'thread';

/** The thread before the stream: one finished run of `n` messages, user and assistant taking turns. */
function seedThread(): void {
  const runtime = conversations.get(conversationKey, provider);
  const events = createAgentEventFactory({ sessionId: runtime.sessionId, runId: 'earlier' });
  const seed: AgentEvent[] = [events.create('run.started', {})];
  for (let index = 0; index < n; index += 1) {
    const messageId = `earlier-${index}`;
    const role = index % 2 === 0 ? 'user' : 'assistant';
    seed.push(
      events.create('message.started', { messageId, role }),
      events.create('message.delta', { messageId, delta: `Earlier message ${index}, a sentence or two of text.` }),
      events.create('message.completed', { messageId }),
    );
  }
  seed.push(events.create('run.completed', {}));
  runtime.store.batch(seed);
}

const counts = { list: 0, bubble: 0 };
const profile = { actualMs: 0, commits: 0 };
const onRender: ProfilerOnRenderCallback = (_id, _phase, actualDuration) => {
  profile.actualMs += actualDuration;
  profile.commits += 1;
};

const Bubble = memo(function Bubble({ info }: { info: AgentMessageInfo }) {
  counts.bubble += 1;
  return (
    <li data-role={info.message.role} data-status={info.status}>
      {String(info.message.content)}
    </li>
  );
});

const SubscribedBubble = memo(function SubscribedBubble(props: XChatMessageProps<LocalAgentInput>) {
  const info = useXChatMessage(props.chat, props.messageKey);
  return info === undefined ? null : <Bubble info={info} />;
});

const sameIds = (previous: readonly string[], next: readonly string[]) =>
  previous.length === next.length && previous.every((id, index) => id === next[index]);
const idsOf = (messages: readonly AgentMessageInfo[]) => messages.map((info) => info.id);

function SubscribedList({ chat }: { chat: XChatSource<LocalAgentInput> }) {
  counts.list += 1;
  const ids = useXChatSelector(chat, (view) => idsOf(view.messages), sameIds);
  return (
    <ol id="messages">
      {ids.map((id) => (
        <SubscribedBubble key={id} chat={chat} messageKey={id} />
      ))}
    </ol>
  );
}

function GroupedList({ chat }: { chat: XChatSource<LocalAgentInput> }) {
  counts.list += 1;
  return (
    <ol id="messages">
      <XChatMessageList chat={chat} messageComponent={SubscribedBubble} size={GROUP_SIZE} />
    </ol>
  );
}

function PropsList({ messages }: { messages: AgentMessageInfo[] }) {
  counts.list += 1;
  return (
    <ol id="messages">
      {messages.map((info) => (
        <Bubble key={info.id} info={info} />
      ))}
    </ol>
  );
}

type Chat = UseXChatResult<LocalAgentInput, AgentMessageState>;
/** Hands the first render's chat to `run`. */
let start: ((chat: Chat) => void) | undefined;

function Chat() {
  const chat = useXChat({ provider, conversations, conversationKey });
  start?.(chat);
  start = undefined;
  if (list === 'props') return <PropsList messages={chat.messages} />;
  if (list === 'grouped') return <GroupedList chat={chat.chat} />;
  return <SubscribedList chat={chat.chat} />;
}

async function mount(): Promise<Chat> {
  seedThread();
  const root = document.getElementById('root');
  if (root === null) throw new Error('no #root element');
  const chatReady = new Promise<Chat>((resolve) => {
    start = resolve;
  });
  createRoot(root).render(
    <Profiler id="chat" onRender={onRender}>
      <Chat />
    </Profiler>,
  );
  const chat = await chatReady;
  // Let the mount of the thread commit and settle before counting.
  await nextFrame();
  await nextFrame();
  const shownBefore = document.querySelectorAll('#messages li').length;
  if (shownBefore !== n) throw new Error(`the thread shows ${shownBefore} messages, not ${n}`);
  return chat;
}

async function stream(chat: Chat): Promise<TokenCostResult> {
  profile.actualMs = 0;
  profile.commits = 0;
  counts.list = 0;
  counts.bubble = 0;
  const started = performance.now();
  const result = await chat.onRequest({ prompt: 'Go on' });
  const wallMs = performance.now() - started;
  if (result.status !== 'completed') throw new Error(`the run ended ${result.status}`);
  // The last flush is at the next frame: wait for it to commit.
  await nextFrame();
  await nextFrame();
  await nextFrame();
  const shownLength = document.querySelector('#messages li:last-child')?.textContent?.length ?? 0;
  return {
    n,
    tokens,
    perFrame,
    list,
    actualMs: profile.actualMs,
    commits: profile.commits,
    wallMs,
    listRenders: counts.list,
    bubbleRenders: counts.bubble,
    shownLength,
    expectedLength,
  };
}

const describe = (error: unknown) => (error instanceof Error ? (error.stack ?? error.message) : String(error));
mount().then(
  (chat) => {
    window.tokenCostStart = () =>
      stream(chat).catch((error: unknown) => {
        throw new Error(describe(error));
      });
  },
  (error: unknown) => {
    window.tokenCostError = describe(error);
  },
);
