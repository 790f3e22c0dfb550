import { describe, expect, it } from 'vitest';
import type { AnyActorRef } from 'xstate';
import { getAgentEntityKey } from '../../protocol/getAgentEntityKey';
import { runEvents } from '../../tests/support/events';
import { restoreStore } from '../../tests/support/restoredStore';
import type { AgentState } from '../agentState';
import { createAgentStore } from '../createAgentStore';
import { SeenEvents } from '../SeenEvents';
import type { EntityHandle, RunHandle } from './handles';

const key = getAgentEntityKey;

/**
 * r1 running (message m1 streaming, reasoning th1 completed), r2 completed, r3 failed,
 * r4 completed waiting on tool call t1 and approval a1 (its tool call t2 was terminated),
 * r5 completed with its one pending tool call since completed,
 * and issues: an invalid event of r1, the entities r3 and r4 closed at their ends, an event
 * of r9, which never started.
 */
function replayedState(): AgentState {
  const store = createAgentStore();
  const r1 = runEvents('r1');
  const r2 = runEvents('r2');
  const r3 = runEvents('r3');
  const r4 = runEvents('r4');
  const r5 = runEvents('r5');
  store.batch([
    r1.create('run.started', {}),
    r1.create('message.started', { messageId: 'm1', role: 'assistant' }),
    r1.create('message.delta', { messageId: 'm1', delta: 'Hi' }),
    r1.create('reasoning.started', { reasoningId: 'th1' }),
    r1.create('reasoning.completed', { reasoningId: 'th1' }),
    { runId: 'r1', eventId: 'bad-1', type: 'nonsense' },
    r2.create('run.started', {}),
    r2.create('message.started', { messageId: 'm1', role: 'assistant' }),
    r2.create('message.completed', { messageId: 'm1' }),
    r2.create('run.completed', {}),
    r3.create('run.started', {}),
    r3.create('task.created', { taskId: 'k1' }),
    r3.create('run.failed', { error: { message: 'boom' } }),
    r4.create('run.started', {}),
    r4.create('tool.requested', { toolCallId: 't1', name: 'a', arguments: '{}' }),
    r4.create('tool.requested', { toolCallId: 't2', name: 'b', arguments: '{}' }),
    r4.create('approval.requested', { approvalId: 'a1' }),
    r4.create('run.completed', { pendingToolCallIds: ['t1'], pendingApprovalIds: ['a1'] }),
    r5.create('run.started', {}),
    r5.create('tool.requested', { toolCallId: 't1', name: 'a', arguments: '{}' }),
    r5.create('run.completed', { pendingToolCallIds: ['t1'] }),
    r5.create('tool.completed', { toolCallId: 't1', result: 1 }),
    runEvents('r9').create('message.started', { messageId: 'm1', role: 'assistant' }),
  ]);
  return store.getSnapshot();
}

/** The snapshot of an entity's actor; fails the test when it has none. */
function actorSnapshot(handle: EntityHandle | undefined) {
  const ref = handle?.ref;
  if (ref === undefined) throw new Error(`${handle?.actorId ?? 'the entity'} has no actor`);
  return (ref as AnyActorRef).getSnapshot();
}

const liveIds = (run: RunHandle) => [...run.live].map((handle) => `${handle.kind}:${handle.id}`).sort();

describe('restoreStore', () => {
  it('gives running runs and runs waiting for input an actor, and ended runs none', () => {
    const state = replayedState();
    expect(Object.fromEntries(Object.values(state.runs).map((run) => [run.id, run.status]))).toEqual({
      r1: 'running',
      r2: 'completed',
      r3: 'failed',
      r4: 'completed',
      r5: 'completed',
    });
    const { runs, session, projection } = restoreStore(state);
    const status = (runId: string) => runs.get(runId)?.status;
    expect([status('r1'), status('r2'), status('r3'), status('r4'), status('r5'), status('r9')]).toEqual([
      'running',
      'ended',
      'ended',
      'waiting',
      'ended',
      'unknown',
    ]);
    expect(Object.keys(session.getSnapshot().children).sort()).toEqual(['run:r1', 'run:r4']);
    expect(runs.get('r1')?.ref?.getSnapshot().context.run).toEqual(state.runs.r1);
    expect(runs.get('r4')?.ref?.getSnapshot().context.run).toEqual(state.runs.r4);
    expect(runs.get('r4')?.ref?.getSnapshot().hasTag('waiting')).toBe(true);
    expect(runs.get('r1')?.ref?.getSnapshot().hasTag('active')).toBe(true);
    expect(runs.get('r2')?.ref).toBeUndefined();
    expect(runs.get('r3')?.ref).toBeUndefined();
    expect(runs.get('r5')?.ref).toBeUndefined();
    expect(runs.get('r5')?.live.size).toBe(0);
    expect(runs.get('r1')?.sessionId).toBe('s1');
    expect(runs.get('r9')?.sessionId).toBe('');
    expect(projection.read()).toBe(state);
  });

  it('gives open entities an actor and final ones none', () => {
    const { runs } = restoreStore(replayedState());
    const r1 = runs.get('r1') as RunHandle;
    const m1 = r1.entities.message.get('m1');
    expect(m1?.key).toBe(key('r1', 'm1'));
    expect(actorSnapshot(m1).context.entity).toMatchObject({ status: 'streaming', content: 'Hi' });
    expect(r1.entities.reasoning.get('th1')).toMatchObject({ key: key('r1', 'th1'), ref: undefined });
    expect(liveIds(r1)).toEqual(['message:m1']);
    // Entities of ended runs keep handles (for issues about them) but no actors.
    const r2 = runs.get('r2') as RunHandle;
    expect(r2.entities.message.get('m1')?.ref).toBeUndefined();
    expect(r2.live.size).toBe(0);
    expect(runs.get('r3')?.entities.task.get('k1')?.ref).toBeUndefined();
  });

  it('in a waiting run, gives actors only to the pending entities it listed', () => {
    const state = replayedState();
    // A checkpoint in which t2, not listed, is still open: the restore leaves it without an actor.
    const edited = structuredClone(state);
    const t2 = edited.toolCalls[key('r4', 't2')];
    expect(t2?.status).toBe('cancelled');
    if (t2 !== undefined) {
      t2.status = 'awaiting_execution';
      delete t2.error;
    }
    for (const input of [state, edited]) {
      const r4 = restoreStore(input).runs.get('r4') as RunHandle;
      expect(r4.status).toBe('waiting');
      expect(liveIds(r4)).toEqual(['approval:a1', 'toolCall:t1']);
      expect(r4.entities.toolCall.get('t2')?.ref).toBeUndefined();
      expect(actorSnapshot(r4.entities.toolCall.get('t1')).hasTag('settleable')).toBe(true);
    }
  });

  it('makes each run sequence its restore point', () => {
    const state = replayedState();
    const { runs } = restoreStore(state);
    const points = Object.fromEntries(
      [...runs.values()].map((run) => [run.runId, [run.lastSequence, run.restoredSequence]]),
    );
    expect(state.lastSequenceByRun).toEqual({ r1: 5, r2: 4, r3: 3, r4: 5, r5: 4 });
    // r9 is known only from an issue whose refusal did not move its sequence: it has no restore point.
    expect(points).toEqual({ r1: [5, 5], r2: [4, 4], r3: [3, 3], r4: [5, 5], r5: [4, 4], r9: [-1, -1] });
    expect([...runs.values()].every((run) => !run.sequenceDirty)).toBe(true);
  });

  it('remembers the ids of the events its issues hold', () => {
    const state = replayedState();
    expect(state.issues.map((issue) => [issue.code, issue.runId])).toEqual([
      ['invalid_event', 'r1'],
      ['active_entities_at_terminal', 'r3'],
      ['active_entities_at_terminal', 'r4'],
      ['missing_run', 'r9'],
    ]);
    const { runs } = restoreStore(state);
    expect(runs.get('r1')?.seen.has('bad-1')).toBe(true);
    expect(runs.get('r9')?.seen.has('r9-e1')).toBe(true);
    // Applied events are covered by the restore point, not by their ids.
    expect(runs.get('r1')?.seen.has('r1-e1')).toBe(false);
  });

  it('takes seen ids and restore points from a previous registry over the state', () => {
    const state = replayedState();
    const previousSeen = new SeenEvents();
    previousSeen.add('from-before');
    const { runs } = restoreStore(state, {
      previous: { seenByRun: new Map([['r1', previousSeen]]), restoredSequences: new Map([['r1', 2]]) },
    });
    const r1 = runs.get('r1') as RunHandle;
    expect(r1.seen).toBe(previousSeen);
    expect(r1.seen.has('from-before')).toBe(true);
    expect(r1.seen.has('bad-1')).toBe(true);
    expect([r1.lastSequence, r1.restoredSequence]).toEqual([5, 2]);
    const r2 = runs.get('r2') as RunHandle;
    expect(r2.seen).not.toBe(previousSeen);
    expect([r2.lastSequence, r2.restoredSequence]).toEqual([4, 4]);
  });
});
