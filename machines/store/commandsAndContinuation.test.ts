import { describe, expect, it } from 'vitest';
import { createAgentCommandFactory } from '../../protocol/createAgentCommandFactory';
import { AgentProtocolError } from '../../protocol/errors';
import { getAgentEntityKey } from '../../protocol/getAgentEntityKey';
import { runEvents } from '../../tests/support/events';
import { type AgentProtocolMode, type AgentStore, createAgentStore } from '../createAgentStore';
import { selectPendingInput } from '../selectors';

const key = getAgentEntityKey;

describe('store commands: tool.submit_result', () => {
  function toolStore() {
    const store = createAgentStore();
    const events = runEvents('r1');
    store.dispatch(events.create('run.started', {}));
    const commands = createAgentCommandFactory({ sessionId: 's1', runId: 'r1' });
    const submit = (toolCallId: string) => commands.create('tool.submit_result', { toolCallId, result: { ok: true } });
    return { store, events, submit };
  }

  it('is accepted while the tool call awaits execution or is running', () => {
    const { store, events, submit } = toolStore();
    store.batch([
      events.create('tool.requested', { toolCallId: 'awaiting', name: 'pick_file' }),
      events.create('tool.arguments_completed', { toolCallId: 'awaiting', arguments: '{}' }),
      events.create('tool.requested', { toolCallId: 'running', name: 'pick_file', arguments: '{}' }),
      events.create('tool.running', { toolCallId: 'running' }),
    ]);
    const state = store.getSnapshot();
    expect(state.toolCalls[key('r1', 'awaiting')]?.status).toBe('awaiting_execution');
    expect(state.toolCalls[key('r1', 'running')]?.status).toBe('running');
    expect(store.can(submit('awaiting'))).toBe(true);
    expect(store.can(submit('running'))).toBe(true);
  });

  it('is refused while the arguments stream, and once the tool call has completed or failed', () => {
    const { store, events, submit } = toolStore();
    store.batch([
      events.create('tool.requested', { toolCallId: 'streaming', name: 'x' }),
      events.create('tool.arguments_delta', { toolCallId: 'streaming', delta: '{"q"' }),
      events.create('tool.requested', { toolCallId: 'completed', name: 'x', arguments: '{}' }),
      events.create('tool.completed', { toolCallId: 'completed', result: 1 }),
      events.create('tool.requested', { toolCallId: 'failed', name: 'x', arguments: '{}' }),
      events.create('tool.failed', { toolCallId: 'failed', error: { message: 'bad input' } }),
      events.create('tool.requested', { toolCallId: 'retryable', name: 'x', arguments: '{}' }),
      events.create('tool.failed', { toolCallId: 'retryable', error: { message: 'timeout', retryable: true } }),
      events.create('tool.requested', { toolCallId: 'cancelled', name: 'x', arguments: '{}' }),
      events.create('tool.cancelled', { toolCallId: 'cancelled' }),
    ]);
    expect(store.getSnapshot().issues).toEqual([]);
    for (const toolCallId of ['streaming', 'completed', 'failed', 'retryable', 'cancelled', 'unknown']) {
      expect(store.can(submit(toolCallId)), toolCallId).toBe(false);
      expect(store.submit(submit(toolCallId)), toolCallId).toBe(false);
    }
  });

  it('refuses a second submission while one is in flight, and accepts one again after settle', () => {
    const { store, events, submit } = toolStore();
    store.dispatch(events.create('tool.requested', { toolCallId: 't1', name: 'pick_file', arguments: '{}' }));
    store.dispatch(events.create('tool.arguments_completed', { toolCallId: 't1' }));
    const before = store.getSnapshot();
    const first = submit('t1');
    const second = submit('t1');
    expect(store.submit(first)).toBe(true);
    expect(store.can(second)).toBe(false);
    expect(store.submit(second)).toBe(false);
    expect(store.submit(first)).toBe(false);
    // Settling a command that is not the one in flight settles nothing.
    store.settle(second);
    expect(store.can(second)).toBe(false);
    store.settle(first);
    expect(store.can(second)).toBe(true);
    expect(store.submit(second)).toBe(true);
    // A command never changes AgentState.
    expect(store.getSnapshot()).toBe(before);
  });

  it('refuses a second submission while one is in flight for a running tool call', () => {
    const { store, events, submit } = toolStore();
    store.dispatch(events.create('tool.requested', { toolCallId: 't1', name: 'pick_file', arguments: '{}' }));
    store.dispatch(events.create('tool.running', { toolCallId: 't1' }));
    const first = submit('t1');
    expect(store.submit(first)).toBe(true);
    expect(store.submit(submit('t1'))).toBe(false);
    store.settle(first);
    expect(store.submit(submit('t1'))).toBe(true);
  });

  it('is refused once the result arrived, even while the submission is still in flight', () => {
    const { store, events, submit } = toolStore();
    store.dispatch(events.create('tool.requested', { toolCallId: 't1', name: 'pick_file', arguments: '{}' }));
    store.dispatch(events.create('tool.running', { toolCallId: 't1' }));
    const first = submit('t1');
    expect(store.submit(first)).toBe(true);
    store.dispatch(events.create('tool.completed', { toolCallId: 't1', result: { ok: true } }));
    store.settle(first);
    expect(store.can(submit('t1'))).toBe(false);
  });

  // The runtime may answer a submitted result with `tool.running` before `tool.completed`:
  // the submission is still in flight then, so a second one must still be refused.
  it('still refuses a second submission after tool.running arrives while the first is in flight', () => {
    const { store, events, submit } = toolStore();
    store.dispatch(events.create('tool.requested', { toolCallId: 't1', name: 'pick_file', arguments: '{}' }));
    store.dispatch(events.create('tool.arguments_completed', { toolCallId: 't1' }));
    const first = submit('t1');
    expect(store.submit(first)).toBe(true);
    store.dispatch(events.create('tool.running', { toolCallId: 't1' }));
    expect(store.can(submit('t1'))).toBe(false);
  });

  it('is accepted for a tool call its completed run waits on', () => {
    const { store, events, submit } = toolStore();
    store.batch([
      events.create('tool.requested', { toolCallId: 't1', name: 'pick_file', arguments: '{}' }),
      events.create('run.completed', { pendingToolCallIds: ['t1'] }),
    ]);
    expect(selectPendingInput(store.getSnapshot(), 'r1').toolCalls.map((call) => call.id)).toEqual(['t1']);
    expect(store.can(submit('t1'))).toBe(true);
    expect(store.submit(submit('t1'))).toBe(true);
  });
});

describe.each<AgentProtocolMode>(['record', 'strict'])('continuesRunId (%s mode)', (protocolMode) => {
  /** Run A of session s1 ends waiting on the client tool t1 and the approval a1; t0 completed within it. */
  function waitingRunA(): { store: AgentStore; a: ReturnType<typeof runEvents>; b: ReturnType<typeof runEvents> } {
    const store = createAgentStore({ protocolMode });
    const a = runEvents('A');
    store.batch([
      a.create('run.started', {}),
      a.create('tool.requested', { toolCallId: 't0', name: 'search', arguments: '{}' }),
      a.create('tool.completed', { toolCallId: 't0', result: 'done' }),
      a.create('tool.requested', { toolCallId: 't1', name: 'pick_file', arguments: '{}' }),
      a.create('tool.arguments_completed', { toolCallId: 't1' }),
      a.create('approval.requested', { approvalId: 'a1', toolCallId: 't1' }),
      a.create('run.completed', { pendingToolCallIds: ['t1'], pendingApprovalIds: ['a1'] }),
    ]);
    const pending = selectPendingInput(store.getSnapshot(), 'A');
    expect(pending.toolCalls.map((call) => call.id)).toEqual(['t1']);
    expect(pending.approvals.map((approval) => approval.id)).toEqual(['a1']);
    return { store, a, b: runEvents('B') };
  }

  /** Dispatches an event the store should refuse: the issue it records, or the error strict mode throws. */
  function refusal(store: AgentStore, event: unknown) {
    if (protocolMode === 'record') {
      const before = store.getSnapshot().issues.length;
      store.dispatch(event);
      const issues = store.getSnapshot().issues.slice(before);
      expect(issues).toHaveLength(1);
      return issues[0];
    }
    const before = store.getSnapshot();
    let thrown: unknown;
    try {
      store.dispatch(event);
    } catch (error) {
      thrown = error;
    }
    expect(AgentProtocolError.isInstance(thrown)).toBe(true);
    expect(store.getSnapshot()).toBe(before);
    return (thrown as AgentProtocolError).issue;
  }

  it("settles the entities A waits on with B's events, on A's records", () => {
    const { store, b } = waitingRunA();
    store.dispatch(b.create('run.started', { continuesRunId: 'A' }));
    store.dispatch(b.create('tool.completed', { toolCallId: 't1', result: { file: 'report.pdf' } }));
    let state = store.getSnapshot();
    expect(state.toolCalls[key('A', 't1')]).toMatchObject({
      runId: 'A',
      status: 'completed',
      result: { file: 'report.pdf' },
    });
    expect(selectPendingInput(state, 'A').approvals.map((approval) => approval.id)).toEqual(['a1']);
    store.dispatch(b.create('approval.resolved', { approvalId: 'a1', decision: 'approved' }));
    store.dispatch(b.create('run.completed', {}));
    state = store.getSnapshot();
    expect(state.approvals[key('A', 'a1')]).toMatchObject({ runId: 'A', status: 'resolved', decision: 'approved' });
    expect(state.toolCalls[key('B', 't1')]).toBeUndefined();
    expect(state.approvals[key('B', 'a1')]).toBeUndefined();
    expect(selectPendingInput(state, 'A')).toEqual({ toolCalls: [], approvals: [] });
    expect(state.runs.B).toMatchObject({ status: 'completed', continuesRunId: 'A' });
    expect(state.lastSequenceByRun).toEqual({ A: 7, B: 4 });
    expect(state.issues).toEqual([]);
  });

  it('settles through the tool call lifecycle: tool.running then tool.failed, from B', () => {
    const { store, b } = waitingRunA();
    store.batch([
      b.create('run.started', { continuesRunId: 'A' }),
      b.create('tool.running', { toolCallId: 't1' }),
      b.create('tool.failed', { toolCallId: 't1', error: { message: 'the user closed the picker' } }),
    ]);
    const state = store.getSnapshot();
    expect(state.toolCalls[key('A', 't1')]).toMatchObject({
      status: 'failed',
      error: { message: 'the user closed the picker' },
    });
    expect(selectPendingInput(state, 'A').toolCalls).toEqual([]);
    expect(state.issues).toEqual([]);
  });

  it('lets B start its own entity with an id A waits on, without a duplicate_entity', () => {
    const { store, b } = waitingRunA();
    store.batch([
      b.create('run.started', { continuesRunId: 'A' }),
      b.create('tool.requested', { toolCallId: 't1', name: 'pick_file', arguments: '{"again":true}' }),
      b.create('tool.completed', { toolCallId: 't1', result: 'B-result' }),
    ]);
    const state = store.getSnapshot();
    expect(state.issues).toEqual([]);
    expect(state.toolCalls[key('B', 't1')]).toMatchObject({ runId: 'B', status: 'completed', result: 'B-result' });
    // A's call is untouched: B's events went to B's own entity.
    expect(state.toolCalls[key('A', 't1')]).toMatchObject({ status: 'awaiting_execution' });
    expect(selectPendingInput(state, 'A').toolCalls.map((call) => call.id)).toEqual(['t1']);
  });

  it('refuses as missing_entity an event of B naming an entity A does not wait on', () => {
    const { store, b } = waitingRunA();
    store.dispatch(b.create('run.started', { continuesRunId: 'A' }));
    // t0 is A's, but completed: A does not wait on it.
    const completedInA = refusal(store, b.create('tool.completed', { toolCallId: 't0', result: 'again' }));
    expect(completedInA).toMatchObject({ code: 'missing_entity', runId: 'B', entityId: 't0' });
    const unknown = refusal(store, b.create('approval.resolved', { approvalId: 'zz', decision: 'approved' }));
    expect(unknown).toMatchObject({ code: 'missing_entity', runId: 'B', entityId: 'zz' });
    const state = store.getSnapshot();
    expect(state.toolCalls[key('A', 't0')]).toMatchObject({ status: 'completed', result: 'done' });
    expect(selectPendingInput(state, 'A').toolCalls.map((call) => call.id)).toEqual(['t1']);
  });

  it('adopts nothing from a run that no longer waits', () => {
    const { store, a, b } = waitingRunA();
    // A's own events settle what it waited on: A stops waiting.
    store.batch([
      a.create('tool.completed', { toolCallId: 't1', result: 'from A' }),
      a.create('approval.resolved', { approvalId: 'a1', decision: 'rejected' }),
    ]);
    expect(selectPendingInput(store.getSnapshot(), 'A')).toEqual({ toolCalls: [], approvals: [] });
    store.dispatch(b.create('run.started', { continuesRunId: 'A' }));
    const issue = refusal(store, b.create('tool.completed', { toolCallId: 't1', result: 'from B' }));
    expect(issue).toMatchObject({ code: 'missing_entity', entityId: 't1' });
    expect(store.getSnapshot().toolCalls[key('A', 't1')]).toMatchObject({ result: 'from A' });
  });

  it('adopts nothing from a run that is still running, or that does not exist', () => {
    const store = createAgentStore({ protocolMode });
    const a = runEvents('A');
    store.batch([
      a.create('run.started', {}),
      a.create('tool.requested', { toolCallId: 't1', name: 'pick_file', arguments: '{}' }),
      a.create('tool.arguments_completed', { toolCallId: 't1' }),
    ]);
    const b = runEvents('B');
    store.dispatch(b.create('run.started', { continuesRunId: 'A' }));
    expect(refusal(store, b.create('tool.completed', { toolCallId: 't1' }))).toMatchObject({ code: 'missing_entity' });
    expect(store.getSnapshot().toolCalls[key('A', 't1')]).toMatchObject({ status: 'awaiting_execution' });
    const c = runEvents('C');
    store.dispatch(c.create('run.started', { continuesRunId: 'no-such-run' }));
    expect(refusal(store, c.create('tool.completed', { toolCallId: 't1' }))).toMatchObject({ code: 'missing_entity' });
  });

  it('restores the link after store.reset(store.getSnapshot()) mid-way', () => {
    const { store, b } = waitingRunA();
    store.batch([
      b.create('run.started', { continuesRunId: 'A' }),
      b.create('tool.completed', { toolCallId: 't1', result: 'picked' }),
    ]);
    store.reset(store.getSnapshot());
    expect(selectPendingInput(store.getSnapshot(), 'A').approvals.map((approval) => approval.id)).toEqual(['a1']);
    store.dispatch(b.create('approval.resolved', { approvalId: 'a1', decision: 'approved' }));
    store.dispatch(b.create('run.completed', {}));
    const state = store.getSnapshot();
    expect(state.approvals[key('A', 'a1')]).toMatchObject({ status: 'resolved', decision: 'approved' });
    expect(state.approvals[key('B', 'a1')]).toBeUndefined();
    expect(selectPendingInput(state, 'A')).toEqual({ toolCalls: [], approvals: [] });
    expect(state.issues).toEqual([]);
  });

  it('restores the link from a JSON checkpoint, before B settled anything', () => {
    const { store, b } = waitingRunA();
    store.dispatch(b.create('run.started', { continuesRunId: 'A' }));
    const restored = createAgentStore({ protocolMode });
    restored.reset(JSON.parse(JSON.stringify(store.getSnapshot())));
    restored.batch([
      b.create('tool.completed', { toolCallId: 't1', result: 'picked' }),
      b.create('approval.resolved', { approvalId: 'a1', decision: 'rejected' }),
    ]);
    const state = restored.getSnapshot();
    expect(state.toolCalls[key('A', 't1')]).toMatchObject({ status: 'completed', result: 'picked' });
    expect(state.approvals[key('A', 'a1')]).toMatchObject({ status: 'resolved', decision: 'rejected' });
    expect(selectPendingInput(state, 'A')).toEqual({ toolCalls: [], approvals: [] });
    expect(state.issues).toEqual([]);
  });
});

describe('continuesRunId: strict batches', () => {
  it('rolls back a batch that settled an entity of A, and the link still works after', () => {
    const store = createAgentStore({ protocolMode: 'strict' });
    const a = runEvents('A');
    store.batch([
      a.create('run.started', {}),
      a.create('tool.requested', { toolCallId: 't1', name: 'pick_file', arguments: '{}' }),
      a.create('run.completed', { pendingToolCallIds: ['t1'] }),
    ]);
    const b = runEvents('B');
    store.dispatch(b.create('run.started', { continuesRunId: 'A' }));
    const completed = b.create('tool.completed', { toolCallId: 't1', result: 'picked' });
    const before = store.getSnapshot();
    expect(() => store.batch([completed, b.create('tool.completed', { toolCallId: 'zz' })])).toThrow(
      AgentProtocolError,
    );
    expect(store.getSnapshot()).toEqual(before);
    expect(selectPendingInput(store.getSnapshot(), 'A').toolCalls.map((call) => call.id)).toEqual(['t1']);
    store.dispatch(completed);
    expect(store.getSnapshot().toolCalls[key('A', 't1')]).toMatchObject({ status: 'completed', result: 'picked' });
    expect(selectPendingInput(store.getSnapshot(), 'A')).toEqual({ toolCalls: [], approvals: [] });
  });
});
