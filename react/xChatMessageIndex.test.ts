import { describe, expect, it } from 'vitest';
import type { AgentMessageState } from '../machines/agentState';
import type { AgentMessageInfo } from '../machines/selectors';
import { changedXChatMessageKeys, findXChatMessage, indexXChatMessages } from './xChatMessageIndex';

function info(id: string, content = `text of ${id}`): AgentMessageInfo {
  const message: AgentMessageState = {
    id,
    key: id,
    runId: 'run-1',
    sessionId: 's1',
    role: 'assistant',
    content,
    status: 'completed',
    createdAt: 0,
    updatedAt: 0,
  };
  return { id, message, status: 'success' };
}

const thread = (count: number) => Array.from({ length: count }, (_, index) => info(`m${index}`));

/** The same thread with one more token in its last message: a new array, a new last entry. */
const withToken = (messages: readonly AgentMessageInfo[]) => {
  const last = messages.at(-1) as AgentMessageInfo;
  return [...messages.slice(0, -1), info(last.id, `${String(last.message.content)} more`)];
};

describe('indexXChatMessages', () => {
  it('shares the index of the array before when the keys are the same, and finds entries by key', () => {
    const before = thread(4);
    const after = withToken(before);
    const index = indexXChatMessages(before);
    expect(indexXChatMessages(after, before)).toBe(index);
    expect(findXChatMessage(after, 'm3')).toBe(after[3]);
    expect(findXChatMessage(after, 'missing')).toBeUndefined();

    const appended = [...after, info('m4')];
    expect(indexXChatMessages(appended, after)).not.toBe(index);
    expect(findXChatMessage(appended, 'm4')).toBe(appended[4]);
  });
});

describe('changedXChatMessageKeys', () => {
  it('names the message a token streamed into, and only it', () => {
    const before = thread(1000);
    expect(changedXChatMessageKeys(before, withToken(before))).toEqual(['m999']);
  });

  it('names added, removed and replaced messages when the keys change', () => {
    const before = thread(3);
    const after = [before[0] as AgentMessageInfo, info('m2', 'edited'), info('m3')];
    expect(changedXChatMessageKeys(before, after).sort()).toEqual(['m1', 'm2', 'm3']);
  });
});
