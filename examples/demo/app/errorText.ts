/** An error as the page shows it: one sentence by its code, never a class name or a stack. */
const SENTENCES: Record<string, string> = {
  // AgentCommandError
  invalid_command: 'That action no longer applies to the run as it is now.',
  unsupported_capability: 'This provider cannot do that.',
  provider_error: 'The agent could not carry out that action.',
  protocol_error: 'The agent answered that action with something it should not have.',
  interrupted: 'That action was interrupted before the agent answered.',
  restoring: 'The conversation is still being restored; try again in a moment.',
  runtime_destroyed: 'This conversation was closed.',
  // AgentProviderError and the connection
  resume_unsupported: 'This run cannot be resumed after a reload.',
  resume_gap: 'Part of the run was lost while reconnecting.',
  invalid_cursor: 'The run could not be resumed from where it was.',
  unsupported_protocol: 'The agent speaks a protocol this page does not.',
  undeclared_transport: 'The agent streamed over a transport it did not declare.',
  invalid_event: 'The agent sent an event that breaks the protocol.',
  duplicate_event_id: 'The agent sent two different events with the same id.',
  // The checkpoint
  incomplete_checkpoint: 'The saved conversation stops before a run went on; continue it from the run.',
};

/** What went wrong, in words: the sentence for its code, else its own message. */
export function errorText(error: unknown): string {
  if (typeof error === 'object' && error !== null) {
    const { code, message } = error as { code?: unknown; message?: unknown };
    if (typeof code === 'string' && code in SENTENCES) return SENTENCES[code] as string;
    if (typeof message === 'string' && message !== '') return message;
  }
  return 'Something went wrong.';
}
