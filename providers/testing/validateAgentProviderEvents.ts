import type { AgentState } from '../../machines/agentState';
import { createAgentStore } from '../../machines/createAgentStore';
import type { AgentEvent } from '../../protocol/eventSchemas';
import { checkAgentEvent } from '../../protocol/parseAgentEvent';
import type { AgentProviderCapabilities } from '../AgentProvider';

export type AgentProviderValidationCode =
  | 'invalid_event'
  | 'undeclared_event_type'
  | 'duplicate_event_id'
  | 'invalid_sequence'
  | 'inconsistent_run'
  | 'missing_run_start'
  | 'missing_run_terminal'
  | 'multiple_run_terminals'
  | 'invalid_lifecycle'
  | 'active_entities_at_terminal';

export interface AgentProviderValidationIssue {
  code: AgentProviderValidationCode;
  message: string;
  /** Position of the offending event in the list, when one event is at fault. */
  index?: number;
  event?: unknown;
}

const TERMINALS = new Set(['run.completed', 'run.failed', 'run.cancelled']);

/** Store issues that the checks on the list itself have already reported under their own code. */
function alreadyReported(code: string, event: unknown, starts: number): boolean {
  if (code === 'invalid_sequence' || code === 'session_mismatch') return true;
  if (code === 'missing_run') return starts === 0;
  return code === 'terminal_run' && TERMINALS.has((event as AgentEvent).type);
}

/**
 * Checks what a provider emitted for one run against the contract: every event valid and
 * declared, ids unique, sequences increasing, one session and run, exactly one start and
 * one terminal, and every lifecycle rule, which it takes from the store's machines by
 * replaying the events. Exported by `agent-machines/providers` (it needs no test runner) and
 * by `agent-machines/testing`.
 *
 * @example
 * import { validateAgentProviderEvents } from 'agent-machines/providers';
 * const events: AgentEvent[] = [];
 * await runAgentProvider({ provider, input, sessionId: 's1', onEvent: (event) => events.push(event) });
 * expect(validateAgentProviderEvents(provider.capabilities, events)).toEqual([]);
 */
export function validateAgentProviderEvents(
  capabilities: AgentProviderCapabilities,
  events: readonly unknown[],
  options: {
    /**
     * The session's AgentState before the run (what `runAgentProvider` got as `history`): a
     * run that continues another settles that run's entities, which only the history knows.
     */
    history?: AgentState;
  } = {},
): AgentProviderValidationIssue[] {
  const issues: AgentProviderValidationIssue[] = [];
  const declared = new Set<string>(capabilities.eventTypes);
  const seen = new Set<string>();
  const valid: AgentEvent[] = [];
  const positions = new Map<AgentEvent, number>();
  let owner: { sessionId: string; runId: string } | undefined;
  let lastSequence = Number.NEGATIVE_INFINITY;
  let starts = 0;
  let terminals = 0;

  for (const [index, value] of events.entries()) {
    const failure = checkAgentEvent(value);
    if (failure !== undefined) {
      issues.push({
        code: 'invalid_event',
        message: `Event ${index} is invalid: ${failure.message}`,
        index,
        event: value,
      });
      continue;
    }
    const event = value as AgentEvent;
    owner ??= { sessionId: event.sessionId, runId: event.runId };
    if (event.sessionId !== owner.sessionId || event.runId !== owner.runId) {
      issues.push({
        code: 'inconsistent_run',
        message: `Event ${index} belongs to ${event.sessionId}/${event.runId}, not ${owner.sessionId}/${owner.runId}`,
        index,
        event,
      });
      continue;
    }
    valid.push(event);
    positions.set(event, index);
    if (!declared.has(event.type)) {
      issues.push({
        code: 'undeclared_event_type',
        message: `Event ${index} is ${event.type}, which the capabilities do not declare`,
        index,
        event,
      });
    }
    if (seen.has(event.eventId)) {
      issues.push({
        code: 'duplicate_event_id',
        message: `Event ${index} repeats event id "${event.eventId}"`,
        index,
        event,
      });
    }
    seen.add(event.eventId);
    if (event.sequence <= lastSequence) {
      issues.push({
        code: 'invalid_sequence',
        message: `Event ${index} has sequence ${event.sequence} after ${lastSequence}`,
        index,
        event,
      });
    }
    lastSequence = Math.max(lastSequence, event.sequence);
    if (event.type === 'run.started') starts += 1;
    if (TERMINALS.has(event.type)) {
      terminals += 1;
      if (terminals > 1)
        issues.push({
          code: 'multiple_run_terminals',
          message: `Event ${index} is a second run terminal`,
          index,
          event,
        });
    }
  }
  if (starts === 0) issues.push({ code: 'missing_run_start', message: 'No run.started event' });
  if (starts > 1) issues.push({ code: 'invalid_lifecycle', message: `${starts} run.started events` });
  if (terminals === 0) issues.push({ code: 'missing_run_terminal', message: 'The run never ended' });

  // Lifecycle rules come from the machines: replay what was valid and read the store's issues.
  const store = createAgentStore();
  if (options.history !== undefined) store.reset(options.history);
  const before = store.getSnapshot().issues.length;
  store.batch(valid);
  for (const issue of store.getSnapshot().issues.slice(before)) {
    if (alreadyReported(issue.code, issue.event, starts)) continue;
    const code = issue.code === 'active_entities_at_terminal' ? 'active_entities_at_terminal' : 'invalid_lifecycle';
    const index = positions.get(issue.event as AgentEvent);
    issues.push(
      index === undefined
        ? { code, message: issue.message, event: issue.event }
        : { code, message: issue.message, index, event: issue.event },
    );
  }
  store.destroy();
  return issues;
}
