import { afterEach, describe, expect, it, vi } from 'vitest';
import { createEmptyAgentState } from '../machines/agentState';
import { stubPaintedPage } from '../tests/support/paintedPage';
import { createRemoteRuntime } from '../tests/support/remoteRuntime';
import { createXChatRuntime, type XChatRuntime, type XChatSnapshot } from './createXChatRuntime';
import { createXChatSource } from './createXChatSource';
import { createXChatMessageLayer } from './xChatMessageLayer';

afterEach(() => {
  vi.useRealTimers();
  vi.unstubAllGlobals();
});

/** A runtime whose snapshot the test replaces and announces, as a streaming run does. */
function fakeRuntime() {
  const listeners = new Set<() => void>();
  let snapshot: XChatSnapshot = {
    agentState: createEmptyAgentState(),
    messages: [],
    isRequesting: false,
    commandStates: {},
    latestCommandByAction: {},
    error: undefined,
    connectionState: 'idle',
    checkpointError: undefined,
    strandedRunIds: [],
  };
  const runtime = {
    sessionId: 's1',
    getSnapshot: () => snapshot,
    subscribe(listener: () => void) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
  } as unknown as XChatRuntime<never>;
  const change = (next: Partial<XChatSnapshot>) => {
    snapshot = { ...snapshot, ...next };
    for (const listener of listeners) listener();
  };
  const layer = createXChatMessageLayer({ readMessages: () => snapshot.messages });
  return { runtime, layer, change, listeners };
}

describe('createXChatSource', () => {
  it('tells observers of many runtime changes once per throttle period', () => {
    vi.useFakeTimers();
    const { runtime, layer, change } = fakeRuntime();
    const chat = createXChatSource(runtime, layer, { throttleMs: 50 });
    const next = vi.fn();
    chat.subscribe({ next });
    for (let index = 0; index < 10; index += 1) change({ isRequesting: index % 2 === 1 });
    expect(next).not.toHaveBeenCalled();
    vi.advanceTimersByTime(50);
    expect(next).toHaveBeenCalledTimes(1);
    expect(chat.getSnapshot().isRequesting).toBe(true);
    vi.advanceTimersByTime(500);
    expect(next).toHaveBeenCalledTimes(1);
  });

  it('keeps the view while nothing it shows changed, and says nothing then', () => {
    vi.useFakeTimers();
    const { runtime, layer, change } = fakeRuntime();
    const chat = createXChatSource(runtime, layer, { throttleMs: 10 });
    const next = vi.fn();
    const before = chat.getSnapshot();
    chat.subscribe(next);
    change({ checkpointError: undefined });
    vi.advanceTimersByTime(10);
    expect(next).not.toHaveBeenCalled();
    expect(chat.getSnapshot()).toBe(before);
  });

  it('shows message-layer changes at once, and reads the runtime live without observers', () => {
    const { runtime, layer, change, listeners } = fakeRuntime();
    const chat = createXChatSource(runtime, layer);
    const next = vi.fn();
    const { unsubscribe } = chat.subscribe({ next });
    layer.setMessages([{ id: 'note', message: {} as never, status: 'local' }]);
    expect(next).toHaveBeenCalledTimes(1);
    expect(chat.getSnapshot().messages.map(({ id }) => id)).toEqual(['note']);
    unsubscribe();
    expect(listeners.size).toBe(0);
    change({ connectionState: 'connecting' });
    expect(chat.getSnapshot().connectionState).toBe('connecting');
  });

  it('is requesting while a run of the session is running in AgentState, and shows a run failure as an error', () => {
    const { runtime, layer, change } = fakeRuntime();
    const chat = createXChatSource(runtime, layer);
    const agentState = createEmptyAgentState();
    agentState.runs['run-1'] = { id: 'run-1', sessionId: 's1', status: 'running', startedAt: 1, updatedAt: 1 };
    change({ agentState });
    expect(chat.getSnapshot().isRequesting).toBe(true);
    // Restored without a way to resume it, the run stays running in AgentState but is not followed.
    change({ strandedRunIds: ['run-1'] });
    expect(chat.getSnapshot().isRequesting).toBe(false);
    change({ strandedRunIds: [] });

    const failed = createEmptyAgentState();
    failed.runs['run-1'] = {
      id: 'run-1',
      sessionId: 's1',
      status: 'failed',
      error: { message: 'Rate limited', code: 'rate_limit' },
      startedAt: 1,
      updatedAt: 2,
    };
    change({ agentState: failed });
    expect(chat.getSnapshot()).toMatchObject({
      isRequesting: false,
      error: { source: 'run', message: 'Rate limited', code: 'rate_limit' },
    });
  });

  it("shows a runtime's change at the next animation frame, with no task before it", async () => {
    const page = stubPaintedPage();
    const remote = createRemoteRuntime();
    const runtime = createXChatRuntime({ provider: remote.provider, sessionId: 's1' });
    const layer = createXChatMessageLayer({ readMessages: () => runtime.getSnapshot().messages });
    const chat = createXChatSource(runtime, layer);
    const next = vi.fn();
    chat.subscribe(next);
    const started = remote.nextRun();
    // A change in this task: the request waits to start.
    const result = runtime.request({ prompt: 'Go' });
    expect(next).not.toHaveBeenCalled();
    expect(page.frames.size).toBe(1);
    page.runFrames();
    expect(next).toHaveBeenCalledTimes(1);
    expect(next.mock.calls[0]?.[0]).toMatchObject({ isRequesting: true });
    expect(page.frames.size).toBe(0);

    const run = await started;
    run.push((events) => [events.emit('run.completed', {})]);
    run.end();
    expect((await result).status).toBe('completed');
    page.runFrames();
    expect(chat.getSnapshot()).toMatchObject({ isRequesting: false, messages: [{ message: { content: 'Go' } }] });
    runtime.destroy();
  });

  it("wakes a message's listeners only when that message changes, comes or goes", () => {
    vi.useFakeTimers();
    const { runtime, layer, change, listeners } = fakeRuntime();
    const entry = (id: string, content: string) => ({ id, message: { content } as never, status: 'success' as const });
    const thread = Array.from({ length: 100 }, (_, index) => entry(`m${index}`, 'done'));
    change({ messages: [...thread, entry('answer', '')] });
    const chat = createXChatSource(runtime, layer, { throttleMs: 10 });
    const earlier = vi.fn();
    const answer = vi.fn();
    const later = vi.fn();
    const stopEarlier = chat.subscribeMessage('m0', earlier);
    const stopAnswer = chat.subscribeMessage('answer', answer);
    const stopLater = chat.subscribeMessage('later', later);

    const hello = entry('answer', 'Hello');
    change({ messages: [...thread, entry('answer', 'Hel')] });
    change({ messages: [...thread, hello] });
    vi.advanceTimersByTime(10);
    expect([earlier.mock.calls.length, answer.mock.calls.length, later.mock.calls.length]).toEqual([0, 1, 0]);
    expect(chat.getSnapshot().messages.at(-1)?.message.content).toBe('Hello');

    change({ messages: [...thread.slice(1), hello, entry('later', '')] });
    vi.advanceTimersByTime(10);
    expect([earlier.mock.calls.length, answer.mock.calls.length, later.mock.calls.length]).toEqual([1, 1, 1]);

    stopEarlier();
    stopAnswer();
    expect(listeners.size).toBe(1);
    stopLater();
    expect(listeners.size).toBe(0);
  });
});
