import { describe, expect, it } from 'vitest';
import { createAgentStore } from '../../machines/createAgentStore';
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
      lifecycle.create('tool.arguments_delta', { toolCallId: 't', delta: '{}' }),
      lifecycle.create('tool.cancelled', { toolCallId: 't' }),
      lifecycle.create('run.completed', {}),
      lifecycle.create('message.started', { messageId: 'late', role: 'assistant' }),
    ]);
    expect(issues.map((issue) => [issue.code, issue.index])).toEqual([
      ['invalid_lifecycle', 3],
      ['invalid_lifecycle', 6],
    ]);
    expect(issues[0]?.message).toContain('running');
  });
});

describe('validateAgentProviderEvents: the seed tool lifecycle', () => {
  // Seed 001: `tool.requested -> tool.arguments_delta* -> tool.running -> completed | failed | cancelled`,
  // with `tool.arguments_completed` optional; its capability example declares only these three.
  const seedCapabilities = {
    eventTypes: ['run.started', 'run.completed', 'tool.requested', 'tool.running', 'tool.completed'],
    transports: ['sse'],
  } as const;

  it("accepts the capability example's tool.requested, tool.running, tool.completed", () => {
    const events = runEvents('r1');
    expect(
      validateAgentProviderEvents(seedCapabilities, [
        events.create('run.started', {}),
        events.create('tool.requested', { toolCallId: 't', name: 'search', arguments: '{"q":"x"}' }),
        events.create('tool.running', { toolCallId: 't' }),
        events.create('tool.completed', { toolCallId: 't', result: { hits: 3 } }),
        events.create('run.completed', {}),
      ]),
    ).toEqual([]);
  });

  for (const terminal of ['tool.completed', 'tool.failed', 'tool.cancelled'] as const) {
    it(`accepts tool.requested -> tool.arguments_delta -> tool.running -> ${terminal}`, () => {
      const events = runEvents('r1');
      const payload =
        terminal === 'tool.completed'
          ? { toolCallId: 't', result: 'ok' }
          : terminal === 'tool.failed'
            ? { toolCallId: 't', error: { message: 'timeout', code: 'timeout' } }
            : { toolCallId: 't', reason: 'user' };
      expect(
        validateAgentProviderEvents(all, [
          events.create('run.started', {}),
          events.create('tool.requested', { toolCallId: 't', name: 'search' }),
          events.create('tool.arguments_delta', { toolCallId: 't', delta: '{"q":' }),
          events.create('tool.arguments_delta', { toolCallId: 't', delta: '"x"}' }),
          events.create('tool.running', { toolCallId: 't' }),
          events.create(terminal, payload as never),
          events.create('run.completed', {}),
        ]),
      ).toEqual([]);
    });
  }

  it('accepts tool.completed or tool.failed straight after the argument stream', () => {
    const events = runEvents('r1');
    expect(
      validateAgentProviderEvents(all, [
        events.create('run.started', {}),
        events.create('tool.requested', { toolCallId: 'a', name: 'search' }),
        events.create('tool.arguments_delta', { toolCallId: 'a', delta: '{}' }),
        events.create('tool.completed', { toolCallId: 'a', result: 1 }),
        events.create('tool.requested', { toolCallId: 'b', name: 'search' }),
        events.create('tool.arguments_delta', { toolCallId: 'b', delta: '{}' }),
        events.create('tool.failed', { toolCallId: 'b', error: { message: 'no' } }),
        events.create('run.completed', {}),
      ]),
    ).toEqual([]);
  });

  it('checks a run that continues another against the history it continued', () => {
    const waiting = runEvents('r1');
    const store = createAgentStore();
    store.batch([
      waiting.create('run.started', {}),
      waiting.create('approval.requested', { approvalId: 'a1' }),
      waiting.create('run.completed', { pendingApprovalIds: ['a1'] }),
    ]);
    const history = store.getSnapshot();
    const continuing = runEvents('r2');
    const events = [
      continuing.create('run.started', { continuesRunId: 'r1' }),
      continuing.create('approval.resolved', { approvalId: 'a1', decision: 'approved' }),
      continuing.create('run.completed', {}),
    ];
    expect(validateAgentProviderEvents(all, events, { history })).toEqual([]);
    // Without the history, the answer names an approval nobody started.
    expect(codes(validateAgentProviderEvents(all, events))).toEqual(['invalid_lifecycle']);
    // The history's own issues are not the run's.
    expect(history.issues).toEqual([]);
  });
});
