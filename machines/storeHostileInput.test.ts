import { describe, expect, it, vi } from 'vitest';
import { AgentProtocolError, AgentValidationError } from '../protocol/errors';
import { getAgentEntityKey } from '../protocol/getAgentEntityKey';
import { runEvents } from '../tests/support/events';
import type { AgentState } from './agentState';
import { createAgentStore } from './createAgentStore';

const key = getAgentEntityKey;

function replay(events: readonly unknown[]): AgentState {
  const store = createAgentStore();
  store.batch(events);
  return store.getSnapshot();
}

function restoreThenApply(first: readonly unknown[], rest: readonly unknown[]): AgentState {
  const saved = JSON.parse(JSON.stringify(replay(first)));
  const store = createAgentStore();
  store.reset(saved);
  store.batch(rest);
  return store.getSnapshot();
}

describe('shared state patches from a remote agent', () => {
  it('refuses a move into its own child, which would make the state cyclic', () => {
    const store = createAgentStore();
    const events = runEvents('r1');
    store.batch([
      events.create('run.started', {}),
      events.create('state.snapshot', { snapshot: { a: 1 } }),
      events.create('state.delta', { patch: [{ op: 'move', from: '', path: '/child' }] }),
    ]);
    const state = store.getSnapshot();
    expect(state.state.s1).toEqual({ a: 1 });
    expect(state.issues.map((issue) => issue.code)).toEqual(['invalid_patch']);
    expect(state.issues[0]?.message).toMatch(/prefix/);
    expect(JSON.parse(JSON.stringify(state))).toEqual(state);
  });

  it('refuses a patch that would grow the state past the limit, naming it', () => {
    const store = createAgentStore({ statePatchLimits: { maxStateSize: 10_000 } });
    const events = runEvents('r1');
    const copies = Array.from({ length: 20 }, (_, index) => ({ op: 'copy' as const, from: '', path: `/c${index}` }));
    store.batch([
      events.create('run.started', {}),
      events.create('state.snapshot', { snapshot: { text: 'x'.repeat(100) } }),
      events.create('state.delta', { patch: copies }),
    ]);
    const state = store.getSnapshot();
    expect(state.state.s1).toEqual({ text: 'x'.repeat(100) });
    expect(state.issues[0]).toMatchObject({ code: 'invalid_patch' });
    expect(state.issues[0]?.message).toMatch(/10000|10,000/);
  });

  it('refuses a patch with more operations than allowed', () => {
    const store = createAgentStore({ statePatchLimits: { maxOperations: 3 }, protocolMode: 'strict' });
    const events = runEvents('r1');
    store.batch([events.create('run.started', {}), events.create('state.snapshot', { snapshot: {} })]);
    const patch = Array.from({ length: 4 }, (_, index) => ({ op: 'add' as const, path: `/k${index}`, value: index }));
    expect(() => store.dispatch(events.create('state.delta', { patch }))).toThrow(AgentProtocolError);
    expect(store.getSnapshot().state.s1).toEqual({});
  });
});

describe('redeliveries are absorbed, whatever the first delivery met', () => {
  it('records a repeated run.started once, and absorbs its redelivery', () => {
    const events = runEvents('r1');
    const again = runEvents('r1', 's1', 10).create('run.started', {});
    const store = createAgentStore();
    store.batch([events.create('run.started', {}), again]);
    const listener = vi.fn();
    store.subscribe(listener);
    const before = store.getSnapshot();
    store.dispatch(again);
    expect(listener).not.toHaveBeenCalled();
    expect(store.getSnapshot()).toBe(before);
    expect(before.issues.map((issue) => issue.code)).toEqual(['duplicate_entity']);
  });

  it('records an event of another session once, and absorbs its redelivery', () => {
    const store = createAgentStore();
    const events = runEvents('r1');
    const foreign = runEvents('r1', 's2', 20).create('message.started', { messageId: 'm1', role: 'assistant' });
    store.batch([events.create('run.started', {}), foreign, foreign]);
    const state = store.getSnapshot();
    expect(state.issues.map((issue) => issue.code)).toEqual(['session_mismatch']);
    expect(state.messages).toEqual({});
    expect(state.lastSequenceByRun.r1).toBe(1);
  });
});

describe('restore equals replay, redeliveries included', () => {
  it('absorbs after a restore the redeliveries that a replay absorbs', () => {
    const events = runEvents('r1');
    const other = runEvents('r2');
    const refused = [
      other.create('message.started', { messageId: 'm1', role: 'assistant' }), // missing_run
      { ...events.create('message.delta', { messageId: 'm1', delta: 'x' }), payload: { messageId: 'm1', delta: 7 } }, // invalid_event
    ];
    const started = events.create('run.started', {});
    const foreign = runEvents('r1', 's2', 50).create('task.created', { taskId: 'k1' }); // session_mismatch
    const duplicateStart = runEvents('r1', 's1', 60).create('run.started', {}); // duplicate_entity
    const first = [...refused, started, foreign, duplicateStart];
    const later = runEvents('r1', 's1', 100).create('message.started', { messageId: 'm2', role: 'assistant' });
    const rest = [...first, later, ...first];
    const full = replay([...first, ...rest]);
    expect(full.issues.map((issue) => issue.code)).toEqual([
      'missing_run',
      'invalid_event',
      'session_mismatch',
      'duplicate_entity',
    ]);
    expect(restoreThenApply(first, rest)).toEqual(full);
  });
});

describe('reset takes a clean, validated copy', () => {
  function savedState(): AgentState {
    const events = runEvents('r1');
    return JSON.parse(
      JSON.stringify(
        replay([
          events.create('run.started', {}),
          events.create('state.snapshot', { snapshot: { cart: ['apple'] } }),
          events.create('tool.requested', { toolCallId: 't1', name: 'x', arguments: '{}' }),
          events.create('tool.completed', { toolCallId: 't1', result: { items: [1] } }),
        ]),
      ),
    );
  }

  it('does not adopt the caller object: changing it later changes nothing', () => {
    const saved = savedState();
    const store = createAgentStore();
    store.reset(saved);
    (saved.state.s1 as { cart: string[] }).cart.push('pear');
    const toolCall = saved.toolCalls[key('r1', 't1')] as { result: { items: number[] } };
    toolCall.result.items.push(2);
    saved.runs.r1 = { ...(saved.runs.r1 as AgentState['runs'][string]), status: 'failed' };
    const state = store.getSnapshot();
    expect(state.state.s1).toEqual({ cart: ['apple'] });
    expect(state.toolCalls[key('r1', 't1')]?.result).toEqual({ items: [1] });
    expect(state.runs.r1?.status).toBe('running');
  });

  it('drops fields the schema does not know', () => {
    const saved = savedState() as AgentState & Record<string, unknown>;
    saved.extra = 1;
    (saved.runs.r1 as unknown as Record<string, unknown>).secret = 'x';
    (saved.toolCalls[key('r1', 't1')] as unknown as Record<string, unknown>).injected = true;
    const store = createAgentStore();
    store.reset(saved);
    const state = store.getSnapshot() as unknown as Record<string, unknown>;
    expect(state).not.toHaveProperty('extra');
    expect(store.getSnapshot().runs.r1).not.toHaveProperty('secret');
    expect(store.getSnapshot().toolCalls[key('r1', 't1')]).not.toHaveProperty('injected');
  });

  it.each([
    ['a cycle', (state: AgentState) => Object.assign(state.state, { s1: state.state })],
    ['a BigInt', (state: AgentState) => Object.assign(state.state, { s1: 10n })],
    ['a Date', (state: AgentState) => Object.assign(state.state, { s1: new Date(0) })],
    ['a Map', (state: AgentState) => Object.assign(state.state, { s1: new Map() })],
    ['a function', (state: AgentState) => Object.assign(state.state, { s1: () => 1 })],
    ['NaN', (state: AgentState) => Object.assign(state.state, { s1: Number.NaN })],
    [
      'nesting 100,000 levels deep',
      (state: AgentState) => {
        let deep: unknown = 1;
        for (let level = 0; level < 100_000; level += 1) deep = { deep };
        Object.assign(state.state, { s1: deep });
      },
    ],
  ])('refuses %s, naming where, and leaves the store as it was', (_name, corrupt) => {
    const saved = savedState();
    corrupt(saved);
    const store = createAgentStore();
    const before = store.getSnapshot();
    let error: unknown;
    try {
      store.reset(saved);
    } catch (caught) {
      error = caught;
    }
    expect(AgentValidationError.isInstance(error)).toBe(true);
    expect((error as AgentValidationError).failure.path).toMatch(/^state\.s1/);
    expect(store.getSnapshot()).toBe(before);
  });

  it('refuses an entity still active in a run that has ended', () => {
    const events = runEvents('r1');
    const saved = replay([
      events.create('run.started', {}),
      events.create('message.started', { messageId: 'm1', role: 'assistant' }),
      events.create('message.completed', { messageId: 'm1' }),
      events.create('run.completed', {}),
    ]);
    const corrupt = JSON.parse(JSON.stringify(saved)) as AgentState;
    (corrupt.messages[key('r1', 'm1')] as { status: string }).status = 'streaming';
    expect(() => createAgentStore().reset(corrupt)).toThrow(
      `Invalid agent state: messages.${key('r1', 'm1')}.status: is streaming, but its run completed without waiting on it`,
    );
  });
});

describe('extensions and activities', () => {
  it('keeps extension events in order per run and activities with their patches, through a checkpoint', () => {
    const events = runEvents('r1');
    const first = [
      events.create('run.started', {}),
      events.create('extension.emitted', { name: 'agui.custom', data: { name: 'highlight', value: 3 } }),
      events.create('activity.snapshot', { activityId: 'p1', activityType: 'PLAN', content: { steps: ['a'] } }),
    ];
    const rest = [
      events.create('activity.delta', { activityId: 'p1', patch: [{ op: 'add', path: '/steps/-', value: 'b' }] }),
      events.create('activity.snapshot', { activityId: 'p1', activityType: 'PLAN', content: {}, replace: false }),
      events.create('extension.emitted', { name: 'agui.raw', data: { event: { kind: 'x' } } }),
      events.create('activity.delta', { activityId: 'zz', patch: [] }),
      events.create('run.completed', {}),
    ];
    const state = replay([...first, ...rest]);
    expect(state.extensions.r1?.map((record) => [record.name, record.data])).toEqual([
      ['agui.custom', { name: 'highlight', value: 3 }],
      ['agui.raw', { event: { kind: 'x' } }],
    ]);
    expect(state.activities[key('r1', 'p1')]).toMatchObject({ activityType: 'PLAN', content: { steps: ['a', 'b'] } });
    expect(state.issues.map((issue) => [issue.code, issue.entityId])).toEqual([['missing_entity', 'zz']]);
    expect(restoreThenApply(first, rest)).toEqual(state);
  });
});

describe('invalid events the store cannot copy', () => {
  it('records a BigInt protocol version or type as invalid_event instead of throwing', () => {
    const store = createAgentStore();
    const event = runEvents('r1').create('run.started', {});
    store.batch([
      { ...event, protocolVersion: 10n },
      { ...event, eventId: 'other', type: 10n },
    ]);
    const issues = store.getSnapshot().issues;
    expect(issues.map((issue) => issue.code)).toEqual(['invalid_event', 'invalid_event']);
    expect(issues[0]?.message).toMatch(/^Invalid event: protocolVersion: expected one of \["0.1"\], got 10n/);
    expect(issues[0]?.event).toEqual({
      type: 'run.started',
      eventId: 'r1-e1',
      sessionId: 's1',
      runId: 'r1',
      sequence: 1,
      timestamp: 1000,
    });
  });

  it('keeps only the identity of an event nested too deep, so the state can still be checkpointed and restored', () => {
    const store = createAgentStore();
    const events = runEvents('r1');
    let deep: unknown = 1;
    for (let level = 0; level < 5_000; level += 1) deep = { deep };
    const tooDeep = events.create('tool.requested', { toolCallId: 't1', name: 'x' });
    store.batch([events.create('run.started', {}), { ...tooDeep, meta: { deep } }]);
    const saved = JSON.parse(JSON.stringify(store.getSnapshot()));
    expect(saved.issues[0]).toMatchObject({ code: 'invalid_event', event: { eventId: tooDeep.eventId, runId: 'r1' } });
    const restored = createAgentStore();
    restored.reset(saved);
    restored.dispatch({ ...tooDeep, meta: { deep } });
    expect(restored.getSnapshot()).toEqual(store.getSnapshot());
  });
});
