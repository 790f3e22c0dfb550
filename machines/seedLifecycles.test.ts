import { describe, expect, it } from 'vitest';
import { createAgentCommandFactory } from '../protocol/createAgentCommandFactory';
import { getAgentEntityKey } from '../protocol/getAgentEntityKey';
import { runEvents } from '../tests/support/events';
import { createAgentStore } from './createAgentStore';
import { isApprovalExpired, selectPendingInput } from './selectors';

const key = getAgentEntityKey;

function started(protocolMode: 'record' | 'strict' = 'record') {
  const store = createAgentStore({ protocolMode });
  const events = runEvents('r1');
  store.dispatch(events.create('run.started', {}));
  return { store, events };
}

describe('the seed tool lifecycle: requested -> arguments_delta* -> running -> completed | failed | cancelled', () => {
  for (const protocolMode of ['record', 'strict'] as const) {
    it(`accepts tool.running straight after the argument stream and parses the arguments then (${protocolMode})`, () => {
      const { store, events } = started(protocolMode);
      store.batch([
        events.create('tool.requested', { toolCallId: 't1', name: 'search' }),
        events.create('tool.arguments_delta', { toolCallId: 't1', delta: '{"q":' }),
        events.create('tool.arguments_delta', { toolCallId: 't1', delta: '"paris"}' }),
        events.create('tool.running', { toolCallId: 't1' }),
      ]);
      expect(store.getSnapshot().toolCalls[key('r1', 't1')]).toMatchObject({
        status: 'running',
        arguments: '{"q":"paris"}',
        parsedArguments: { q: 'paris' },
      });
      store.batch([
        events.create('tool.completed', { toolCallId: 't1', result: { temperature: 14 } }),
        events.create('run.completed', {}),
      ]);
      const state = store.getSnapshot();
      expect(state.toolCalls[key('r1', 't1')]).toMatchObject({ status: 'completed', result: { temperature: 14 } });
      expect(state.issues).toEqual([]);
      expect(state.runs.r1?.status).toBe('completed');
    });
  }

  it('accepts seed 001 capability example: tool.requested, tool.running, tool.completed', () => {
    const { store, events } = started('strict');
    store.batch([
      events.create('tool.requested', { toolCallId: 't1', name: 'now', arguments: '{}' }),
      events.create('tool.running', { toolCallId: 't1' }),
      events.create('tool.completed', { toolCallId: 't1', result: '12:00' }),
    ]);
    expect(store.getSnapshot().toolCalls[key('r1', 't1')]).toMatchObject({
      status: 'completed',
      parsedArguments: {},
      result: '12:00',
    });
  });

  it('accepts tool.completed and tool.failed straight after the argument stream', () => {
    const { store, events } = started('strict');
    store.batch([
      events.create('tool.requested', { toolCallId: 't1', name: 'a' }),
      events.create('tool.arguments_delta', { toolCallId: 't1', delta: '[1]' }),
      events.create('tool.completed', { toolCallId: 't1', result: 1 }),
      events.create('tool.requested', { toolCallId: 't2', name: 'b' }),
      events.create('tool.arguments_delta', { toolCallId: 't2', delta: '{"x":1}' }),
      events.create('tool.failed', { toolCallId: 't2', error: { message: 'denied', retryable: true } }),
    ]);
    const state = store.getSnapshot();
    expect(state.toolCalls[key('r1', 't1')]).toMatchObject({ status: 'completed', parsedArguments: [1] });
    expect(state.toolCalls[key('r1', 't2')]).toMatchObject({ status: 'failed', parsedArguments: { x: 1 } });
    const commands = createAgentCommandFactory({ sessionId: 's1', runId: 'r1' });
    expect(store.can(commands.create('tool.retry', { toolCallId: 't2' }))).toBe(true);
  });

  it('keeps tool.arguments_completed optional and refuses it once the tool runs', () => {
    const { store, events } = started();
    store.batch([
      events.create('tool.requested', { toolCallId: 't1', name: 'a' }),
      events.create('tool.arguments_completed', { toolCallId: 't1', arguments: '{"a":1}' }),
      events.create('tool.running', { toolCallId: 't1' }),
      events.create('tool.arguments_completed', { toolCallId: 't1' }),
    ]);
    const state = store.getSnapshot();
    expect(state.toolCalls[key('r1', 't1')]).toMatchObject({ status: 'running', parsedArguments: { a: 1 } });
    expect(state.issues.map((issue) => [issue.code, issue.state])).toEqual([['invalid_transition', 'running']]);
  });
});

describe('approvals: optional fields, and the runtime judges', () => {
  const commands = createAgentCommandFactory({ sessionId: 's1', runId: 'r1' });

  it('lets an approval that does not say editable: false be resolved as modified', () => {
    const { store, events } = started();
    store.batch([
      events.create('approval.requested', { approvalId: 'a1' }),
      events.create('approval.requested', { approvalId: 'a2', editable: true }),
      events.create('approval.requested', { approvalId: 'a3', editable: false }),
    ]);
    const modify = (approvalId: string) => commands.create('approval.resolve', { approvalId, decision: 'modified' });
    expect(store.can(modify('a1'))).toBe(true);
    expect(store.can(modify('a2'))).toBe(true);
    expect(store.can(modify('a3'))).toBe(false);
    expect(store.getSnapshot().approvals[key('r1', 'a1')]).not.toHaveProperty('editable');
    expect(store.getSnapshot().approvals[key('r1', 'a3')]?.editable).toBe(false);
  });

  it('does not refuse a decision because the local clock passed expiresAt; the runtime may answer expired', () => {
    let clock = 0;
    const store = createAgentStore({ now: () => clock });
    const events = runEvents('r1');
    store.batch([
      events.create('run.started', {}),
      events.create('approval.requested', { approvalId: 'a1', expiresAt: 50 }),
    ]);
    clock = 1_000;
    const approval = store.getSnapshot().approvals[key('r1', 'a1')];
    expect(approval && [isApprovalExpired(approval, 49), isApprovalExpired(approval, clock)]).toEqual([false, true]);
    expect(store.can(commands.create('approval.resolve', { approvalId: 'a1', decision: 'approved' }))).toBe(true);
    store.dispatch(events.create('approval.resolved', { approvalId: 'a1', decision: 'expired' }));
    expect(store.getSnapshot().approvals[key('r1', 'a1')]).toMatchObject({ status: 'resolved', decision: 'expired' });
  });
});

describe('artifacts: optional version and media type', () => {
  it('accepts artifact.created without mediaType and artifact.updated without version', () => {
    const { store, events } = started('strict');
    store.batch([
      events.create('artifact.created', { artifactId: 'f1', title: 'Plan' }),
      events.create('artifact.updated', { artifactId: 'f1', content: 'draft 1' }),
      events.create('artifact.updated', { artifactId: 'f1', version: 4, content: 'draft 2' }),
      events.create('artifact.updated', { artifactId: 'f1', content: 'draft 3' }),
    ]);
    const artifact = store.getSnapshot().artifacts[key('r1', 'f1')];
    expect(artifact).toMatchObject({ status: 'open', version: 4, content: 'draft 3', title: 'Plan' });
    expect(artifact).not.toHaveProperty('mediaType');
  });

  it('still refuses a version that does not increase', () => {
    const { store, events } = started();
    store.batch([
      events.create('artifact.created', { artifactId: 'f1', version: 2 }),
      events.create('artifact.updated', { artifactId: 'f1', version: 2, content: 'x' }),
    ]);
    const state = store.getSnapshot();
    expect(state.issues.map((issue) => [issue.code, issue.entityId])).toEqual([['invalid_transition', 'f1']]);
    expect(state.artifacts[key('r1', 'f1')]).not.toHaveProperty('content');
  });
});

describe('a run that ends waiting for input', () => {
  function waitingStore(protocolMode: 'record' | 'strict' = 'record') {
    const { store, events } = started(protocolMode);
    store.batch([
      events.create('message.started', { messageId: 'm1', role: 'assistant' }),
      events.create('message.completed', { messageId: 'm1', content: 'Checking.' }),
      events.create('tool.requested', { toolCallId: 't1', name: 'get_weather', messageId: 'm1' }),
      events.create('tool.arguments_delta', { toolCallId: 't1', delta: '{"city":"Paris"}' }),
      events.create('tool.requested', { toolCallId: 't2', name: 'open_tab', arguments: '{}' }),
      events.create('tool.running', { toolCallId: 't2' }),
      events.create('approval.requested', { approvalId: 'a1', toolCallId: 't1' }),
      events.create('run.completed', { pendingToolCallIds: ['t1', 't2'], pendingApprovalIds: ['a1'] }),
    ]);
    return { store, events };
  }

  for (const protocolMode of ['record', 'strict'] as const) {
    it(`lets the listed entities settle after the terminal, and nothing else (${protocolMode})`, () => {
      const { store, events } = waitingStore(protocolMode);
      let state = store.getSnapshot();
      expect(state.issues).toEqual([]);
      expect(state.runs.r1).toMatchObject({ status: 'completed', pendingToolCallIds: ['t1', 't2'] });
      expect(state.toolCalls[key('r1', 't1')]).toMatchObject({
        status: 'awaiting_execution',
        parsedArguments: { city: 'Paris' },
      });
      // A running tool listed as pending stays running until its result arrives.
      expect(state.toolCalls[key('r1', 't2')]?.status).toBe('running');
      const pending = selectPendingInput(state, 'r1');
      expect([pending.toolCalls.map((call) => call.id), pending.approvals.map((approval) => approval.id)]).toEqual([
        ['t1', 't2'],
        ['a1'],
      ]);
      const commands = createAgentCommandFactory({ sessionId: 's1', runId: 'r1' });
      expect(store.can(commands.create('approval.resolve', { approvalId: 'a1', decision: 'approved' }))).toBe(true);
      expect(store.can(commands.create('run.cancel', {}))).toBe(false);
      store.batch([
        events.create('approval.resolved', { approvalId: 'a1', decision: 'approved' }),
        events.create('tool.running', { toolCallId: 't1' }),
        events.create('tool.completed', { toolCallId: 't1', result: { temperature: 14 } }),
      ]);
      state = store.getSnapshot();
      expect(state.approvals[key('r1', 'a1')]).toMatchObject({ status: 'resolved', decision: 'approved' });
      expect(state.toolCalls[key('r1', 't1')]).toMatchObject({ status: 'completed', result: { temperature: 14 } });
      expect(selectPendingInput(store.getSnapshot(), 'r1').toolCalls.map((call) => call.id)).toEqual(['t2']);
      store.dispatch(events.create('tool.completed', { toolCallId: 't2', result: 'opened' }));
      expect(store.getSnapshot().toolCalls[key('r1', 't2')]?.status).toBe('completed');
      expect(selectPendingInput(store.getSnapshot(), 'r1')).toEqual({ toolCalls: [], approvals: [] });
      expect(store.getSnapshot().issues).toEqual([]);
    });
  }

  it('records terminal_run for anything but the listed entities, and for those once they settled', () => {
    const { store, events } = waitingStore();
    store.batch([
      events.create('message.delta', { messageId: 'm9', delta: 'late' }),
      events.create('tool.requested', { toolCallId: 't3', name: 'x' }),
      events.create('tool.completed', { toolCallId: 't1', result: 1 }),
      events.create('tool.completed', { toolCallId: 't1', result: 2 }),
    ]);
    const state = store.getSnapshot();
    expect(state.issues.map((issue) => [issue.code, issue.state])).toEqual([
      ['terminal_run', 'waiting_for_input'],
      ['terminal_run', 'waiting_for_input'],
      // t1 has settled: the run still waits, but only for t2 and a1.
      ['terminal_run', 'waiting_for_input'],
    ]);
    expect(state.toolCalls[key('r1', 't1')]?.result).toBe(1);
    const strict = waitingStore('strict');
    expect(() =>
      strict.store.dispatch(strict.events.create('message.started', { messageId: 'm2', role: 'assistant' })),
    ).toThrow(/after run "r1" completed, waiting only for/);
  });

  it('ends waiting once every listed entity settled: later events for them are terminal_run', () => {
    const { store, events } = waitingStore();
    store.batch([
      events.create('tool.completed', { toolCallId: 't1', result: 1 }),
      events.create('tool.cancelled', { toolCallId: 't2' }),
      events.create('approval.resolved', { approvalId: 'a1', decision: 'rejected' }),
      events.create('approval.resolved', { approvalId: 'a1', decision: 'approved' }),
    ]);
    const state = store.getSnapshot();
    expect(state.issues.map((issue) => [issue.code, issue.state])).toEqual([['terminal_run', 'completed']]);
    expect(state.approvals[key('r1', 'a1')]?.decision).toBe('rejected');
  });

  it('closes every entity not listed when the run ends, and reports those it cannot leave pending', () => {
    const { store, events } = started();
    store.batch([
      events.create('message.started', { messageId: 'm1', role: 'assistant' }),
      events.create('tool.requested', { toolCallId: 't1', name: 'a', arguments: '{}' }),
      events.create('tool.completed', { toolCallId: 't1', result: 1 }),
      events.create('tool.requested', { toolCallId: 't2', name: 'b', arguments: '{}' }),
      events.create('run.completed', { pendingToolCallIds: ['t1', 'tX'] }),
    ]);
    const state = store.getSnapshot();
    expect(state.issues.map((issue) => [issue.code, issue.entityId])).toEqual([
      ['invalid_transition', 't1'],
      ['missing_entity', 'tX'],
      ['active_entities_at_terminal', 'm1'],
      ['active_entities_at_terminal', 't2'],
    ]);
    expect(state.messages[key('r1', 'm1')]?.status).toBe('cancelled');
    expect(state.toolCalls[key('r1', 't2')]?.status).toBe('cancelled');
    // Nothing left to wait for: the run is over.
    store.dispatch(events.create('tool.completed', { toolCallId: 't2', result: 1 }));
    expect(store.getSnapshot().issues.at(-1)).toMatchObject({ code: 'terminal_run', state: 'completed' });
  });

  it('lets go of a listed tool that failed: the run waits only for what is still pending, restored or not', () => {
    const { store, events } = waitingStore();
    store.dispatch(events.create('tool.failed', { toolCallId: 't1', error: { message: 'busy', retryable: true } }));
    const restored = createAgentStore();
    restored.reset(JSON.parse(JSON.stringify(store.getSnapshot())));
    const late = events.create('tool.arguments_delta', { toolCallId: 't1', delta: 'x' });
    store.dispatch(late);
    restored.dispatch(late);
    expect(store.getSnapshot().issues.map((issue) => [issue.code, issue.state])).toEqual([
      ['terminal_run', 'waiting_for_input'],
    ]);
    expect(restored.getSnapshot()).toEqual(store.getSnapshot());
    expect(selectPendingInput(store.getSnapshot(), 'r1').toolCalls.map((call) => call.id)).toEqual(['t2']);
  });

  it('restores a waiting run from its snapshot and goes on as a full replay does', () => {
    const { store, events } = waitingStore();
    const restored = createAgentStore();
    restored.reset(JSON.parse(JSON.stringify(store.getSnapshot())));
    const rest = [
      events.create('tool.completed', { toolCallId: 't1', result: 1 }),
      events.create('message.started', { messageId: 'm2', role: 'assistant' }),
      events.create('approval.resolved', { approvalId: 'a1', decision: 'approved' }),
      events.create('tool.failed', { toolCallId: 't2', error: { message: 'closed' } }),
      events.create('tool.completed', { toolCallId: 't2', result: 1 }),
    ];
    store.batch(rest);
    restored.batch(rest);
    expect(restored.getSnapshot()).toEqual(store.getSnapshot());
    expect(store.getSnapshot().issues.map((issue) => issue.code)).toEqual(['terminal_run', 'terminal_run']);
  });
});
