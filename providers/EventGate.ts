import type { AgentEvent, AgentEventType } from '../protocol/eventSchemas';
import { checkAgentEvent, checkStreamedDelta } from '../protocol/parseAgentEvent';
import type { AnyAgentProvider } from './AgentProvider';
import { AgentRunTracker } from './AgentRunTracker';

/**
 * Checks each event a provider emits, from a run's stream or a command's, before the store
 * sees it: valid, of the run's session and run, of a declared type, and after the last
 * sequence. It follows the run's lifecycle too. A refusal goes to `refuse`, which throws
 * the error of its caller (`AgentProviderError` for a run, `AgentCommandError` for a command).
 */
export class EventGate {
  readonly tracker = new AgentRunTracker();
  private readonly declared: ReadonlySet<AgentEventType>;
  lastSequence: number;

  constructor(
    provider: AnyAgentProvider,
    private readonly sessionId: string,
    private readonly runId: string,
    initialSequence: number,
    private readonly refuse: (reason: string, event: unknown) => never,
  ) {
    this.declared = new Set(provider.capabilities.eventTypes);
    this.lastSequence = initialSequence;
  }

  admit(value: unknown): AgentEvent {
    const failure = checkStreamedDelta(value) === undefined ? checkAgentEvent(value) : undefined;
    if (failure !== undefined) this.refuse(`emitted an invalid event: ${failure.message}`, value);
    const event = value as AgentEvent;
    if (event.sessionId !== this.sessionId) {
      this.refuse(
        `emitted ${event.type} for session "${event.sessionId}" in a run of session "${this.sessionId}"`,
        event,
      );
    }
    if (event.runId !== this.runId)
      this.refuse(`emitted ${event.type} for run "${event.runId}" in run "${this.runId}"`, event);
    if (!this.declared.has(event.type))
      this.refuse(`emitted ${event.type}, which its capabilities do not declare`, event);
    if (event.sequence <= this.lastSequence) {
      this.refuse(`emitted sequence ${event.sequence} after ${this.lastSequence}`, event);
    }
    this.lastSequence = event.sequence;
    this.tracker.observe(event);
    return event;
  }
}
