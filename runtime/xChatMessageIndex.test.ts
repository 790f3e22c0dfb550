import { describe, expect, it } from 'vitest';
import type { AgentMessageInfo } from '../machines/selectors';
import { messageInfo, messageThread, withToken } from '../tests/support/messageThread';
import { changedXChatMessageKeys, findXChatMessage, indexXChatMessages } from './xChatMessageIndex';

describe('indexXChatMessages', () => {
  it('shares the index of the array before when the keys are the same, and finds entries by key', () => {
    const before = messageThread(4);
    const after = withToken(before);
    const index = indexXChatMessages(before);
    expect(indexXChatMessages(after, before)).toBe(index);
    expect(findXChatMessage(after, 'm3')).toBe(after[3]);
    expect(findXChatMessage(after, 'missing')).toBeUndefined();

    const appended = [...after, messageInfo('m4')];
    expect(indexXChatMessages(appended, after)).not.toBe(index);
    expect(findXChatMessage(appended, 'm4')).toBe(appended[4]);
  });
});

describe('changedXChatMessageKeys', () => {
  it('names the message a token streamed into, and only it', () => {
    const before = messageThread(1000);
    expect(changedXChatMessageKeys(before, withToken(before))).toEqual(['m999']);
  });

  it('names added, removed and replaced messages when the keys change', () => {
    const before = messageThread(3);
    const after = [before[0] as AgentMessageInfo, messageInfo('m2', 'edited'), messageInfo('m3')];
    expect(changedXChatMessageKeys(before, after).sort()).toEqual(['m1', 'm2', 'm3']);
  });
});
