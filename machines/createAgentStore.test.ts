import { describe, expect, it, vi } from 'vitest';
import { createAgentCommandFactory } from '../protocol/createAgentCommandFactory';
import { AgentError, AgentProtocolError, AgentValidationError } from '../protocol/errors';
import { getAgentEntityKey } from '../protocol/getAgentEntityKey';
import { runEvents } from '../tests/support/events';
import { isParsedAgentState, parseAgentState } from './agentStateSchema';
import { createAgentStore } from './createAgentStore';

const key = getAgentEntityKey;

function startedStore(options: Parameters<typeof createAgentStore>[0] = {}) {
  const store = createAgentStore(options);
  const events = runEvents('r1');
  store.dispatch(events.create('run.started', { input: { prompt: 'hi' } }));
  return { store, events };
}

describe('createAgentStore: streaming', () => {
  it('streams a message and keeps unchanged records by identity', () => {
    const { store, events } = startedStore();
    store.dispatch(events.create('message.started', { messageId: 'm1', role: 'assistant' }));
    store.dispatch(events.create('tool.requested', { toolCallId: 't1', name: 'search' }));
    const before = store.getSnapshot();
    store.dispatch(events.create('message.delta', { messageId: 'm1', delta: 'Hel' }));
    store.dispatch(events.create('message.delta', { messageId: 'm1', delta: 'lo' }));
    const after = store.getSnapshot();
    expect(after.messages[key('r1', 'm1')]).toMatchObject({ content: 'Hello', status: 'streaming', updatedAt: 1_004 });
    expect(after.toolCalls).toBe(before.toolCalls);
    expect(after.runs).toBe(before.runs);
    expect(after.lastSequenceByRun).toEqual({ r1: 5 });
    expect(store.getSnapshot()).toBe(after);
  });

  it('streams tool arguments, parses them when complete, and reports invalid JSON on the call', () => {
    const { store, events } = startedStore();
    store.batch([
      events.create('tool.requested', { toolCallId: 't1', name: 'search' }),
      events.create('tool.arguments_delta', { toolCallId: 't1', delta: '{"q":' }),
      events.create('tool.arguments_delta', { toolCallId: 't1', delta: '"x"}' }),
      events.create('tool.arguments_completed', { toolCallId: 't1' }),
      events.create('tool.requested', { toolCallId: 't2', name: 'broken', arguments: '{"q":' }),
      events.create('tool.arguments_completed', { toolCallId: 't2' }),
    ]);
    const state = store.getSnapshot();
    expect(state.toolCalls[key('r1', 't1')]).toMatchObject({
      status: 'awaiting_execution',
      arguments: '{"q":"x"}',
      parsedArguments: { q: 'x' },
    });
    expect(state.toolCalls[key('r1', 't2')]?.argumentsError).toMatch(/JSON/);
    expect(state.toolCalls[key('r1', 't2')]?.parsedArguments).toBeUndefined();
  });

  it('appends streamed text to structured content without flattening it', () => {
    const { store, events } = startedStore();
    store.batch([
      events.create('message.started', {
        messageId: 'm1',
        role: 'assistant',
        content: [{ type: 'company.chart', data: 1 }],
      }),
      events.create('message.delta', { messageId: 'm1', delta: 'a' }),
      events.create('message.delta', { messageId: 'm1', delta: 'b' }),
    ]);
    expect(store.getSnapshot().messages[key('r1', 'm1')]?.content).toEqual([
      { type: 'company.chart', data: 1 },
      { type: 'text', text: 'ab' },
    ]);
  });

  it('covers every entity kind through to its terminal state', () => {
    const { store, events } = startedStore();
    store.batch([
      events.create('reasoning.started', { reasoningId: 'th1' }),
      events.create('reasoning.delta', { reasoningId: 'th1', delta: 'hmm' }),
      events.create('reasoning.completed', { reasoningId: 'th1', summary: 'short' }),
      events.create('task.created', { taskId: 'k1', title: 'Plan' }),
      events.create('task.updated', { taskId: 'k1', progress: 0.5 }),
      events.create('task.completed', { taskId: 'k1', result: 'ok' }),
      events.create('artifact.created', { artifactId: 'f1', mediaType: 'text/markdown', content: '# A' }),
      events.create('artifact.updated', { artifactId: 'f1', version: 2, content: '# B' }),
      events.create('artifact.completed', { artifactId: 'f1' }),
      events.create('approval.requested', { approvalId: 'a1', editable: true, version: 1 }),
      events.create('approval.resolved', { approvalId: 'a1', decision: 'modified', data: { q: 2 } }),
      events.create('run.completed', { output: 'done', usage: { inputTokens: 1 } }),
    ]);
    const state = store.getSnapshot();
    expect(state.issues).toEqual([]);
    expect(state.reasoning[key('r1', 'th1')]).toMatchObject({ status: 'completed', content: 'hmm', summary: 'short' });
    expect(state.tasks[key('r1', 'k1')]).toMatchObject({ status: 'completed', progress: 0.5, result: 'ok' });
    expect(state.artifacts[key('r1', 'f1')]).toMatchObject({ status: 'completed', version: 2, content: '# B' });
    expect(state.approvals[key('r1', 'a1')]).toMatchObject({
      status: 'resolved',
      decision: 'modified',
      resolvedData: { q: 2 },
    });
    expect(state.runs.r1).toMatchObject({
      status: 'completed',
      output: 'done',
      usage: { inputTokens: 1 },
      input: { prompt: 'hi' },
    });
    expect(state.order.map((entry) => entry.kind)).toEqual(['reasoning', 'task', 'artifact', 'approval']);
  });
});

describe('createAgentStore: protocol rules (record mode)', () => {
  it('absorbs a duplicate event id silently', () => {
    const { store, events } = startedStore();
    const delta = events.create('message.started', { messageId: 'm1', role: 'assistant' });
    store.dispatch(delta);
    const state = store.getSnapshot();
    store.dispatch(delta);
    store.dispatch({ ...delta, sequence: 99 });
    expect(store.getSnapshot()).toBe(state);
    expect(state.issues).toEqual([]);
  });

  it('records a non-increasing sequence and does not apply the event', () => {
    const { store, events } = startedStore();
    store.dispatch(events.create('message.started', { messageId: 'm1', role: 'assistant' }));
    store.dispatch({ ...events.create('message.delta', { messageId: 'm1', delta: 'late' }), sequence: 2 });
    const state = store.getSnapshot();
    expect(state.issues).toMatchObject([{ code: 'invalid_sequence', runId: 'r1' }]);
    expect(state.issues[0]?.message).toBe('Sequence 2 of run "r1" is not greater than 2');
    expect(state.messages[key('r1', 'm1')]?.content).toBe('');
  });

  it('refuses events after the run ended', () => {
    const { store, events } = startedStore();
    store.dispatch(events.create('run.completed', {}));
    store.dispatch(events.create('message.started', { messageId: 'm1', role: 'assistant' }));
    store.dispatch(events.create('run.failed', { error: { message: 'late' } }));
    const state = store.getSnapshot();
    expect(state.issues.map((issue) => [issue.code, issue.state])).toEqual([
      ['terminal_run', 'completed'],
      ['terminal_run', 'completed'],
    ]);
    expect(state.messages).toEqual({});
    expect(state.runs.r1?.status).toBe('completed');
  });

  it('isolates the same entity id in two runs', () => {
    const store = createAgentStore();
    const first = runEvents('r1');
    const second = runEvents('r2');
    store.batch([
      first.create('run.started', {}),
      second.create('run.started', {}),
      first.create('message.started', { messageId: 'm1', role: 'assistant' }),
      second.create('message.started', { messageId: 'm1', role: 'assistant' }),
      first.create('message.delta', { messageId: 'm1', delta: 'one' }),
      second.create('message.delta', { messageId: 'm1', delta: 'two' }),
      first.create('message.completed', { messageId: 'm1' }),
    ]);
    const state = store.getSnapshot();
    expect(state.messages[key('r1', 'm1')]).toMatchObject({ content: 'one', status: 'completed' });
    expect(state.messages[key('r2', 'm1')]).toMatchObject({ content: 'two', status: 'streaming' });
    expect(state.issues).toEqual([]);
  });

  it('records a missing run, a missing entity and a duplicate start', () => {
    const store = createAgentStore();
    store.dispatch(runEvents('ghost').create('message.started', { messageId: 'm1', role: 'assistant' }));
    const events = runEvents('r1');
    store.dispatch(events.create('run.started', {}));
    store.dispatch(events.create('run.started', {}));
    store.dispatch(events.create('message.delta', { messageId: 'nope', delta: 'x' }));
    store.dispatch(events.create('tool.requested', { toolCallId: 't1', name: 'a' }));
    store.dispatch(events.create('tool.requested', { toolCallId: 't1', name: 'b' }));
    const state = store.getSnapshot();
    expect(state.issues.map((issue) => [issue.code, issue.runId, issue.entityId])).toEqual([
      ['missing_run', 'ghost', undefined],
      ['duplicate_entity', 'r1', undefined],
      ['missing_entity', 'r1', 'nope'],
      ['duplicate_entity', 'r1', 't1'],
    ]);
    expect(state.toolCalls[key('r1', 't1')]?.name).toBe('a');
  });

  it('records an invalid event with the path that failed', () => {
    const { store } = startedStore();
    store.dispatch({
      protocolVersion: '0.1',
      type: 'message.delta',
      runId: 'r1',
      eventId: 'x',
      sessionId: 's1',
      sequence: 9,
      timestamp: 1,
      payload: { messageId: 'm', delta: 1 },
    });
    store.dispatch('not an event');
    const issues = store.getSnapshot().issues;
    expect(issues.map((issue) => issue.code)).toEqual(['invalid_event', 'invalid_event']);
    expect(issues[0]?.message).toBe('Invalid event: payload.delta: expected string, got number');
  });

  it('records an event of another session as session_mismatch', () => {
    const { store } = startedStore();
    store.dispatch(runEvents('r1', 'other', 5).create('message.started', { messageId: 'm1', role: 'assistant' }));
    expect(store.getSnapshot().issues.map((issue) => issue.code)).toEqual(['session_mismatch']);
  });

  it('refuses an entity update after its terminal state, naming the state', () => {
    const { store, events } = startedStore();
    store.batch([
      events.create('message.started', { messageId: 'm1', role: 'assistant' }),
      events.create('message.completed', { messageId: 'm1', content: 'final' }),
      events.create('message.delta', { messageId: 'm1', delta: 'more' }),
      events.create('task.created', { taskId: 'k1' }),
      events.create('tool.requested', { toolCallId: 't1', name: 'x' }),
      events.create('tool.running', { toolCallId: 't1' }),
      events.create('tool.arguments_completed', { toolCallId: 't1' }),
      events.create('artifact.created', { artifactId: 'f1', mediaType: 'text/plain', version: 3 }),
      events.create('artifact.updated', { artifactId: 'f1', version: 2 }),
    ]);
    const state = store.getSnapshot();
    expect(state.issues.map((issue) => [issue.code, issue.entityId, issue.state])).toEqual([
      ['invalid_transition', 'm1', 'completed'],
      ['invalid_transition', 't1', 'running'],
      ['invalid_transition', 'f1', 'open'],
    ]);
    expect(state.messages[key('r1', 'm1')]?.content).toBe('final');
    expect(state.artifacts[key('r1', 'f1')]?.version).toBe(3);
  });

  it('closes entities still active at the run terminal as cancelled and records each', () => {
    const { store, events } = startedStore();
    store.batch([
      events.create('message.started', { messageId: 'm1', role: 'assistant' }),
      events.create('message.delta', { messageId: 'm1', delta: 'partial' }),
      events.create('task.created', { taskId: 'k1' }),
      events.create('run.failed', { error: { message: 'crash' } }),
    ]);
    const state = store.getSnapshot();
    expect(state.issues.map((issue) => [issue.code, issue.entityId, issue.state])).toEqual([
      ['active_entities_at_terminal', 'm1', 'streaming'],
      ['active_entities_at_terminal', 'k1', 'running'],
    ]);
    expect(state.messages[key('r1', 'm1')]).toMatchObject({
      status: 'cancelled',
      reason: 'run_terminated',
      content: 'partial',
    });
    expect(state.tasks[key('r1', 'k1')]).toMatchObject({ status: 'cancelled', reason: 'run_terminated' });
    expect(state.runs.r1).toMatchObject({ status: 'failed', error: { message: 'crash' } });
  });

  it('lets a run end with tool calls awaiting execution when it lists them', () => {
    const { store, events } = startedStore();
    store.batch([
      events.create('tool.requested', { toolCallId: 't1', name: 'a' }),
      events.create('tool.arguments_completed', { toolCallId: 't1', arguments: '{}' }),
      events.create('tool.requested', { toolCallId: 't2', name: 'b', arguments: '{"x":1}' }),
      events.create('tool.requested', { toolCallId: 't3', name: 'c' }),
      events.create('run.completed', { pendingToolCallIds: ['t1', 't2'] }),
    ]);
    const state = store.getSnapshot();
    expect(state.toolCalls[key('r1', 't1')]?.status).toBe('awaiting_execution');
    expect(state.toolCalls[key('r1', 't2')]).toMatchObject({ status: 'awaiting_execution', parsedArguments: { x: 1 } });
    expect(state.toolCalls[key('r1', 't3')]).toMatchObject({ status: 'cancelled', reason: 'run_terminated' });
    expect(state.issues.map((issue) => [issue.code, issue.entityId])).toEqual([['active_entities_at_terminal', 't3']]);
    expect(state.runs.r1?.pendingToolCallIds).toEqual(['t1', 't2']);
  });

  it('lets a run end waiting on approvals it lists, and keeps entity meta from start and completion', () => {
    const { store, events } = startedStore();
    store.batch([
      events.create('approval.requested', { approvalId: 'a1' }),
      events.create(
        'message.started',
        { messageId: 'm1', role: 'assistant' },
        { meta: { openai: { model: 'x' }, trace: 1 } },
      ),
      events.create('message.completed', { messageId: 'm1' }, { meta: { openai: { finishReason: 'stop' } } }),
      events.create('run.completed', { pendingApprovalIds: ['a1'] }),
    ]);
    const state = store.getSnapshot();
    expect(state.issues).toEqual([]);
    expect(state.approvals[key('r1', 'a1')]?.status).toBe('waiting');
    expect(state.runs.r1?.pendingApprovalIds).toEqual(['a1']);
    expect(state.messages[key('r1', 'm1')]?.meta).toEqual({ openai: { model: 'x', finishReason: 'stop' }, trace: 1 });
  });

  it('applies shared state snapshots and patches per session, refusing prototype paths', () => {
    const { store, events } = startedStore();
    store.dispatch(events.create('state.snapshot', { snapshot: { todo: [{ done: false }], other: { a: 1 } } }));
    const before = store.getSnapshot().state.s1 as { other: object };
    store.dispatch(events.create('state.delta', { patch: [{ op: 'replace', path: '/todo/0/done', value: true }] }));
    store.dispatch(
      events.create('state.delta', {
        patch: [
          { op: 'add', path: '/x', value: 1 },
          { op: 'test', path: '/x', value: 2 },
        ],
      }),
    );
    store.dispatch(
      events.create('state.delta', { patch: [{ op: 'add', path: '/constructor/prototype/polluted', value: 1 }] }),
    );
    const state = store.getSnapshot();
    expect(state.state.s1).toEqual({ todo: [{ done: true }], other: { a: 1 } });
    expect((state.state.s1 as { other: object }).other).toBe(before.other);
    expect(state.issues.map((issue) => issue.code)).toEqual(['invalid_patch', 'invalid_patch']);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
});

describe('createAgentStore: sessions', () => {
  it('records session.started, and runs keep to the session they started in', () => {
    const store = createAgentStore();
    const events = runEvents('r1');
    store.batch([
      events.create('session.started', { title: 'Trip planning', data: { locale: 'fr' } }),
      events.create('run.started', {}),
      events.create('run.completed', {}),
    ]);
    const other = runEvents('r1', 's2', 10);
    store.dispatch(other.create('session.started', {}));
    const elsewhere = runEvents('r9', 's2');
    store.dispatch(elsewhere.create('session.started', {}));
    // session.started names no run's session: r9 belongs to the session its run.started names.
    store.dispatch(runEvents('r9', 's1', 5).create('run.started', {}));
    store.dispatch(runEvents('r9', 's2', 7).create('message.started', { messageId: 'm1', role: 'assistant' }));
    const state = store.getSnapshot();
    expect(state.sessions.s1).toMatchObject({ id: 's1', title: 'Trip planning', data: { locale: 'fr' } });
    expect(state.sessions.s2).toMatchObject({ id: 's2' });
    expect(state.runs.r1?.sessionId).toBe('s1');
    expect(state.runs.r9?.sessionId).toBe('s1');
    expect(state.issues.map((issue) => [issue.code, issue.runId])).toEqual([
      ['session_mismatch', 'r1'],
      ['session_mismatch', 'r9'],
    ]);
    expect(state.lastSequenceByRun).toEqual({ r1: 3, r9: 6 });
  });
});

describe('createAgentStore: untrusted ids', () => {
  it('keeps runs and sessions named __proto__ or constructor as plain data', () => {
    const store = createAgentStore();
    const proto = ['__', 'proto', '__'].join('');
    const events = runEvents(proto, 'constructor');
    store.batch([
      events.create('run.started', {}),
      events.create('message.started', { messageId: proto, role: 'assistant' }),
      events.create('state.snapshot', { snapshot: { ok: true } }),
      events.create('run.completed', {}),
    ]);
    const state = store.getSnapshot();
    expect(Object.hasOwn(state.runs, proto)).toBe(true);
    expect(state.runs[proto]?.status).toBe('completed');
    expect(Object.hasOwn(state.sessions, 'constructor')).toBe(true);
    expect(state.state.constructor).toEqual({ ok: true });
    expect(state.lastSequenceByRun[proto]).toBe(4);
    expect(Object.getPrototypeOf(state.runs)).toBe(Object.prototype);
    expect(JSON.parse(JSON.stringify(state))).toEqual(state);
    const restored = createAgentStore();
    restored.reset(JSON.parse(JSON.stringify(state)));
    expect(restored.getSnapshot().runs[proto]?.status).toBe('completed');
  });
});

describe('createAgentStore: strict mode and batches', () => {
  it('throws AgentProtocolError at the first issue and changes nothing', () => {
    const { store, events } = startedStore({ protocolMode: 'strict' });
    const before = store.getSnapshot();
    let thrown: unknown;
    try {
      store.dispatch(events.create('message.delta', { messageId: 'nope', delta: 'x' }));
    } catch (error) {
      thrown = error;
    }
    expect(AgentProtocolError.isInstance(thrown)).toBe(true);
    expect((thrown as AgentProtocolError).issue).toMatchObject({ code: 'missing_entity', entityId: 'nope' });
    expect(store.getSnapshot()).toBe(before);
  });

  it('makes a strict batch atomic: nothing committed and nobody notified on failure', () => {
    const { store, events } = startedStore({ protocolMode: 'strict' });
    store.dispatch(events.create('message.started', { messageId: 'm1', role: 'assistant' }));
    const before = store.getSnapshot();
    const listener = vi.fn();
    store.subscribe(listener);
    const good = events.create('message.delta', { messageId: 'm1', delta: 'kept?' });
    expect(() =>
      store.batch([
        good,
        events.create('tool.requested', { toolCallId: 't1', name: 'x' }),
        events.create('message.completed', { messageId: 'missing' }),
      ]),
    ).toThrow(AgentProtocolError);
    expect(listener).not.toHaveBeenCalled();
    expect(store.getSnapshot()).toEqual(before);
    store.batch([good]);
    expect(store.getSnapshot().messages[key('r1', 'm1')]?.content).toBe('kept?');
    expect(listener).toHaveBeenCalledTimes(1);
  });

  it('notifies once per successful batch and once per changing dispatch', () => {
    const { store, events } = startedStore();
    const listener = vi.fn();
    const unsubscribe = store.subscribe(listener);
    store.batch([
      events.create('message.started', { messageId: 'm1', role: 'assistant' }),
      events.create('message.delta', { messageId: 'm1', delta: 'a' }),
      events.create('message.delta', { messageId: 'm1', delta: 'b' }),
    ]);
    expect(listener).toHaveBeenCalledTimes(1);
    const duplicate = events.create('message.delta', { messageId: 'm1', delta: 'c' });
    store.dispatch(duplicate);
    store.dispatch(duplicate);
    expect(listener).toHaveBeenCalledTimes(2);
    unsubscribe();
    store.dispatch(events.create('message.delta', { messageId: 'm1', delta: 'd' }));
    expect(listener).toHaveBeenCalledTimes(2);
  });

  it('stops every actor on destroy and refuses further events', () => {
    const inspect = vi.fn();
    const { store, events } = startedStore({ inspect });
    store.dispatch(events.create('message.started', { messageId: 'm1', role: 'assistant' }));
    const listener = vi.fn();
    store.subscribe(listener);
    store.destroy();
    expect(() => store.dispatch(events.create('message.delta', { messageId: 'm1', delta: 'x' }))).toThrow(AgentError);
    expect(listener).not.toHaveBeenCalled();
    expect(inspect.mock.calls.some(([event]) => event.type === '@xstate.actor')).toBe(true);
    expect(store.getSnapshot().messages[key('r1', 'm1')]?.status).toBe('streaming');
  });
});

describe('createAgentStore: commands', () => {
  function approvalStore(now = () => 0) {
    const { store, events } = startedStore({ now });
    store.batch([
      events.create('approval.requested', { approvalId: 'a1', editable: false, version: 3, expiresAt: 100 }),
      events.create('tool.requested', { toolCallId: 't1', name: 'x' }),
      events.create('tool.failed', { toolCallId: 't1', error: { message: 'timeout', retryable: true } }),
      events.create('tool.requested', { toolCallId: 't2', name: 'y' }),
      events.create('tool.failed', { toolCallId: 't2', error: { message: 'bad input' } }),
    ]);
    const commands = createAgentCommandFactory({ sessionId: 's1', runId: 'r1' });
    return { store, events, commands };
  }

  it('answers can() from the machines, with every approval guard', () => {
    let clock = 0;
    const { store, commands } = approvalStore(() => clock);
    expect(
      store.can(commands.create('approval.resolve', { approvalId: 'a1', decision: 'approved', expectedVersion: 3 })),
    ).toBe(true);
    expect(
      store.can(commands.create('approval.resolve', { approvalId: 'a1', decision: 'approved', expectedVersion: 2 })),
    ).toBe(false);
    expect(store.can(commands.create('approval.resolve', { approvalId: 'a1', decision: 'modified' }))).toBe(false);
    expect(store.can(commands.create('approval.resolve', { approvalId: 'zz', decision: 'approved' }))).toBe(false);
    // Expiry is the runtime's to decide: past expiresAt the decision is still sent.
    clock = 100;
    expect(store.can(commands.create('approval.resolve', { approvalId: 'a1', decision: 'approved' }))).toBe(true);
    expect(store.can(commands.create('tool.retry', { toolCallId: 't1' }))).toBe(true);
    expect(store.can(commands.create('tool.retry', { toolCallId: 't2' }))).toBe(false);
    expect(store.can(commands.create('run.cancel', {}))).toBe(true);
    expect(store.can({ type: 'run.cancel' } as never)).toBe(false);
  });

  it('refuses a second submission while one is in flight, and never changes AgentState', () => {
    const { store, commands } = approvalStore();
    const before = store.getSnapshot();
    const approve = commands.create('approval.resolve', { approvalId: 'a1', decision: 'approved' });
    expect(store.submit(approve)).toBe(true);
    expect(store.can(commands.create('approval.resolve', { approvalId: 'a1', decision: 'rejected' }))).toBe(false);
    expect(store.submit(approve)).toBe(false);
    const retry = commands.create('tool.retry', { toolCallId: 't1' });
    expect(store.submit(retry)).toBe(true);
    expect(store.submit(commands.create('tool.retry', { toolCallId: 't1' }))).toBe(false);
    store.settle(retry);
    expect(store.can(retry)).toBe(true);
    const cancel = commands.create('run.cancel', {});
    expect(store.submit(cancel)).toBe(true);
    expect(store.can(cancel)).toBe(false);
    expect(store.getSnapshot()).toBe(before);
  });

  it('refuses every command once the run has ended', () => {
    const { store, events, commands } = approvalStore();
    store.dispatch(events.create('run.cancelled', { reason: 'user' }));
    expect(store.can(commands.create('run.cancel', {}))).toBe(false);
    expect(store.can(commands.create('tool.retry', { toolCallId: 't1' }))).toBe(false);
    expect(store.can(commands.create('approval.resolve', { approvalId: 'a1', decision: 'approved' }))).toBe(false);
  });
});

/** The own entry under the key `__proto__`, which property access would not read. */
function ownProtoEntry<Value>(record: Record<string, Value>): Value | undefined {
  return Object.getOwnPropertyDescriptor(record, '__proto__')?.value;
}

describe('createAgentStore: reset', () => {
  it('takes a state parseAgentState returned as it is, and validates and copies any other', () => {
    const events = runEvents('r1');
    const source = createAgentStore();
    source.batch([
      events.create('run.started', {}),
      events.create('message.started', { messageId: 'm', role: 'user', content: 'Hi' }),
    ]);
    const text = JSON.stringify(source.getSnapshot());
    const parsed = parseAgentState(JSON.parse(text));
    expect(isParsedAgentState(parsed)).toBe(true);
    const store = createAgentStore();
    store.reset(parsed);
    expect(store.getSnapshot()).toBe(parsed);
    const raw = JSON.parse(text);
    expect(isParsedAgentState(raw)).toBe(false);
    store.reset(raw);
    expect(store.getSnapshot()).not.toBe(raw);
    expect(store.getSnapshot()).toEqual(parsed);
    raw.runs.r1.status = 'failed';
    expect(store.getSnapshot().runs.r1?.status).toBe('running');
  });

  it('rebuilds live actors so the stream continues where the state left off', () => {
    const { store, events } = startedStore();
    store.batch([
      events.create('message.started', { messageId: 'm1', role: 'assistant' }),
      events.create('message.delta', { messageId: 'm1', delta: 'Hel' }),
      events.create('tool.requested', { toolCallId: 't1', name: 'x' }),
      events.create('tool.failed', { toolCallId: 't1', error: { message: 'timeout', retryable: true } }),
    ]);
    const saved = JSON.parse(JSON.stringify(store.getSnapshot()));
    const restored = createAgentStore();
    restored.reset(saved);
    const delta = events.create('message.delta', { messageId: 'm1', delta: 'lo' });
    restored.dispatch(delta);
    restored.dispatch({ ...runEvents('r1').create('message.delta', { messageId: 'm1', delta: 'dup' }), sequence: 3 });
    const state = restored.getSnapshot();
    expect(state.messages[key('r1', 'm1')]?.content).toBe('Hello');
    expect(state.issues).toEqual([]);
    const commands = createAgentCommandFactory({ sessionId: 's1', runId: 'r1' });
    expect(restored.can(commands.create('tool.retry', { toolCallId: 't1' }))).toBe(true);
  });

  it('refuses a malformed state with the path that is wrong', () => {
    const store = createAgentStore();
    const state = store.getSnapshot();
    expect(() => store.reset({ ...state, runs: { r1: { id: 'r2' } } } as never)).toThrow(AgentValidationError);
    try {
      store.reset({
        ...state,
        runs: { r1: { id: 'r1', sessionId: 's', status: 'lost', startedAt: 1, updatedAt: 1 } },
      } as never);
    } catch (error) {
      expect((error as AgentValidationError).failure.path).toBe('runs.r1.status');
    }
    expect(() =>
      store.reset({
        ...state,
        messages: {
          'r9:m': {
            id: 'm',
            key: 'r9:m',
            runId: 'r9',
            sessionId: 's',
            role: 'user',
            content: '',
            status: 'completed',
            createdAt: 1,
            updatedAt: 1,
          },
        },
      }),
    ).toThrow(/runId: names run "r9"/);
  });

  it('checks a run whose id is __proto__, which zod records skip', () => {
    const events = runEvents('__proto__');
    const source = createAgentStore();
    source.batch([
      events.create('run.started', {}),
      events.create('message.started', { messageId: 'm', role: 'user' }),
    ]);
    const saved = JSON.parse(JSON.stringify(source.getSnapshot()));
    expect(Object.hasOwn(saved.runs, '__proto__')).toBe(true);
    const restored = createAgentStore();
    restored.reset(saved);
    expect(ownProtoEntry(restored.getSnapshot().runs)?.status).toBe('running');
    expect(Object.getPrototypeOf(restored.getSnapshot().runs)).toBe(Object.prototype);

    const broken = JSON.parse(JSON.stringify(saved).replace('"status":"running"', '"status":"lost"'));
    let failure: AgentValidationError | undefined;
    try {
      restored.reset(broken);
    } catch (error) {
      failure = error as AgentValidationError;
    }
    expect(failure).toBeInstanceOf(AgentValidationError);
    expect(failure?.failure.path).toBe('runs.__proto__.status');
    // The refused state changed nothing.
    expect(ownProtoEntry(restored.getSnapshot().runs)?.status).toBe('running');
  });
});

describe('an approval still waiting when its run fails or is cancelled', () => {
  // No protocol event cancels an approval, so a runtime that stops a run (a Stop included)
  // has no way to close it first: the terminal closes it, and that breaks no rule.
  for (const terminal of ['run.cancelled', 'run.failed'] as const) {
    it(`is cancelled (run_terminated) by ${terminal}, even in strict mode, without an issue`, () => {
      const store = createAgentStore({ protocolMode: 'strict' });
      const events = runEvents('r1');
      store.dispatch(events.create('run.started', {}));
      store.dispatch(events.create('approval.requested', { approvalId: 'a1', description: 'Deploy?' }));
      store.dispatch(
        terminal === 'run.cancelled'
          ? events.create('run.cancelled', { reason: 'user' })
          : events.create('run.failed', { error: { message: 'upstream closed' } }),
      );
      const state = store.getSnapshot();
      expect(state.runs.r1?.status).toBe(terminal === 'run.cancelled' ? 'cancelled' : 'failed');
      expect(state.approvals[getAgentEntityKey('r1', 'a1')]).toMatchObject({
        status: 'cancelled',
        reason: 'run_terminated',
      });
      expect(state.issues).toEqual([]);
    });
  }

  it('is still an issue when the run completes without resolving it or listing it as pending', () => {
    const store = createAgentStore();
    const events = runEvents('r1');
    store.dispatch(events.create('run.started', {}));
    store.dispatch(events.create('approval.requested', { approvalId: 'a1', description: 'Deploy?' }));
    store.dispatch(events.create('run.completed', {}));
    const state = store.getSnapshot();
    expect(state.approvals[getAgentEntityKey('r1', 'a1')]?.status).toBe('cancelled');
    expect(state.issues.map((issue) => [issue.code, issue.entityId])).toEqual([['active_entities_at_terminal', 'a1']]);
  });
});
