import type { EncodedEntry } from './SessionFeed';

/**
 * Which runs of the session an event stream shows: every run (`undefined`, the stream never
 * ends by itself); `runIds`, in log order, the stream ending after the last one's terminal
 * event; or, with `continuing`, the run that continues one of those runs, from its
 * `run.started` on (the host starts it while the stream opens), ending after its terminal.
 */
export type StreamRunSelection = { runIds: readonly string[] } | { continuing: readonly string[] } | undefined;

const RUN_TERMINALS: ReadonlySet<string> = new Set(['run.completed', 'run.failed', 'run.cancelled']);

/** A stream's run filter, in constant work per entry. */
export class StreamRuns {
  private readonly shown: Set<string> | undefined;
  private readonly continuing: ReadonlySet<string>;
  private lastRun: string | undefined;

  constructor(selection: StreamRunSelection) {
    this.shown = selection === undefined ? undefined : new Set('runIds' in selection ? selection.runIds : []);
    this.continuing = new Set(selection !== undefined && 'continuing' in selection ? selection.continuing : []);
    this.lastRun = selection !== undefined && 'runIds' in selection ? selection.runIds.at(-1) : undefined;
  }

  /** The run whose end ends the stream, once known: the one the stream waits on. */
  get last(): string | undefined {
    return this.lastRun;
  }

  /** Whether `entry` is the `run.started` of a run the stream shows: authorization is asked again before it. */
  startsShownRun(entry: EncodedEntry): boolean {
    if (entry.type !== 'run.started') return false;
    return this.shown === undefined || this.shown.has(entry.runId) || this.isContinuation(entry);
  }

  /** Whether the stream shows `entry`; the `run.started` of the run continuing one it waits on adds that run. */
  shows(entry: EncodedEntry): boolean {
    if (this.shown === undefined) return true;
    if (this.isContinuation(entry)) {
      this.lastRun = entry.runId;
      this.shown.add(entry.runId);
    }
    return this.shown.has(entry.runId);
  }

  /** Whether the stream ends after `entry` (one it shows): the last run's terminal event. */
  endsWith(entry: EncodedEntry): boolean {
    return this.lastRun !== undefined && entry.runId === this.lastRun && RUN_TERMINALS.has(entry.type);
  }

  private isContinuation(entry: EncodedEntry): boolean {
    if (this.lastRun !== undefined || entry.event.type !== 'run.started') return false;
    const continued = entry.event.payload.continuesRunId;
    return continued !== undefined && this.continuing.has(continued);
  }
}
