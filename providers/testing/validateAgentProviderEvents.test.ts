import { describe, expect, it } from 'vitest';
import { AGENT_EVENT_TYPES } from '../../protocol/eventSchemas';
import { runEvents } from '../../tests/support/events';
import { validateAgentProviderEvents } from './validateAgentProviderEvents';

const all = { eventTypes: AGENT_EVENT_TYPES, transports: ['sse'] as const };
const codes = (issues: ReturnType<typeof validateAgentProviderEvents>) => issues.map((issue) => issue.code);

describe('validateAgentProviderEvents', () => {
  it('accepts a well-formed run', () => {
    const events = runEvents('r1');
    expect(
      validateAgentProviderEvents(all, [
        events.create('run.started', {}),
        events.create('message.started', { messageId: 'm', role: 'assistant' }),
        events.create('message.delta', { messageId: 'm', delta: 'x' }),
        events.create('message.completed', { messageId: 'm' }),
        events.create('run.completed', {}),
      ]),
    ).toEqual([]);
  });

  it('reports each contract breach with its code and position', () => {
    const events = runEvents('r1');
    const started = events.create('run.started', {});
    const message = events.create('message.started', { messageId: 'm', role: 'assistant' });
    const issues = validateAgentProviderEvents(
      { eventTypes: ['run.started', 'message.started', 'run.completed'], transports: ['sse'] },
      [
        started,
        message,
        { ...message, payload: { messageId: 'm' } },
        message,
        { ...events.create('message.delta', { messageId: 'm', delta: 'x' }), sequence: 1 },
        runEvents('r2', 's1', 10).create('message.delta', { messageId: 'm', delta: 'y' }),
        events.create('run.completed', {}),
        events.create('run.completed', {}),
      ],
    );
    expect(issues.map((issue) => [issue.code, issue.index])).toEqual([
      ['invalid_event', 2],
      ['duplicate_event_id', 3],
      ['invalid_sequence', 3],
      ['undeclared_event_type', 4],
      ['invalid_sequence', 4],
      ['inconsistent_run', 5],
      ['multiple_run_terminals', 7],
      ['active_entities_at_terminal', 6],
    ]);
    expect(issues[0]?.message).toContain('payload.role');
  });

  it('reports a run without start or terminal, and lifecycle errors from the machines', () => {
    const events = runEvents('r1');
    expect(
      codes(validateAgentProviderEvents(all, [events.create('message.delta', { messageId: 'm', delta: 'x' })])),
    ).toEqual(['missing_run_start', 'missing_run_terminal']);
    const lifecycle = runEvents('r1');
    const issues = validateAgentProviderEvents(all, [
      lifecycle.create('run.started', {}),
      lifecycle.create('tool.requested', { toolCallId: 't', name: 'x' }),
      lifecycle.create('tool.running', { toolCallId: 't' }),
      lifecycle.create('tool.cancelled', { toolCallId: 't' }),
      lifecycle.create('run.completed', {}),
      lifecycle.create('message.started', { messageId: 'late', role: 'assistant' }),
    ]);
    expect(issues.map((issue) => [issue.code, issue.index])).toEqual([
      ['invalid_lifecycle', 2],
      ['invalid_lifecycle', 5],
    ]);
    expect(issues[0]?.message).toContain('streaming_arguments');
  });
});
