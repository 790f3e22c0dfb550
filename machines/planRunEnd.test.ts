import { describe, expect, it } from 'vitest';
import type { AnyActorRef } from 'xstate';
import { runEvents } from '../tests/support/events';
import { restoreStore } from '../tests/support/restoredStore';
import type { AgentState } from './agentState';
import { createAgentStore } from './createAgentStore';
import { planRunEnd, type RunTerminalEvent } from './runMachine';
import type { RunHandle, RunRef } from './store/handles';

/**
 * Run r1, running, with: message m1 streaming, reasoning th1 completed, tool calls t1
 * awaiting execution, t2 streaming its arguments, t3 completed, t4 running, t5 failed
 * (retryable), approvals a1 and a2 waiting, task k1 running.
 */
function runningRun(): { run: RunHandle; state: AgentState; events: ReturnType<typeof runEvents> } {
  const store = createAgentStore();
  const events = runEvents('r1');
  store.batch([
    events.create('run.started', {}),
    events.create('message.started', { messageId: 'm1', role: 'assistant' }),
    events.create('message.delta', { messageId: 'm1', delta: 'Hi' }),
    events.create('reasoning.started', { reasoningId: 'th1' }),
    events.create('reasoning.completed', { reasoningId: 'th1' }),
    events.create('tool.requested', { toolCallId: 't1', name: 'a', arguments: '{}' }),
    events.create('tool.arguments_completed', { toolCallId: 't1' }),
    events.create('tool.requested', { toolCallId: 't2', name: 'b' }),
    events.create('tool.arguments_delta', { toolCallId: 't2', delta: '{"q":' }),
    events.create('tool.requested', { toolCallId: 't3', name: 'c', arguments: '{}' }),
    events.create('tool.completed', { toolCallId: 't3', result: 1 }),
    events.create('tool.requested', { toolCallId: 't4', name: 'd', arguments: '{}' }),
    events.create('tool.running', { toolCallId: 't4' }),
    events.create('tool.requested', { toolCallId: 't5', name: 'e', arguments: '{}' }),
    events.create('tool.failed', { toolCallId: 't5', error: { message: 'busy', retryable: true } }),
    events.create('approval.requested', { approvalId: 'a1' }),
    events.create('approval.requested', { approvalId: 'a2' }),
    events.create('task.created', { taskId: 'k1' }),
  ]);
  const state = store.getSnapshot();
  expect(state.issues).toEqual([]);
  const run = restoreStore(state).runs.get('r1') as RunHandle;
  return { run, state, events };
}

/** The run actor's plan for this terminal, read from its context and its live entities. */
function planOf(run: RunHandle, event: RunTerminalEvent) {
  const { context } = (run.ref as RunRef).getSnapshot();
  return planRunEnd(context, context.live, event);
}

function snapshotsOf(run: RunHandle): Map<string, unknown> {
  const { live } = (run.ref as RunRef).getSnapshot().context;
  return new Map(Object.entries(live).map(([actorId, ref]) => [actorId, (ref as AnyActorRef).getSnapshot()]));
}

describe('planRunEnd', () => {
  it('settles the listed entities that can wait, terminates the other active ones, reports the rest', () => {
    const { run, events } = runningRun();
    expect(run.status).toBe('running');
    const before = snapshotsOf(run);
    const completed = events.create('run.completed', {
      pendingToolCallIds: ['t1', 't2', 't3', 't5', 'tX'],
      pendingApprovalIds: ['a1', 'aX'],
    });
    const plan = planOf(run, completed);
    expect([...plan.settle].sort()).toEqual(['approval:a1', 'toolCall:t1', 'toolCall:t2']);
    expect([...plan.terminate].sort()).toEqual(['approval:a2', 'message:m1', 'task:k1', 'toolCall:t4']);
    const problems = plan.problems.map(({ code, entityId, state: at, runId }) => ({
      code,
      entityId,
      state: at,
      runId,
    }));
    expect(problems).toEqual(
      expect.arrayContaining([
        { code: 'invalid_transition', entityId: 't3', state: 'completed', runId: 'r1' },
        { code: 'invalid_transition', entityId: 't5', state: 'failed', runId: 'r1' },
        { code: 'missing_entity', entityId: 'tX', state: undefined, runId: 'r1' },
        { code: 'missing_entity', entityId: 'aX', state: undefined, runId: 'r1' },
        { code: 'active_entities_at_terminal', entityId: 'm1', state: 'streaming', runId: 'r1' },
        { code: 'active_entities_at_terminal', entityId: 'k1', state: 'running', runId: 'r1' },
        { code: 'active_entities_at_terminal', entityId: 't4', state: 'running', runId: 'r1' },
        { code: 'active_entities_at_terminal', entityId: 'a2', state: 'waiting', runId: 'r1' },
      ]),
    );
    expect(plan.problems).toHaveLength(8);
    for (const problem of plan.problems) expect(problem.event).toBe(completed);
    // A plan changes nothing: every actor keeps its snapshot, every live entity stays live.
    expect(snapshotsOf(run)).toEqual(before);
    const { live } = (run.ref as RunRef).getSnapshot().context;
    for (const [actorId, snapshot] of before) expect((live[actorId] as AnyActorRef).getSnapshot()).toBe(snapshot);
    expect(run.status).toBe('running');
  });

  it('terminates every active entity when the run fails, leaving the retryable tool call alone; waiting approvals are no issue', () => {
    const { run, events } = runningRun();
    const plan = planOf(run, events.create('run.failed', { error: { message: 'boom' } }));
    expect(plan.settle).toEqual([]);
    expect([...plan.terminate].sort()).toEqual([
      'approval:a1',
      'approval:a2',
      'message:m1',
      'task:k1',
      'toolCall:t1',
      'toolCall:t2',
      'toolCall:t4',
    ]);
    // No event cancels an approval: only the entities the runtime could have closed are reported.
    expect(plan.problems.map((problem) => problem.entityId).sort()).toEqual(['k1', 'm1', 't1', 't2', 't4']);
    for (const problem of plan.problems) expect(problem.code).toBe('active_entities_at_terminal');
    expect(Object.keys((run.ref as RunRef).getSnapshot().context.live)).toContain('toolCall:t5');
  });

  it('reads the final record the run kept for a listed entity whose actor is gone', () => {
    const { run, events } = runningRun();
    const { context } = (run.ref as RunRef).getSnapshot();
    expect(context.live['toolCall:t3']).toBeUndefined();
    expect(context.finished['toolCall:t3']?.status).toBe('completed');
    const plan = planOf(run, events.create('run.completed', { pendingToolCallIds: ['t3'] }));
    expect(plan.problems[0]).toMatchObject({ code: 'invalid_transition', entityId: 't3', state: 'completed' });
  });
});
