import { describe, expect, it } from 'vitest';
import { runEvents } from '../tests/support/events';
import type { AgentState } from './agentState';
import { createAgentStore } from './createAgentStore';
import { replayAgentEvents } from './replayAgentEvents';
import {
  selectAgentTimeline,
  selectApproval,
  selectMessages,
  selectPendingInput,
  selectRun,
  selectRunningRuns,
  selectToolCall,
  selectToolCallAttempts,
} from './selectors';

function scenario() {
  const first = runEvents('r1');
  const second = runEvents('r2');
  return replayAgentEvents([
    first.create('run.started', {}),
    second.create('run.started', {}),
    first.create('message.started', { messageId: 'u1', role: 'user', content: 'hi' }),
    first.create('message.completed', { messageId: 'u1' }),
    first.create('reasoning.started', { reasoningId: 'th1', redacted: true, content: 'ENCRYPTED' }),
    first.create('reasoning.started', { reasoningId: 'th2' }),
    first.create('reasoning.delta', { reasoningId: 'th2', delta: 'visible' }),
    first.create('message.started', { messageId: 'm1', role: 'assistant' }),
    first.create('tool.requested', { toolCallId: 't1', name: 'search' }),
    first.create('approval.requested', { approvalId: 'a1', toolCallId: 't1' }),
    second.create('message.started', { messageId: 'm1', role: 'assistant' }),
    second.create('message.delta', { messageId: 'm1', delta: 'x' }),
    second.create('message.failed', { messageId: 'm1', error: { message: 'x' } }),
    second.create('run.failed', { error: { message: 'x' } }),
  ]);
}

describe('selectors', () => {
  const state = scenario();

  it('select runs, tool calls and approvals by run-scoped id', () => {
    expect(selectRun(state, 'r1')?.status).toBe('running');
    expect(selectRun(state, 'nope')).toBeUndefined();
    expect(selectRun(state, '__proto__')).toBeUndefined();
    expect(selectToolCall(state, { runId: 'r1', toolCallId: 't1' })?.name).toBe('search');
    expect(selectToolCall(state, { runId: 'r2', toolCallId: 't1' })).toBeUndefined();
    expect(selectApproval(state, { runId: 'r1', approvalId: 'a1' })?.toolCallId).toBe('t1');
    expect(selectApproval(state, { runId: 'r1', approvalId: 'zz' })).toBeUndefined();
  });

  it('lists running runs of a session', () => {
    expect(selectRunningRuns(state, 's1').map((run) => run.id)).toEqual(['r1']);
    expect(selectRunningRuns(state, 'other')).toEqual([]);
  });

  it('builds the timeline in arrival order, hiding redacted reasoning content', () => {
    const withReasoning = selectAgentTimeline(state, { runId: 'r1', includeReasoning: true });
    expect(withReasoning.map((item) => `${item.kind}:${item.entity.id}`)).toEqual([
      'message:u1',
      'reasoning:th1',
      'reasoning:th2',
      'message:m1',
      'toolCall:t1',
      'approval:a1',
    ]);
    const redacted = withReasoning[1]?.entity as { content?: string; redacted: boolean };
    expect(redacted.redacted).toBe(true);
    expect(redacted.content).toBeUndefined();
    expect(JSON.stringify(withReasoning)).not.toContain('ENCRYPTED');
    expect(withReasoning[2]?.entity).toMatchObject({ content: 'visible' });
    expect(selectAgentTimeline(state, { runId: 'r1' }).map((item) => item.kind)).toEqual([
      'message',
      'message',
      'toolCall',
      'approval',
    ]);
    expect(selectAgentTimeline(state).length).toBe(5);
    expect(selectAgentTimeline(state, { runId: 'r1', includeReasoning: true })).toBe(withReasoning);
    expect(selectAgentTimeline(state, { runId: 'none' })).toEqual([]);
  });

  it('projects messages for chat components with stable entries', () => {
    const messages = selectMessages(state);
    expect(messages.map((info) => [info.id, info.status])).toEqual([
      ['r1:u1', 'local'],
      ['r1:m1', 'loading'],
      ['r2:m1', 'error'],
    ]);
    expect(selectMessages(state, { runId: 'r2' }).map((info) => info.id)).toEqual(['r2:m1']);

    const store = createAgentStore();
    const events = runEvents('r1');
    store.batch([
      events.create('run.started', {}),
      events.create('message.started', { messageId: 'a', role: 'assistant' }),
      events.create('message.started', { messageId: 'b', role: 'assistant' }),
    ]);
    const before = selectMessages(store.getSnapshot());
    store.dispatch(events.create('message.delta', { messageId: 'b', delta: 'x' }));
    const after = selectMessages(store.getSnapshot());
    expect(after[0]).toBe(before[0]);
    expect(after[1]).toMatchObject({ status: 'updating', message: { content: 'x' } });
    store.dispatch(events.create('run.cancelled', {}));
    expect(selectMessages(store.getSnapshot()).map((info) => info.status)).toEqual(['abort', 'abort']);
  });

  it('while a message streams (the order unchanged), gives what a full rebuild gives, the others kept', () => {
    const store = createAgentStore();
    const events = runEvents('r1');
    store.batch([
      events.create('run.started', {}),
      ...['a', 'b', 'c'].map((messageId) => events.create('message.started', { messageId, role: 'assistant' })),
    ]);
    let previous = selectMessages(store.getSnapshot());
    for (const delta of ['one ', 'two ', 'three']) {
      store.dispatch(events.create('message.delta', { messageId: 'b', delta }));
      const state = store.getSnapshot();
      const reused = selectMessages(state);
      // A copy with a new `order` array takes the full rebuild.
      const rebuilt = selectMessages({ ...state, order: [...state.order] });
      expect(reused).toEqual(rebuilt);
      expect([reused[0], reused[2]]).toEqual([previous[0], previous[2]]);
      expect(reused[0]).toBe(previous[0]);
      expect(reused[1]).not.toBe(previous[1]);
      previous = reused;
    }
    expect(previous[1]?.message.content).toBe('one two three');
    store.dispatch(events.create('message.started', { messageId: 'd', role: 'assistant' }));
    expect(selectMessages(store.getSnapshot()).map((info) => info.id)).toEqual(['r1:a', 'r1:b', 'r1:c', 'r1:d']);
  });
});

describe('selectors keep their answer while what they read is unchanged', () => {
  /** Two runs of one session: r1 streams a message and calls a tool (retried once), r2 waits on a tool. */
  function streamingStore() {
    const store = createAgentStore();
    const first = runEvents('r1');
    const second = runEvents('r2');
    store.batch([
      first.create('run.started', {}),
      first.create('message.started', { messageId: 'answer', role: 'assistant' }),
      first.create('tool.requested', { toolCallId: 't1', name: 'search' }),
      first.create('tool.failed', { toolCallId: 't1', error: { message: 'down', retryable: true } }),
      first.create('tool.requested', { toolCallId: 't2', name: 'search', attempt: 2, retryOf: 't1' }),
      first.create('tool.requested', { toolCallId: 'other', name: 'lookup' }),
      second.create('run.started', {}),
      second.create('reasoning.started', { reasoningId: 'th', content: 'hmm' }),
      second.create('reasoning.completed', { reasoningId: 'th' }),
      second.create('tool.requested', { toolCallId: 'client', name: 'weather' }),
      second.create('tool.arguments_completed', { toolCallId: 'client', arguments: '{}' }),
      second.create('approval.requested', { approvalId: 'ok' }),
      second.create('run.completed', { pendingToolCallIds: ['client'], pendingApprovalIds: ['ok'] }),
    ]);
    expect(store.getSnapshot().issues).toEqual([]);
    return { store, first, second };
  }

  /** What each selector answers for `state`, by name. */
  function answers(state: AgentState) {
    return {
      runningRuns: selectRunningRuns(state, 's1'),
      noRunningRuns: selectRunningRuns(state, 'another-session'),
      attempts: selectToolCallAttempts(state, { runId: 'r1', toolCallId: 't2' }),
      pending: selectPendingInput(state, 'r2'),
      timelineOfR2: selectAgentTimeline(state, { runId: 'r2', includeReasoning: true }),
      messagesOfR2: selectMessages(state, { runId: 'r2' }),
      run: selectRun(state, 'r1'),
      toolCall: selectToolCall(state, { runId: 'r2', toolCallId: 'client' }),
      approval: selectApproval(state, { runId: 'r2', approvalId: 'ok' }),
    };
  }

  it('gives the same arrays and objects across deltas of a message, a new message and a shared-state change', () => {
    const { store, first } = streamingStore();
    const before = answers(store.getSnapshot());
    expect(before.runningRuns.map((run) => run.id)).toEqual(['r1']);
    expect(before.attempts.map((call) => call.id)).toEqual(['t1', 't2']);
    expect(before.pending.toolCalls.map((call) => call.id)).toEqual(['client']);
    expect(before.pending.approvals.map((approval) => approval.id)).toEqual(['ok']);
    expect(before.timelineOfR2.map((item) => item.kind)).toEqual(['reasoning', 'toolCall', 'approval']);

    const changes = [
      first.create('message.delta', { messageId: 'answer', delta: 'one ' }),
      first.create('message.delta', { messageId: 'answer', delta: 'two' }),
      first.create('tool.arguments_delta', { toolCallId: 'other', delta: '{"q":' }),
      first.create('message.started', { messageId: 'more', role: 'assistant' }),
      first.create('state.snapshot', { snapshot: { step: 1 } }),
    ];
    for (const change of changes) {
      const previous = store.getSnapshot();
      store.dispatch(change);
      const state = store.getSnapshot();
      expect(state).not.toBe(previous);
      const after = answers(state);
      for (const [name, value] of Object.entries(after)) {
        expect({ [name]: value === before[name as keyof typeof before] }).toEqual({ [name]: true });
      }
    }
    expect(store.getSnapshot().issues).toEqual([]);
    expect(selectMessages(store.getSnapshot()).map((info) => info.message.content)).toEqual(['one two', '']);
  });

  it('gives a new answer when what it reads changed, equal to a fresh computation', () => {
    const { store, first, second } = streamingStore();
    const before = answers(store.getSnapshot());
    store.batch([
      first.create('tool.completed', { toolCallId: 't2', result: { hits: 1 } }),
      second.create('tool.completed', { toolCallId: 'client', result: { celsius: 14 } }),
    ]);
    const after = answers(store.getSnapshot());
    expect(after.attempts).not.toBe(before.attempts);
    expect(after.attempts.map((call) => call.status)).toEqual(['failed', 'completed']);
    expect(after.pending).not.toBe(before.pending);
    expect(after.pending.toolCalls).toEqual([]);
    expect(after.pending.approvals).toBe(before.pending.approvals);
    expect(after.timelineOfR2).not.toBe(before.timelineOfR2);
    expect(after.runningRuns).toBe(before.runningRuns);

    store.dispatch(first.create('run.cancelled', {}));
    const state = store.getSnapshot();
    expect(selectRunningRuns(state, 's1')).toEqual([]);
    // A copy of every container is a state that shares nothing: the same answers, made afresh.
    const copy = JSON.parse(JSON.stringify(state)) as AgentState;
    expect(answers(copy)).toEqual(answers(state));
  });
});
