/** Every code a protocol issue can carry. */
export const AGENT_PROTOCOL_ISSUE_CODES = [
  'invalid_event',
  'invalid_sequence',
  'duplicate_event_id',
  'missing_run',
  'terminal_run',
  'missing_entity',
  'duplicate_entity',
  'invalid_transition',
  'session_mismatch',
  'active_entities_at_terminal',
  'invalid_patch',
] as const;

export type AgentProtocolIssueCode = (typeof AGENT_PROTOCOL_ISSUE_CODES)[number];

/**
 * An event the store (or the provider validator) did not accept, with the reason.
 * `event` is the offending event as received (a JSON copy when it was not a valid event).
 */
export interface AgentProtocolIssue {
  code: AgentProtocolIssueCode;
  message: string;
  event: unknown;
  runId?: string | undefined;
  entityId?: string | undefined;
  /** The lifecycle state the event met, when an entity or run refused it. */
  state?: string | undefined;
}
