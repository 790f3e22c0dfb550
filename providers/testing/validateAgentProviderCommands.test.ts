import { describe, expect, it } from 'vitest';
import type { AgentCommand } from '../../protocol/commandSchemas';
import { createAgentCommandFactory } from '../../protocol/createAgentCommandFactory';
import { AGENT_EVENT_TYPES, type AgentEvent } from '../../protocol/eventSchemas';
import { runEvents } from '../../tests/support/events';
import type { AgentProviderCapabilities } from '../AgentProvider';
import { type AgentProviderCommandRecord, validateAgentProviderCommands } from './validateAgentProviderCommands';

const all: AgentProviderCapabilities = {
  eventTypes: AGENT_EVENT_TYPES,
  transports: ['sse'],
  commands: ['approval.resolve', 'tool.retry', 'run.cancel', 'tool.submit_result'],
};

const commands = createAgentCommandFactory({ sessionId: 's1', runId: 'r1', now: () => 5_000 });
const approve = commands.create('approval.resolve', { approvalId: 'a1', decision: 'approved' });

/** The run the command was sent in: started, an approval waiting. */
function waitingForApproval(): { events: ReturnType<typeof runEvents>; runEvents: AgentEvent[] } {
  const events = runEvents('r1');
  return {
    events,
    runEvents: [events.create('run.started', {}), events.create('approval.requested', { approvalId: 'a1' })],
  };
}

const issuesOf = (capabilities: AgentProviderCapabilities, record: AgentProviderCommandRecord) =>
  validateAgentProviderCommands(capabilities, record).map((issue) => [issue.code, issue.index]);

describe('validateAgentProviderCommands', () => {
  it('accepts a clean record, with and without the run before it', () => {
    const { events, runEvents: before } = waitingForApproval();
    const answer = [events.create('approval.resolved', { approvalId: 'a1', decision: 'approved' })];
    expect(validateAgentProviderCommands(all, { command: approve, initialSequence: 2, events: answer })).toEqual([]);
    expect(
      validateAgentProviderCommands(all, { command: approve, initialSequence: 2, events: answer, runEvents: before }),
    ).toEqual([]);
    expect(validateAgentProviderCommands(all, { command: approve, initialSequence: 2, events: [] })).toEqual([]);
  });

  it('reports an invalid command alone, without reading its events', () => {
    const invalid = { ...approve, payload: { approvalId: 'a1', decision: 'maybe' } } as unknown as AgentCommand;
    const issues = validateAgentProviderCommands(all, {
      command: invalid,
      initialSequence: 0,
      events: [{ not: 'an event' }],
    });
    expect(issues.map((issue) => issue.code)).toEqual(['invalid_command']);
    expect(issues[0]?.message).toContain('payload.decision');
    expect(issues[0]?.index).toBeUndefined();
  });

  it('reports a command the capabilities do not declare', () => {
    const { events } = waitingForApproval();
    const answer = [events.create('approval.resolved', { approvalId: 'a1', decision: 'approved' })];
    for (const commandsDeclared of [undefined, ['run.cancel'] as const]) {
      const capabilities: AgentProviderCapabilities = {
        eventTypes: AGENT_EVENT_TYPES,
        transports: ['sse'],
        ...(commandsDeclared === undefined ? {} : { commands: commandsDeclared }),
      };
      const issues = validateAgentProviderCommands(capabilities, {
        command: approve,
        initialSequence: 2,
        events: answer,
      });
      expect(issues.map((issue) => issue.code)).toEqual(['undeclared_command']);
      expect(issues[0]?.message).toContain('approval.resolve');
    }
  });

  it('reports each event that breaks the contract, with its code and position', () => {
    const events = runEvents('r1', 's1', 2);
    const resolved = events.create('approval.resolved', { approvalId: 'a1', decision: 'approved' });
    const started = events.create('message.started', { messageId: 'm1', role: 'assistant' });
    const capabilities: AgentProviderCapabilities = {
      ...all,
      eventTypes: ['approval.resolved', 'message.started', 'message.completed'],
    };
    const issues = validateAgentProviderCommands(capabilities, {
      command: approve,
      initialSequence: 2,
      events: [
        resolved,
        { ...started, payload: { messageId: 'm1' } },
        started,
        started,
        events.create('task.created', { taskId: 'k1', title: 'Plan' }),
        { ...events.create('message.completed', { messageId: 'm1' }), runId: 'r2' },
        { ...events.create('message.completed', { messageId: 'm1' }), sessionId: 's2' },
      ],
    });
    expect(issues.map((issue) => [issue.code, issue.index])).toEqual([
      ['invalid_event', 1],
      ['duplicate_event_id', 3],
      ['invalid_sequence', 3],
      ['undeclared_event_type', 4],
      ['inconsistent_run', 5],
      ['inconsistent_run', 6],
    ]);
    expect(issues[0]?.message).toContain('payload.role');
    expect(issues[4]?.message).toContain('r2');
    expect(issues[5]?.message).toContain('s2');
  });

  it('reports a first sequence at or before initialSequence, and a sequence that does not increase', () => {
    const events = runEvents('r1', 's1', 7);
    const at = { ...events.create('message.started', { messageId: 'm1', role: 'assistant' }), sequence: 7 };
    expect(issuesOf(all, { command: approve, initialSequence: 7, events: [at] })).toEqual([['invalid_sequence', 0]]);
    const first = events.create('message.started', { messageId: 'm2', role: 'assistant' });
    const same = { ...events.create('message.completed', { messageId: 'm2' }), sequence: first.sequence };
    expect(issuesOf(all, { command: approve, initialSequence: 7, events: [first, same] })).toEqual([
      ['invalid_sequence', 1],
    ]);
  });

  it('reports an event id the run already used, when the run is given', () => {
    const { events, runEvents: before } = waitingForApproval();
    const reused = {
      ...events.create('approval.resolved', { approvalId: 'a1', decision: 'approved' }),
      eventId: before[1]?.eventId,
    };
    expect(issuesOf(all, { command: approve, initialSequence: 2, events: [reused], runEvents: before })).toEqual([
      ['duplicate_event_id', 0],
    ]);
  });

  it('reports a lifecycle violation against the run as invalid_lifecycle', () => {
    const { events, runEvents: before } = waitingForApproval();
    const run = [...before, events.create('approval.resolved', { approvalId: 'a1', decision: 'rejected' })];
    const answer = [
      events.create('message.started', { messageId: 'm1', role: 'assistant' }),
      events.create('approval.resolved', { approvalId: 'a1', decision: 'approved' }),
    ];
    const issues = validateAgentProviderCommands(all, {
      command: approve,
      initialSequence: 3,
      events: answer,
      runEvents: run,
    });
    expect(issues.map((issue) => [issue.code, issue.index])).toEqual([['invalid_lifecycle', 1]]);
    expect(issues[0]?.event).toBe(answer[1]);
    expect(issues[0]?.message).toContain('a1');
    // Without the run, the same answer breaks no rule the validator can see.
    expect(validateAgentProviderCommands(all, { command: approve, initialSequence: 3, events: answer })).toEqual([]);
  });

  it('reports an event naming an entity the run never started as invalid_lifecycle', () => {
    const { events, runEvents: before } = waitingForApproval();
    const answer = [events.create('approval.resolved', { approvalId: 'zz', decision: 'approved' })];
    expect(issuesOf(all, { command: approve, initialSequence: 2, events: answer, runEvents: before })).toEqual([
      ['invalid_lifecycle', 0],
    ]);
  });

  it("does not report the run's own lifecycle problems, nor replay what is already reported", () => {
    const events = runEvents('r1');
    const run = [
      events.create('run.started', {}),
      events.create('approval.requested', { approvalId: 'a1' }),
      // The run's own problem: not the command's to answer for.
      events.create('tool.completed', { toolCallId: 'never-requested' }),
    ];
    const answer = [
      events.create('approval.resolved', { approvalId: 'a1', decision: 'approved' }),
      // Already an inconsistent_run issue: not replayed as a lifecycle issue too.
      runEvents('r2', 's1', 10).create('approval.resolved', { approvalId: 'a1', decision: 'approved' }),
      // Already an invalid_sequence issue: the store's own sequence refusal is not repeated.
      { ...events.create('message.started', { messageId: 'm1', role: 'assistant' }), sequence: 1 },
    ];
    expect(issuesOf(all, { command: approve, initialSequence: 3, events: answer, runEvents: run })).toEqual([
      ['inconsistent_run', 1],
      ['invalid_sequence', 2],
    ]);
  });
});
