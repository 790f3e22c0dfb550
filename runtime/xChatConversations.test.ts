import { afterEach, describe, expect, it, vi } from 'vitest';
import { createLocalAgentProvider } from '../providers/local/createLocalAgentProvider';
import type { LocalAgentChunk } from '../providers/local/localAgentChunks';
import { createXChatConversations, getPageXChatConversations } from './xChatConversations';

const nextTask = () => new Promise((resolve) => setTimeout(resolve, 0));

const echo = createLocalAgentProvider({
  script: (input) => ({ steps: [{ type: 'text', deltas: [`You said ${input.prompt}`] }] }),
});

/** Says one word, then waits until the run is aborted. */
const stalling = createLocalAgentProvider({
  runtime: async function* (_request, signal): AsyncGenerator<LocalAgentChunk> {
    yield { type: 'text.start', id: 'answer' };
    yield { type: 'text.delta', id: 'answer', delta: 'Thinking' };
    await new Promise((_resolve, reject) => {
      signal.addEventListener('abort', () => reject(signal.reason), { once: true });
    });
  },
});

describe('createXChatConversations', () => {
  it('hands out one conversation per key, with the key as its session, while it is held', async () => {
    const conversations = createXChatConversations();
    const trip = conversations.get('trip-1', echo);
    const releaseList = conversations.hold('trip-1', trip);
    const releaseDetail = conversations.hold('trip-1', conversations.get('trip-1', echo));
    expect(trip.sessionId).toBe('trip-1');
    await trip.request({ prompt: 'Paris' });

    releaseList();
    conversations.hold('other', conversations.get('other', echo));
    const again = conversations.get('trip-1', echo);
    expect(again).toBe(trip);
    expect(again.getSnapshot().messages.map(({ message }) => message.content)).toEqual(['Paris', 'You said Paris']);
    expect(conversations.get('trip-2', echo)).not.toBe(trip);
    releaseDetail();
  });

  it('cancels the runs when the last holder lets go, and drops the conversation at the next hold of another', async () => {
    const conversations = createXChatConversations();
    const trip = conversations.get('trip-1', stalling);
    const release = conversations.hold('trip-1', trip);
    const running = trip.request({ prompt: 'Go' });
    await nextTask();
    release();
    release();
    expect((await running).status).toBe('cancelled');
    expect(conversations.get('trip-1', stalling)).toBe(trip);

    conversations.hold('trip-2', conversations.get('trip-2', echo));
    const fresh = conversations.get('trip-1', echo);
    expect(fresh).not.toBe(trip);
    expect(fresh.sessionId).toBe('trip-1');
    expect(fresh.getSnapshot().messages).toEqual([]);
  });

  it('keeps the conversation across a release and a hold again, as StrictMode mounts, unmounts and mounts', async () => {
    const conversations = createXChatConversations();
    const trip = conversations.get('trip-1', echo);
    conversations.hold('trip-1', trip)();
    const release = conversations.hold('trip-1', conversations.get('trip-1', echo));
    await trip.request({ prompt: 'Paris' });
    conversations.hold('other', conversations.get('other', echo));
    expect(conversations.get('trip-1', echo)).toBe(trip);
    expect(trip.getSnapshot().messages).toHaveLength(2);
    release();
  });

  it('keeps a conversation got but not yet held when another is held in between', () => {
    const conversations = createXChatConversations();
    const first = conversations.get('first', echo);
    const second = conversations.get('second', echo);
    conversations.hold('first', first);
    expect(conversations.get('second', echo)).toBe(second);
  });

  it('registers the runtime a chat rendered with when it was dropped between render and hold', () => {
    const conversations = createXChatConversations();
    const trip = conversations.get('trip-1', echo);
    conversations.hold('trip-1', trip)();
    const rendered = conversations.get('trip-1', echo);
    conversations.hold('other', conversations.get('other', echo));
    conversations.hold('trip-1', rendered);
    expect(rendered).toBe(trip);
    expect(conversations.get('trip-1', echo)).toBe(trip);
  });

  it('keeps a conversation that is kept but no longer held: its runs are cancelled, its messages stay', async () => {
    const conversations = createXChatConversations();
    const trip = conversations.get('trip-1', stalling);
    const releaseKeep = conversations.keep('trip-1', trip);
    const releaseHold = conversations.hold('trip-1', trip);
    const running = trip.request({ prompt: 'Go' });
    await nextTask();
    releaseHold();
    expect((await running).status).toBe('cancelled');

    conversations.hold('trip-2', conversations.get('trip-2', echo));
    expect(conversations.get('trip-1', echo)).toBe(trip);
    expect(trip.getSnapshot().messages.map(({ message, status }) => [message.content, status])).toEqual([
      ['Go', 'local'],
      ['Thinking', 'abort'],
    ]);
    releaseKeep();
    conversations.hold('trip-3', conversations.get('trip-3', echo));
    expect(conversations.get('trip-1', echo)).not.toBe(trip);
  });

  it('never hands out a destroyed conversation: the key gets a new one', async () => {
    const conversations = createXChatConversations();
    const trip = conversations.get('trip-1', echo);
    conversations.hold('trip-1', trip);
    await trip.request({ prompt: 'Paris' });
    trip.destroy();
    const fresh = conversations.get('trip-1', echo);
    expect(fresh).not.toBe(trip);
    expect(fresh.destroyed).toBe(false);
    expect(fresh.getSnapshot().messages).toEqual([]);
  });

  it('shares nothing between two registries, as two server requests must not', async () => {
    const alice = createXChatConversations();
    const bob = createXChatConversations();
    const aliceChat = alice.get('support', echo);
    alice.hold('support', aliceChat);
    await aliceChat.request({ prompt: 'my order number is 42' });
    const bobChat = bob.get('support', echo);
    expect(bobChat).not.toBe(aliceChat);
    expect(bobChat.sessionId).toBe('support');
    expect(bobChat.getSnapshot().messages).toEqual([]);
  });
});

describe('getPageXChatConversations', () => {
  afterEach(() => {
    vi.unstubAllGlobals();
  });

  it('is absent without a document, so a server render never shares a registry between requests', () => {
    expect(typeof document).toBe('undefined');
    expect(getPageXChatConversations()).toBeUndefined();
  });

  it("is the page's one registry in a browser, made on first use", () => {
    vi.stubGlobal('document', {});
    const page = getPageXChatConversations();
    expect(page).toBeDefined();
    expect(getPageXChatConversations()).toBe(page);
  });
});
