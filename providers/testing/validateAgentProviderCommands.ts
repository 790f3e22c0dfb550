import { createAgentStore } from '../../machines/createAgentStore';
import type { AgentCommand } from '../../protocol/commandSchemas';
import type { AgentEvent } from '../../protocol/eventSchemas';
import { checkAgentEvent, parseAgentCommand } from '../../protocol/parseAgentEvent';
import type { AgentProviderCapabilities } from '../AgentProvider';

export type AgentProviderCommandValidationCode =
  | 'invalid_command'
  | 'undeclared_command'
  | 'invalid_event'
  | 'undeclared_event_type'
  | 'duplicate_event_id'
  | 'invalid_sequence'
  | 'inconsistent_run'
  | 'invalid_lifecycle';

export interface AgentProviderCommandValidationIssue {
  code: AgentProviderCommandValidationCode;
  message: string;
  /** Position of the offending event among the command's events, when one event is at fault. */
  index?: number;
  event?: unknown;
}

export interface AgentProviderCommandRecord {
  command: AgentCommand;
  /** The run's last sequence when the command was sent (`runAgentCommand`'s `initialSequence`). */
  initialSequence: number;
  /** What `executeCommand` yielded, in order. */
  events: readonly unknown[];
  /**
   * The run's own events before the command, when known: the command's events are then
   * replayed after them through the store's machines, and every lifecycle rule they break is
   * reported (`invalid_lifecycle`).
   */
  runEvents?: readonly AgentEvent[];
}

/**
 * Checks what a provider's `executeCommand` answered one command with against the
 * contract `runAgentCommand` enforces: the command valid and declared in
 * `capabilities.commands`, every event valid and declared, of the command's session and
 * run, with a unique id, and sequences after `initialSequence` and increasing; with
 * `runEvents`, the lifecycle rules too. Exported by `agent-machines/providers` and
 * `agent-machines/testing`, beside `validateAgentProviderEvents`.
 *
 * @example
 * const events: AgentEvent[] = [];
 * for await (const event of provider.executeCommand(command, { signal, initialSequence: 7 })) events.push(event);
 * expect(validateAgentProviderCommands(provider.capabilities, { command, initialSequence: 7, events })).toEqual([]);
 */
export function validateAgentProviderCommands(
  capabilities: AgentProviderCapabilities,
  record: AgentProviderCommandRecord,
): AgentProviderCommandValidationIssue[] {
  const issues: AgentProviderCommandValidationIssue[] = [];
  const parsed = parseAgentCommand(record.command);
  if (!parsed.success) {
    issues.push({ code: 'invalid_command', message: `The command is invalid: ${parsed.error.message}` });
    return issues;
  }
  const command = parsed.value;
  if (!(capabilities.commands ?? []).includes(command.type)) {
    issues.push({ code: 'undeclared_command', message: `${command.type} is not in capabilities.commands` });
  }
  const declared = new Set<string>(capabilities.eventTypes);
  const seen = new Set<string>((record.runEvents ?? []).map((event) => event.eventId));
  const valid: AgentEvent[] = [];
  const positions = new Map<AgentEvent, number>();
  let lastSequence = record.initialSequence;
  for (const [index, value] of record.events.entries()) {
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
    valid.push(event);
    positions.set(event, index);
    if (event.sessionId !== command.sessionId || event.runId !== command.runId) {
      const message = `Event ${index} belongs to ${event.sessionId}/${event.runId}, not the command's ${command.sessionId}/${command.runId}`;
      issues.push({ code: 'inconsistent_run', message, index, event });
    }
    if (!declared.has(event.type)) {
      const message = `Event ${index} is ${event.type}, which the capabilities do not declare`;
      issues.push({ code: 'undeclared_event_type', message, index, event });
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
      const message = `Event ${index} has sequence ${event.sequence} after ${lastSequence}`;
      issues.push({ code: 'invalid_sequence', message, index, event });
    }
    lastSequence = Math.max(lastSequence, event.sequence);
  }
  if (record.runEvents === undefined) return issues;
  // Lifecycle rules come from the machines: replay the run, then what the command answered.
  const store = createAgentStore();
  store.batch(record.runEvents);
  const before = store.getSnapshot().issues.length;
  store.batch(valid.filter((event) => event.sessionId === command.sessionId && event.runId === command.runId));
  for (const issue of store.getSnapshot().issues.slice(before)) {
    if (issue.code === 'invalid_sequence' || issue.code === 'session_mismatch') continue;
    const index = positions.get(issue.event as AgentEvent);
    issues.push(
      index === undefined
        ? { code: 'invalid_lifecycle', message: issue.message, event: issue.event }
        : { code: 'invalid_lifecycle', message: issue.message, index, event: issue.event },
    );
  }
  store.destroy();
  return issues;
}
