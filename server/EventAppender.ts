import type { AgentEvent } from '../protocol/eventSchemas';
import type { AgentEventLog } from './AgentEventLog';

const nextMacrotask = (): Promise<void> =>
  new Promise((resolve) => (typeof setImmediate === 'function' ? setImmediate(resolve) : setTimeout(resolve, 0)));

/**
 * The most events one append takes. A provider that emits a whole run at once (a local one, a
 * replay) would otherwise make it one append of the whole run: hundreds of megabytes in one
 * Redis command, past its timeout, with nothing of the run in the log.
 */
export const MAX_APPEND_EVENTS = 256;

/**
 * Appends one run's events to the log in order, batching what arrives while an append is in
 * flight into the next one (at most `MAX_APPEND_EVENTS` an append): a stream's events arrive
 * synchronously in bursts (one network read holds many), so a burst costs one round trip,
 * not one per event. One append is in flight at a time, so the log keeps the run's order.
 */
export class EventAppender {
  private pending: AgentEvent[] = [];
  private flushing: Promise<void> | undefined;
  private failure: unknown;

  constructor(
    private readonly log: AgentEventLog,
    private readonly sessionId: string,
    /** Told once when an append fails; the events of that batch and later ones are not in the log. */
    private readonly onFailure: (error: unknown) => void,
    /** Told after each batch is in the log. */
    private readonly onAppended: () => void = () => {},
    /** Asked before each append: `false` (the run's lease may be lost) stops appending for good. */
    private readonly mayWrite: () => boolean = () => true,
  ) {}

  /** Whether appending stopped for good (the log failed, or the run's lease may be lost). */
  get fenced(): boolean {
    return this.failure !== undefined;
  }

  /** Stops appending for good: what is pending and what comes later is dropped. */
  fence(reason: unknown): void {
    if (this.failure !== undefined) return;
    this.failure = reason;
    this.pending = [];
    this.onFailure(reason);
  }

  push(event: AgentEvent): void {
    if (this.failure !== undefined) return;
    this.pending.push(event);
    this.flushing ??= this.flushAll();
  }

  /** Resolves once everything pushed so far is in the log (or the log failed). */
  async drain(): Promise<void> {
    while (this.flushing !== undefined) await this.flushing;
  }

  private async flushAll(): Promise<void> {
    // Let the rest of the current burst arrive first: its chunks take several microtask
    // steps each through the provider's pipeline, so wait for the macrotask after them.
    await nextMacrotask();
    try {
      while (this.pending.length > 0 && this.failure === undefined) {
        if (!this.mayWrite()) {
          this.fence(new Error('The run lease may have expired: its events are no longer written'));
          return;
        }
        const batch =
          this.pending.length <= MAX_APPEND_EVENTS ? this.pending : this.pending.slice(0, MAX_APPEND_EVENTS);
        this.pending = batch === this.pending ? [] : this.pending.slice(MAX_APPEND_EVENTS);
        await this.log.append(this.sessionId, batch);
        this.onAppended();
      }
    } catch (error) {
      this.fence(error);
    } finally {
      this.flushing = undefined;
    }
  }
}
