import { describe, expect, it } from 'vitest';
import { createEmptyAgentState } from '../agentState';
import { AgentStateProjection } from '../agentStateProjection';
import { RunRegistry } from './RunRegistry';

describe('RunRegistry', () => {
  it('makes an unknown run on first mention, and the same handle after', () => {
    const runs = new RunRegistry();
    expect(runs.get('r1')).toBeUndefined();
    const run = runs.getOrCreate('r1');
    expect(run).toMatchObject({
      runId: 'r1',
      sessionId: '',
      status: 'unknown',
      ref: undefined,
      lastSequence: -1,
      restoredSequence: -1,
      sequenceDirty: false,
    });
    expect(run.live.size).toBe(0);
    expect(run.entities.message.size).toBe(0);
    expect(runs.getOrCreate('r1')).toBe(run);
    expect(runs.get('r1')).toBe(run);
    expect([...runs.values()]).toEqual([run]);
  });

  it('remembers an id, and moves the sequence only when one is given', () => {
    const runs = new RunRegistry();
    const run = runs.getOrCreate('r1');
    runs.remember(run, 'e1', undefined);
    expect(run.seen.has('e1')).toBe(true);
    expect(run.lastSequence).toBe(-1);
    expect(run.sequenceDirty).toBe(false);
    runs.remember(run, 'e2', 4);
    expect(run.seen.has('e2')).toBe(true);
    expect(run.lastSequence).toBe(4);
    expect(run.sequenceDirty).toBe(true);
    runs.rememberAdded(run, 'e3', 6);
    expect(run.lastSequence).toBe(6);
  });

  it('hands moved sequences to the projection once, at the last value', () => {
    const runs = new RunRegistry();
    const projection = new AgentStateProjection(createEmptyAgentState());
    const r1 = runs.getOrCreate('r1');
    const r2 = runs.getOrCreate('r2');
    runs.remember(r1, 'a', 3);
    runs.remember(r1, 'b', 4);
    runs.remember(r2, 'c', undefined);
    const untouched = projection.read();
    expect(untouched.lastSequenceByRun).toEqual({});
    runs.flushSequences(projection);
    const after = projection.read();
    expect(after.lastSequenceByRun).toEqual({ r1: 4 });
    expect(r1.sequenceDirty).toBe(false);
    // Nothing moved since: the projection is not touched, so a read returns the same object.
    runs.flushSequences(projection);
    expect(projection.read()).toBe(after);
    runs.remember(r2, 'd', 9);
    runs.flushSequences(projection);
    expect(projection.read().lastSequenceByRun).toEqual({ r1: 4, r2: 9 });
  });

  it('rolls back the ids remembered since beginJournal and returns the state from before', () => {
    const runs = new RunRegistry();
    const r1 = runs.getOrCreate('r1');
    runs.remember(r1, 'before', 1);
    r1.restoredSequence = 5;
    const seenBefore = r1.seen;
    runs.beginJournal();
    runs.remember(r1, 'during', 2);
    runs.rememberAdded(r1, 'delta', 3);
    r1.restoredSequence = 7;
    const r2 = runs.getOrCreate('r2');
    runs.remember(r2, 'new-run', undefined);
    const point = runs.rollBack();
    expect(r1.seen.has('before')).toBe(true);
    expect(r1.seen.has('during')).toBe(false);
    expect(r2.seen.has('new-run')).toBe(false);
    expect([...point.seenByRun.keys()]).toEqual(['r1']);
    expect(point.seenByRun.get('r1')).toBe(seenBefore);
    expect([...point.restoredSequences]).toEqual([['r1', 5]]);
    // The journal is over: later ids are not forgotten by another rollBack.
    runs.remember(r1, 'after', 4);
    expect(runs.rollBack()).toEqual({ seenByRun: new Map(), restoredSequences: new Map() });
    expect(r1.seen.has('after')).toBe(true);
  });

  it('keeps the journaled ids when the journal ends', () => {
    const runs = new RunRegistry();
    const r1 = runs.getOrCreate('r1');
    runs.beginJournal();
    runs.remember(r1, 'kept', 1);
    runs.endJournal();
    const point = runs.rollBack();
    expect(r1.seen.has('kept')).toBe(true);
    expect(point.seenByRun.size).toBe(0);
    expect(point.restoredSequences.size).toBe(0);
  });
});
