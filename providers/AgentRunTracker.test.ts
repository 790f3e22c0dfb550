import { describe, expect, it } from 'vitest';
import { createAgentEventFactory } from '../protocol/createAgentEventFactory';
import type { AgentEvent } from '../protocol/eventSchemas';
import { AgentRunTracker } from './AgentRunTracker';

const factory = () => createAgentEventFactory({ sessionId: 's1', runId: 'r1', now: () => 1 });

/** A run with one open entity of every kind, and one of each that already ended. */
function openEverything(): { tracker: AgentRunTracker; events: ReturnType<typeof factory> } {
  const events = factory();
  const tracker = new AgentRunTracker();
  const observed: AgentEvent[] = [
    events.create('run.started', {}),
    events.create('message.started', { messageId: 'm1', role: 'assistant' }),
    events.create('message.delta', { messageId: 'm1', delta: 'Hi' }),
    events.create('message.started', { messageId: 'm0', role: 'assistant' }),
    events.create('message.completed', { messageId: 'm0' }),
    events.create('reasoning.started', { reasoningId: 'r1' }),
    events.create('tool.requested', { toolCallId: 't1', name: 'search' }),
    events.create('tool.arguments_completed', { toolCallId: 't1' }),
    events.create('tool.requested', { toolCallId: 't2', name: 'search' }),
    events.create('tool.arguments_completed', { toolCallId: 't2' }),
    events.create('tool.running', { toolCallId: 't2' }),
    events.create('tool.requested', { toolCallId: 't3', name: 'search' }),
    events.create('approval.requested', { approvalId: 'a1', description: 'Send it?' }),
    events.create('task.created', { taskId: 'k1', title: 'Plan' }),
    events.create('artifact.created', { artifactId: 'f1', mediaType: 'text/plain' }),
  ];
  for (const event of observed) tracker.observe(event);
  return { tracker, events };
}

describe('AgentRunTracker', () => {
  it('knows which entities are open, by kind and id', () => {
    const { tracker } = openEverything();
    expect(tracker.hasStarted).toBe(true);
    expect(tracker.hasEnded).toBe(false);
    expect(tracker.isOpen('message', 'm1')).toBe(true);
    expect(tracker.isOpen('message', 'm0')).toBe(false);
    expect(tracker.isOpen('toolCall', 't1')).toBe(true);
    expect(tracker.isOpen('tool', 't1')).toBe(true);
    expect(tracker.isOpen('approval', 'a1')).toBe(true);
    expect(tracker.isOpen('reasoning', 'm1')).toBe(false);
  });

  it('lists the open tool calls with complete arguments as awaiting execution, running ones included', () => {
    const { tracker } = openEverything();
    expect(tracker.toolCallsAwaitingExecution()).toEqual(['t1', 't2']);
  });

  it('closes every open entity on cancel, artifacts failed, approvals left to the run terminal, then cancels the run', () => {
    const { tracker, events } = openEverything();
    const closing = tracker.close(events, { type: 'cancelled', reason: 'aborted' });
    expect(closing.map((event) => [event.type, event.payload])).toEqual([
      ['message.cancelled', { messageId: 'm1', reason: 'aborted' }],
      ['reasoning.cancelled', { reasoningId: 'r1', reason: 'aborted' }],
      ['tool.cancelled', { toolCallId: 't1', reason: 'aborted' }],
      ['tool.cancelled', { toolCallId: 't2', reason: 'aborted' }],
      ['tool.cancelled', { toolCallId: 't3', reason: 'aborted' }],
      ['task.cancelled', { taskId: 'k1', reason: 'aborted' }],
      ['artifact.failed', { artifactId: 'f1', error: { message: 'aborted', code: 'aborted' } }],
      ['run.cancelled', { reason: 'aborted' }],
    ]);
    expect(tracker.hasEnded).toBe(true);
    expect(tracker.terminalType).toBe('run.cancelled');
    expect(tracker.isOpen('message', 'm1')).toBe(false);
    // No approval is resolved `expired`: the run's terminal closes it (the store: cancelled, run_terminated).
    expect(tracker.isOpen('approval', 'a1')).toBe(false);
    expect(tracker.close(events, { type: 'cancelled', reason: 'again' })).toEqual([]);
  });

  it('fails every open entity with the error on failure, then fails the run', () => {
    const { tracker, events } = openEverything();
    const error = { message: 'model crashed', code: 'runtime_error' };
    const closing = tracker.close(events, { type: 'failed', error });
    expect(closing.map((event) => [event.type, event.payload])).toEqual([
      ['message.failed', { messageId: 'm1', error }],
      ['reasoning.failed', { reasoningId: 'r1', error }],
      ['tool.failed', { toolCallId: 't1', error }],
      ['tool.failed', { toolCallId: 't2', error }],
      ['tool.failed', { toolCallId: 't3', error }],
      ['task.failed', { taskId: 'k1', error }],
      ['artifact.failed', { artifactId: 'f1', error }],
      ['run.failed', { error }],
    ]);
    expect(tracker.terminalType).toBe('run.failed');
  });

  it('closes nothing once the run has ended by itself', () => {
    const { tracker, events } = openEverything();
    tracker.observe(events.create('run.completed', { pendingToolCallIds: ['t1'] }));
    expect(tracker.terminalType).toBe('run.completed');
    expect(tracker.close(events, { type: 'cancelled', reason: 'aborted' })).toEqual([]);
    expect(tracker.isOpen('toolCall', 't1')).toBe(true);
  });
});
