import type { AgentEvent } from '../../protocol/eventSchemas';
import type { EntityHandle } from './handles';

/**
 * Streamed deltas waiting for their entity's machine. Consecutive deltas of one entity are
 * kept as pieces on its handle and handed to the machine as one event: before any other
 * event touches that entity (`flushEntity`) and before anything reads the store (`flush`).
 * This class is the only place that holds pending deltas, so the store's read paths all go
 * through `flush`.
 */
export class DeltaCoalescer {
  private pending: EntityHandle[] = [];

  /** @param record gives the projection the entity's record after its machine took the deltas. */
  constructor(private readonly record: (handle: EntityHandle) => void) {}

  /** Adds a delta to its entity's pending text; the machine gets it at the next flush. */
  push(handle: EntityHandle, event: AgentEvent, delta: string): void {
    if (handle.pendingEvent === undefined) this.pending.push(handle);
    handle.pendingDelta.push(delta);
    handle.pendingEvent = event;
  }

  /** Hands one entity's pending deltas to its machine as one event. */
  flushEntity(handle: EntityHandle): void {
    const last = handle.pendingEvent;
    if (last === undefined || handle.ref === undefined) return;
    // Joined into one flat string: the machine appends it to the text, and a string built
    // by `+=` from hundreds of pieces made that transition take about twice as long.
    const pieces = handle.pendingDelta;
    const delta = pieces.length === 1 ? (pieces[0] as string) : pieces.join('');
    pieces.length = 0;
    handle.pendingEvent = undefined;
    handle.ref.send({ ...last, payload: { ...last.payload, delta } });
    this.record(handle);
  }

  /** Hands every entity's pending deltas to its machine. */
  flush(): void {
    if (this.pending.length === 0) return;
    const handles = this.pending;
    this.pending = [];
    for (const handle of handles) this.flushEntity(handle);
  }

  /** Forgets pending deltas, on the handles too (the store is being rebuilt or destroyed). */
  clear(): void {
    for (const handle of this.pending) {
      handle.pendingDelta.length = 0;
      handle.pendingEvent = undefined;
    }
    this.pending = [];
  }
}
