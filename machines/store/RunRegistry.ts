import type { AgentStateProjection } from '../agentStateProjection';
import { SeenEvents } from '../SeenEvents';
import { emptyEntityMaps, type RunHandle } from './handles';

/** What a strict batch needs to undo what it remembered: every id it added, and each run's restore point. */
interface Journal {
  added: Array<[RunHandle, string]>;
  restoredSequences: Map<string, number>;
  seenByRun: Map<string, SeenEvents>;
}

/**
 * The store's runs: one handle per run id it has heard of, the event ids each has seen
 * (idempotency), each run's last sequence, and the journal that lets a failed strict batch
 * forget the ids it remembered. The projection learns a moved sequence at the next read,
 * not once per event.
 */
export class RunRegistry {
  private readonly runs = new Map<string, RunHandle>();
  private sequenceChanges: RunHandle[] = [];
  private journal: Journal | undefined;

  get(runId: string): RunHandle | undefined {
    return this.runs.get(runId);
  }

  /** The run's handle, made (status `unknown`, no session yet) on first mention. */
  getOrCreate(runId: string): RunHandle {
    let run = this.runs.get(runId);
    if (run === undefined) {
      run = {
        runId,
        sessionId: '',
        status: 'unknown',
        ref: undefined,
        entities: emptyEntityMaps(),
        live: new Set(),
        seen: new SeenEvents(),
        lastSequence: -1,
        sequenceDirty: false,
        restoredSequence: -1,
      };
      this.runs.set(runId, run);
    }
    return run;
  }

  values(): IterableIterator<RunHandle> {
    return this.runs.values();
  }

  /** Remembers an event id, and moves the run's sequence when the event was the run's to count. */
  remember(run: RunHandle, eventId: string, sequence: number | undefined): void {
    run.seen.add(eventId);
    this.journal?.added.push([run, eventId]);
    if (sequence !== undefined) this.advance(run, sequence);
  }

  /** `remember` for the delta path, whose id the caller has already added with `seen.tryAdd`. */
  rememberAdded(run: RunHandle, eventId: string, sequence: number): void {
    this.journal?.added.push([run, eventId]);
    this.advance(run, sequence);
  }

  private advance(run: RunHandle, sequence: number): void {
    run.lastSequence = sequence;
    if (!run.sequenceDirty) {
      run.sequenceDirty = true;
      this.sequenceChanges.push(run);
    }
  }

  /** Hands moved sequences to the projection; part of bringing it up to date before a read. */
  flushSequences(projection: AgentStateProjection): void {
    if (this.sequenceChanges.length === 0) return;
    for (const run of this.sequenceChanges) {
      run.sequenceDirty = false;
      projection.setSequence(run.runId, run.lastSequence);
    }
    this.sequenceChanges = [];
  }

  /** Starts journaling, for a strict batch. */
  beginJournal(): void {
    const seenByRun = new Map<string, SeenEvents>();
    const restoredSequences = new Map<string, number>();
    for (const [runId, run] of this.runs) {
      seenByRun.set(runId, run.seen);
      restoredSequences.set(runId, run.restoredSequence);
    }
    this.journal = { added: [], restoredSequences, seenByRun };
  }

  /**
   * Ends journaling and forgets every id remembered since `beginJournal`. Returns what a
   * rebuilt registry takes back: each run's seen ids and restore point as they were.
   */
  rollBack(): RegistryRestorePoint {
    const journal = this.journal;
    this.journal = undefined;
    if (journal === undefined) return { seenByRun: new Map(), restoredSequences: new Map() };
    for (const [run, eventId] of journal.added) run.seen.delete(eventId);
    return { seenByRun: journal.seenByRun, restoredSequences: journal.restoredSequences };
  }

  endJournal(): void {
    this.journal = undefined;
  }
}

/** What a registry rebuilt after a failed strict batch takes from the one before it. */
export interface RegistryRestorePoint {
  seenByRun: ReadonlyMap<string, SeenEvents>;
  restoredSequences: ReadonlyMap<string, number>;
}
