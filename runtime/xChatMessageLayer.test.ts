import { describe, expect, it } from 'vitest';
import type { AgentMessageState } from '../machines/agentState';
import type { AgentMessageInfo } from '../machines/selectors';
import { createXChatMessageLayer } from './xChatMessageLayer';

function message(id: string, content: string, role: 'user' | 'assistant' = 'assistant'): AgentMessageState {
  return {
    id,
    key: `run-1:${id}`,
    runId: 'run-1',
    sessionId: 's1',
    role,
    content,
    status: 'completed',
    createdAt: 0,
    updatedAt: 0,
  };
}

function info(id: string, content: string): AgentMessageInfo {
  return { id: `run-1:${id}`, message: message(id, content), status: 'success' };
}

/** A conversation whose messages the test replaces, as streamed deltas and new runs do. */
function conversation(initial: AgentMessageInfo[]) {
  const state = { messages: initial };
  const layer = createXChatMessageLayer({ readMessages: () => state.messages });
  return { state, layer, shown: () => layer.apply(state.messages).map(({ message }) => String(message.content)) };
}

describe('createXChatMessageLayer', () => {
  it("shows the conversation's messages as they are until something is changed, keeping the list for an equal one", () => {
    const first = info('m1', 'Hi');
    const { state, layer } = conversation([first]);
    const shown = layer.apply(state.messages);
    expect(shown).toEqual([first]);
    expect(shown[0]).toBe(first);
    // A new AgentState whose messages are the same entries: the same list.
    expect(layer.apply([first])).toBe(shown);
  });

  it('keeps an edit of a message over its later changes, and the entries it did not edit as they were', () => {
    const { state, layer } = conversation([info('m1', 'Hi'), info('m2', 'Hel')]);
    layer.setMessage('run-1:m2', { status: 'error' });
    const edited = layer.apply(state.messages);
    expect(edited.map(({ status }) => status)).toEqual(['success', 'error']);
    expect(edited[0]).toBe(state.messages[0]);

    state.messages = [state.messages[0]!, info('m2', 'Hello')];
    const streamed = layer.apply(state.messages);
    expect(streamed[1]).toMatchObject({ status: 'error', message: { content: 'Hello' } });
    expect(streamed[0]).toBe(edited[0]);
    expect(layer.apply(state.messages)[1]).toBe(streamed[1]);
  });

  it('places messages setMessages added after the message they followed, before later ones', () => {
    const { state, layer, shown } = conversation([info('m1', 'Hi'), info('m2', 'Hello')]);
    const note: AgentMessageInfo = { id: 'note', message: message('note', 'A note'), status: 'local' };
    layer.setMessages((current) => [current[0]!, note, current[1]!]);
    expect(shown()).toEqual(['Hi', 'A note', 'Hello']);
    state.messages = [...state.messages, info('m3', 'Next answer')];
    expect(shown()).toEqual(['Hi', 'A note', 'Hello', 'Next answer']);
  });

  it('hides a message setMessages left out or removeMessage named, and drops its own messages', () => {
    const { state, layer, shown } = conversation([info('m1', 'Hi'), info('m2', 'Hello')]);
    layer.setMessages((current) => current.slice(1));
    expect(shown()).toEqual(['Hello']);
    layer.setMessages((current) => [
      ...current,
      { id: 'local-1', message: message('local-1', 'Mine'), status: 'local' },
    ]);
    layer.removeMessage('local-1');
    layer.removeMessage('run-1:m2');
    expect(shown()).toEqual([]);
    expect(state.messages).toHaveLength(2);
  });

  it('puts loaded default messages first, and keeps the loader error when it fails', async () => {
    const { layer, shown } = createLoaded(async () => [{ message: message('h1', 'Earlier') }]);
    await layer.load();
    expect(shown()).toEqual(['Earlier', 'Hi']);
    expect(layer.apply([info('m1', 'Hi')])[0]).toMatchObject({ id: 'default-0', status: 'local' });

    const failing = createLoaded(() => Promise.reject(new Error('History service down')));
    await failing.layer.load();
    expect(failing.shown()).toEqual(['Hi']);
    expect((failing.layer.loadError as Error).message).toBe('History service down');
  });
});

function createLoaded(loader: () => Promise<{ message: AgentMessageState }[]>) {
  const messages = [info('m1', 'Hi')];
  const layer = createXChatMessageLayer({ readMessages: () => messages, defaultMessages: loader });
  return { layer, shown: () => layer.apply(messages).map(({ message }) => String(message.content)) };
}
