import { describe, expect, it } from 'vitest';
import { runEvents } from '../../tests/support/events';
import { restoreStore } from '../../tests/support/restoredStore';
import { type AgentState, createEmptyAgentState } from '../agentState';
import { createAgentStore } from '../createAgentStore';
import { admitEvent } from './admitEvent';
import { DeltaCoalescer } from './DeltaCoalescer';
import type { StoreCore } from './storeCore';

function coreOf(state: AgentState): StoreCore {
  return {
    strict: false,
    patchLimits: undefined,
    ...restoreStore(state),
    deltas: new DeltaCoalescer(() => {}),
    raised: [],
  };
}

/**
 * r1 running (last sequence 3, message m1 streaming), r2 completed, r3 completed waiting
 * on tool call t1, all in session s1.
 */
function replayedCore(): StoreCore {
  const store = createAgentStore();
  const r1 = runEvents('r1');
  const r2 = runEvents('r2');
  const r3 = runEvents('r3');
  store.batch([
    r1.create('run.started', {}),
    r1.create('message.started', { messageId: 'm1', role: 'assistant' }),
    r1.create('message.delta', { messageId: 'm1', delta: 'Hi' }),
    r2.create('run.started', {}),
    r2.create('run.completed', {}),
    r3.create('run.started', {}),
    r3.create('tool.requested', { toolCallId: 't1', name: 'search', arguments: '{}' }),
    r3.create('tool.arguments_completed', { toolCallId: 't1' }),
    r3.create('run.completed', { pendingToolCallIds: ['t1'] }),
  ]);
  const state = store.getSnapshot();
  expect(state.issues).toEqual([]);
  expect(state.lastSequenceByRun).toEqual({ r1: 3, r2: 2, r3: 4 });
  return coreOf(state);
}

describe('admitEvent', () => {
  it('absorbs an id the run has seen, before any other check', () => {
    const core = replayedCore();
    core.runs.remember(core.runs.getOrCreate('r1'), 'seen-id', undefined);
    const next = runEvents('r1', 's1', 3).create('message.delta', { messageId: 'm1', delta: 'x' });
    expect(admitEvent(core, { ...next, eventId: 'seen-id' })).toEqual({ kind: 'absorbed' });
    // Even an invalid event with that identity is a redelivery.
    expect(admitEvent(core, { runId: 'r1', eventId: 'seen-id', type: 'nonsense' })).toEqual({ kind: 'absorbed' });
  });

  it('absorbs a new id whose sequence the restore point covers', () => {
    const core = replayedCore();
    const events = runEvents('r1', 's1', 1);
    const atTwo = { ...events.create('message.delta', { messageId: 'm1', delta: 'x' }), eventId: 'late-2' };
    const atThree = { ...events.create('message.delta', { messageId: 'm1', delta: 'y' }), eventId: 'late-3' };
    expect(admitEvent(core, atTwo)).toEqual({ kind: 'absorbed' });
    expect(admitEvent(core, atThree)).toEqual({ kind: 'absorbed' });
  });

  it('refuses an invalid event with identity, remembering it without moving the sequence', () => {
    const core = replayedCore();
    const input = { runId: 'r1', eventId: 'bad-1', type: 'message.delta', sequence: 9 };
    const outcome = admitEvent(core, input);
    expect(outcome).toMatchObject({
      kind: 'refused',
      issue: { code: 'invalid_event', runId: 'r1', event: input },
      remember: { runId: 'r1', eventId: 'bad-1', advance: false },
    });
    // A run not heard of yet is remembered all the same.
    expect(admitEvent(core, { runId: 'r9', eventId: 'bad-2', type: 'x' })).toMatchObject({
      kind: 'refused',
      issue: { code: 'invalid_event', runId: 'r9' },
      remember: { runId: 'r9', eventId: 'bad-2', advance: false },
    });
  });

  it('refuses an invalid event without identity, with nothing to remember', () => {
    const core = replayedCore();
    const outcome = admitEvent(core, { type: 'message.delta', runId: '' });
    expect(outcome.kind).toBe('refused');
    expect(outcome).not.toHaveProperty('remember');
    expect(outcome).toMatchObject({ issue: { code: 'invalid_event', event: { type: 'message.delta', runId: '' } } });
    expect(outcome).not.toHaveProperty('issue.runId');
    expect(admitEvent(core, 42)).toMatchObject({ kind: 'refused', issue: { code: 'invalid_event', event: 42 } });
  });

  it('refuses a sequence above the restore point that is not above the last one', () => {
    const core = replayedCore();
    core.runs.remember(core.runs.getOrCreate('r1'), 'r1-e5', 5);
    const event = runEvents('r1', 's1', 3).create('message.delta', { messageId: 'm1', delta: 'x' });
    expect(event.sequence).toBe(4);
    expect(admitEvent(core, event)).toMatchObject({
      kind: 'refused',
      issue: { code: 'invalid_sequence', runId: 'r1', event },
      remember: { runId: 'r1', eventId: 'r1-e4', advance: false },
    });
  });

  it('refuses an event of another session without moving the run sequence', () => {
    const core = replayedCore();
    const event = runEvents('r1', 's2', 3).create('message.started', { messageId: 'm2', role: 'assistant' });
    expect(admitEvent(core, event)).toMatchObject({
      kind: 'refused',
      issue: { code: 'session_mismatch', runId: 'r1' },
      remember: { runId: 'r1', eventId: 'r1-e4', advance: false },
    });
  });

  it('refuses an event of a run that has not started, heard of or not', () => {
    const core = replayedCore();
    const event = runEvents('r9').create('message.started', { messageId: 'm1', role: 'assistant' });
    expect(admitEvent(core, event)).toMatchObject({
      kind: 'refused',
      issue: { code: 'missing_run', runId: 'r9' },
      remember: { runId: 'r9', eventId: 'r9-e1', advance: false },
    });
    core.runs.getOrCreate('r8');
    const unknown = runEvents('r8').create('run.completed', {});
    expect(admitEvent(core, unknown)).toMatchObject({
      kind: 'refused',
      issue: { code: 'missing_run', runId: 'r8' },
      remember: { runId: 'r8', eventId: 'r8-e1', advance: false },
    });
  });

  it('refuses an event of an ended run, moving its sequence', () => {
    const core = replayedCore();
    const event = runEvents('r2', 's1', 2).create('message.started', { messageId: 'm1', role: 'assistant' });
    expect(admitEvent(core, event)).toMatchObject({
      kind: 'refused',
      issue: { code: 'terminal_run', runId: 'r2', state: 'completed' },
      remember: { runId: 'r2', eventId: 'r2-e3', advance: true },
    });
  });

  it('refuses what a waiting run does not wait on, and admits what it does', () => {
    const core = replayedCore();
    const events = runEvents('r3', 's1', 4);
    const other = events.create('message.started', { messageId: 'm1', role: 'assistant' });
    expect(admitEvent(core, other)).toMatchObject({
      kind: 'refused',
      issue: { code: 'terminal_run', runId: 'r3', state: 'waiting_for_input' },
      remember: { runId: 'r3', eventId: 'r3-e5', advance: true },
    });
    const result = events.create('tool.completed', { toolCallId: 't1', result: 1 });
    expect(admitEvent(core, result)).toEqual({ kind: 'admitted', event: result, run: core.runs.get('r3') });
  });

  it('admits the start of a new run with no handle, and an event of a running run with its handle', () => {
    const core = replayedCore();
    const start = runEvents('r7').create('run.started', {});
    expect(admitEvent(core, start)).toEqual({ kind: 'admitted', event: start, run: undefined });
    const delta = runEvents('r1', 's1', 3).create('message.delta', { messageId: 'm1', delta: 'x' });
    const outcome = admitEvent(core, delta);
    expect(outcome).toEqual({ kind: 'admitted', event: delta, run: core.runs.get('r1') });
    expect(outcome.kind === 'admitted' && outcome.run?.status).toBe('running');
  });

  it('decides without changing the store', () => {
    const core = coreOf(createEmptyAgentState());
    const before = core.projection.read();
    admitEvent(core, runEvents('r9').create('message.started', { messageId: 'm1', role: 'assistant' }));
    admitEvent(core, { runId: 'r9', eventId: 'x', type: 'x' });
    expect(core.runs.get('r9')).toBeUndefined();
    expect(core.projection.read()).toBe(before);
  });

  it('skips the schema check for an event the runner admitted', () => {
    const core = coreOf(createEmptyAgentState());
    const event = runEvents('r1').create('run.started', { title: 42 as unknown as string });
    expect(admitEvent(core, event)).toMatchObject({ kind: 'refused', issue: { code: 'invalid_event' } });
    expect(admitEvent(core, event, true)).toEqual({ kind: 'admitted', event, run: undefined });
  });
});
