import { describe, expect, it } from 'vitest';
import { messageInfo, messageThread, withToken } from '../tests/support/messageThread';
import { createXChatMessageGroups } from './xChatMessageGroups';

describe('createXChatMessageGroups', () => {
  it('splits the keys into groups of size, the last one shorter', () => {
    const groups = createXChatMessageGroups({ size: 2 });
    expect(groups.select(messageThread(5))).toEqual([['m0', 'm1'], ['m2', 'm3'], ['m4']]);
    expect(createXChatMessageGroups({ size: 2 }).select([])).toEqual([]);
  });

  it('keeps the list and every group as they were when a token streams into a message', () => {
    const groups = createXChatMessageGroups({ size: 2 });
    const before = messageThread(5);
    const first = groups.select(before);
    const streamed = withToken(before);
    expect(streamed).not.toBe(before);
    expect(groups.select(streamed)).toBe(first);
    expect(groups.select(withToken(streamed))).toBe(first);
  });

  it('extends only the last group when a message is appended, then starts a new one', () => {
    const groups = createXChatMessageGroups({ size: 2 });
    const messages = messageThread(3);
    const [firstGroup, lastGroup] = groups.select(messages);

    const extended = groups.select([...messages, messageInfo('m3')]);
    expect(extended).toEqual([
      ['m0', 'm1'],
      ['m2', 'm3'],
    ]);
    expect(extended[0]).toBe(firstGroup);
    expect(extended[1]).not.toBe(lastGroup);

    const added = groups.select([...messages, messageInfo('m3'), messageInfo('m4')]);
    expect(added).toEqual([['m0', 'm1'], ['m2', 'm3'], ['m4']]);
    expect(added[0]).toBe(extended[0]);
    expect(added[1]).toBe(extended[1]);
  });

  it('changes the group of a removed message and those after it, and keeps the ones before', () => {
    const groups = createXChatMessageGroups({ size: 2 });
    const messages = messageThread(6);
    const before = groups.select(messages);
    const after = groups.select(messages.filter(({ id }) => id !== 'm2'));
    expect(after).toEqual([['m0', 'm1'], ['m3', 'm4'], ['m5']]);
    expect(after[0]).toBe(before[0]);
    expect(after[1]).not.toBe(before[1]);
  });

  it('refuses a size that is not a positive integer', () => {
    expect(() => createXChatMessageGroups({ size: 0 })).toThrow('The group size must be a positive integer, not 0');
    expect(() => createXChatMessageGroups({ size: 1.5 })).toThrow(RangeError);
  });
});
