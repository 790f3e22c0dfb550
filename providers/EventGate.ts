import type { AgentEvent, AgentEventType } from '../protocol/eventSchemas';
import { checkAgentEvent, checkStreamedDelta } from '../protocol/parseAgentEvent';
import type { AnyAgentProvider } from './AgentProvider';
import { AgentRunTracker } from './AgentRunTracker';

/** Why the gate refused an event: it breaks the contract, or a resumed stream lost events. */
export type EventRefusalCode = 'invalid_event' | 'resume_gap';

/**
 * Checks each event a provider emits, from a run's stream or a command's, before the store
 * sees it: valid, of the run's session and run, of a declared type, and after the last
 * sequence. It follows the run's lifecycle too. A refusal goes to `refuse`, which throws
 * the error of its caller (`AgentProviderError` for a run, `AgentCommandError` for a command).
 *
 * Right after a stream reconnects (`expectRepeats`), a server may send again what it sent
 * before the break: until the first new event, `admitOrAbsorb` absorbs events at or below
 * the last sequence, and refuses a first new event that skips sequences as `resume_gap`.
 */
export class EventGate {
  readonly tracker = new AgentRunTracker();
  private readonly declared: ReadonlySet<AgentEventType>;
  lastSequence: number;
  private repeatsExpected = false;

  constructor(
    provider: AnyAgentProvider,
    private readonly sessionId: string,
    private readonly runId: string,
    initialSequence: number,
    private readonly refuse: (reason: string, event: unknown, code: EventRefusalCode) => never,
  ) {
    this.declared = new Set(provider.capabilities.eventTypes);
    this.lastSequence = initialSequence;
  }

  admit(value: unknown): AgentEvent {
    const event = this.check(value);
    if (event.sequence <= this.lastSequence) {
      this.refuse(`emitted sequence ${event.sequence} after ${this.lastSequence}`, event, 'invalid_event');
    }
    return this.accept(event);
  }

  /** From now until the first new event, events at or below the last sequence are repeats. */
  expectRepeats(): void {
    this.repeatsExpected = true;
  }

  /**
   * `admit`, except after `expectRepeats`: a repeat is absorbed (undefined), and a first new
   * event after `lastSequence + 1` is refused as `resume_gap`.
   */
  admitOrAbsorb(value: unknown): AgentEvent | undefined {
    if (!this.repeatsExpected) return this.admit(value);
    const event = this.check(value);
    if (event.sequence <= this.lastSequence) return undefined;
    this.repeatsExpected = false;
    if (event.sequence > this.lastSequence + 1) {
      const missing = event.sequence - this.lastSequence - 1;
      this.refuse(
        `resumed at sequence ${event.sequence} after ${this.lastSequence}: ${missing} event${missing === 1 ? ' is' : 's are'} missing`,
        event,
        'resume_gap',
      );
    }
    return this.accept(event);
  }

  /** Everything but the sequence. */
  private check(value: unknown): AgentEvent {
    const failure = checkStreamedDelta(value) === undefined ? checkAgentEvent(value) : undefined;
    if (failure !== undefined) this.refuse(`emitted an invalid event: ${failure.message}`, value, 'invalid_event');
    const event = value as AgentEvent;
    if (event.sessionId !== this.sessionId) {
      this.refuse(
        `emitted ${event.type} for session "${event.sessionId}" in a run of session "${this.sessionId}"`,
        event,
        'invalid_event',
      );
    }
    if (event.runId !== this.runId)
      this.refuse(`emitted ${event.type} for run "${event.runId}" in run "${this.runId}"`, event, 'invalid_event');
    if (!this.declared.has(event.type))
      this.refuse(`emitted ${event.type}, which its capabilities do not declare`, event, 'invalid_event');
    return event;
  }

  private accept(event: AgentEvent): AgentEvent {
    this.lastSequence = event.sequence;
    this.tracker.observe(event);
    return event;
  }
}
