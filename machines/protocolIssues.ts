import type { AgentProtocolIssue, AgentProtocolIssueCode } from '../protocol/protocolIssue';

/** Whether a value names a run and an event: an issue about it can say which. */
export function hasIdentity(value: unknown): value is { runId: string; eventId: string } {
  if (typeof value !== 'object' || value === null) return false;
  const { runId, eventId } = value as Record<string, unknown>;
  return typeof runId === 'string' && runId !== '' && typeof eventId === 'string' && eventId !== '';
}

/** An issue about an event, naming its run (and entity and state, when given). */
export function createIssue(
  code: AgentProtocolIssueCode,
  message: string,
  event: unknown,
  extra: Pick<AgentProtocolIssue, 'entityId' | 'state'> = {},
): AgentProtocolIssue {
  const issue: AgentProtocolIssue = { code, message, event };
  if (hasIdentity(event)) issue.runId = event.runId;
  if (extra.entityId !== undefined) issue.entityId = extra.entityId;
  if (extra.state !== undefined) issue.state = extra.state;
  return issue;
}
