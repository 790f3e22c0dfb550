import { SeenEvents } from '../machines/SeenEvents';
import type { AgentEvent, AgentEventType } from '../protocol/eventSchemas';
import { checkAgentEvent, checkStreamedDelta } from '../protocol/parseAgentEvent';
import type { AnyAgentProvider } from './AgentProvider';
import { AgentRunTracker } from './AgentRunTracker';

/**
 * Why the gate refused an event: it breaks the contract, it reuses the id of another event
 * of the run, or a resumed stream lost events.
 */
export type EventRefusalCode = 'invalid_event' | 'duplicate_event_id' | 'resume_gap';

/**
 * Checks each event a provider emits, from a run's stream or a command's, before the store
 * sees it: valid, of the run's session and run, of a declared type, and after the last
 * sequence. It follows the run's lifecycle too. A refusal goes to `refuse`, which throws
 * the error of its caller (`AgentProviderError` for a run, `AgentCommandError` for a command).
 *
 * Right after a stream reconnects (`expectRepeats`), a server may send again what it sent
 * before the break: until the first new event, `admitOrAbsorb` absorbs events at or below
 * the last sequence, and refuses a first new event that skips sequences as `resume_gap`.
 *
 * Event ids: the sequence is an event's place in its run, so an id this gate has passed,
 * coming again past the last sequence, is another event reusing the id (which the store
 * would drop as a redelivery): refused as `duplicate_event_id`. The same id at a place
 * already taken is that event again: a repeat after a reconnect, absorbed as above (and by
 * the store), or, in the middle of a stream, a sequence that does not increase.
 */
export class EventGate {
  /** The current run's lifecycle: the run the gate was made for, or the follow-on run it follows since. */
  tracker = new AgentRunTracker();
  /** Runs of the stream that ended before the current one, in order (`followOnRuns`). */
  readonly endedRuns: { runId: string; tracker: AgentRunTracker }[] = [];
  private currentRunId: string;
  private readonly followOnRuns: boolean;
  private readonly declared: ReadonlySet<AgentEventType>;
  lastSequence: number;
  private repeatsExpected = false;
  private readonly ids = new SeenEvents();

  constructor(
    provider: AnyAgentProvider,
    private readonly sessionId: string,
    runId: string,
    initialSequence: number,
    private readonly refuse: (reason: string, event: unknown, code: EventRefusalCode) => never,
  ) {
    this.declared = new Set(provider.capabilities.eventTypes);
    this.lastSequence = initialSequence;
    this.currentRunId = runId;
    this.followOnRuns = provider.capabilities.followOnRuns === true;
  }

  /** The run events are checked against: the gate's own, or the follow-on run it follows since. */
  get runId(): string {
    return this.currentRunId;
  }

  admit(value: unknown): AgentEvent {
    const event = this.check(value);
    this.checkId(event);
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
    this.checkId(event);
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

  /**
   * The runner's own events, which close what a provider left open (Stop, a failure, a
   * missing terminal): checked as any event, except against the provider's declared types,
   * since they are the runner's and not the provider's.
   */
  admitOwn(event: AgentEvent): AgentEvent {
    this.ids.add(event.eventId);
    return this.accept(this.check(event, false));
  }

  /** Refuses an id this gate has passed, coming again past the last sequence: another event reusing it. */
  private checkId(event: AgentEvent): void {
    if (this.ids.tryAdd(event.eventId) || event.sequence <= this.lastSequence) return;
    this.refuse(
      `emitted ${event.type} at sequence ${event.sequence} with event id "${event.eventId}", the id of an earlier event of the run`,
      event,
      'duplicate_event_id',
    );
  }

  /**
   * Whether the event starts a follow-on run, which the gate then follows: a provider that
   * declares `followOnRuns` starts one with a `run.started` under a run id not seen yet, once
   * the current run ended. Its events are numbered from 1.
   */
  private followOnRun(event: AgentEvent): boolean {
    if (!this.followOnRuns || event.type !== 'run.started' || !this.tracker.hasEnded) return false;
    const runIds = [this.currentRunId, ...this.endedRuns.map((run) => run.runId)];
    if (runIds.includes(event.runId)) return false;
    this.endedRuns.push({ runId: this.currentRunId, tracker: this.tracker });
    this.currentRunId = event.runId;
    this.tracker = new AgentRunTracker();
    this.lastSequence = 0;
    return true;
  }

  /** Everything but the sequence and the id. */
  private check(value: unknown, declaredOnly = true): AgentEvent {
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
    if (event.runId !== this.runId && !this.followOnRun(event))
      this.refuse(`emitted ${event.type} for run "${event.runId}" in run "${this.runId}"`, event, 'invalid_event');
    if (declaredOnly && !this.declared.has(event.type))
      this.refuse(`emitted ${event.type}, which its capabilities do not declare`, event, 'invalid_event');
    return event;
  }

  private accept(event: AgentEvent): AgentEvent {
    this.lastSequence = event.sequence;
    this.tracker.observe(event);
    return event;
  }
}
