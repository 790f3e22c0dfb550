import type { AgentState } from '../machines/agentState';
import { parseAgentState } from '../machines/agentStateSchema';
import { type AgentStore, createAgentStore } from '../machines/createAgentStore';
import type { AgentCommand } from '../protocol/commandSchemas';
import type { AgentEventLog, AgentSessionSnapshot } from './AgentEventLog';
import { AgentEventLogError } from './AgentEventLogError';
import { AgentHostError } from './AgentHostError';

const PAGE = 1000;
/** A state this small is snapshotted at every run end; a larger one only once as many bytes came since. */
const SMALL_STATE_BYTES = 64 * 1024;

const bytesOfEvents = (entries: readonly { event: unknown }[]) =>
  entries.reduce((sum, entry) => sum + (JSON.stringify(entry.event)?.length ?? 0), 0);

interface SessionEntry {
  store: AgentStore;
  /** The log cursor of the last event the store applied; `undefined` before any. */
  cursor: string | undefined;
  /** Events applied since the last snapshot this entry saved, and their bytes (JSON). */
  sinceSnapshot: number;
  sinceSnapshotBytes: number;
  /** About how large the state is: the bytes of the events applied to it (and of the snapshot it started from). */
  stateBytes: number;
  /** The log refused a snapshot of this state as too large: no more are tried while it only grows. */
  tooLarge: boolean;
  /** The sync in progress, which the next caller joins: one reader of the log per session. */
  syncing: Promise<void> | undefined;
  /** Whether the store has looked for the session's snapshot, which a new store starts from. */
  started: boolean;
  /** A `refresh` is waiting to read: later ones join it. */
  refreshing: boolean;
  /** Callers reading or using it now: no bound evicts it until they are done. */
  readers: number;
}

/** A session's AgentState and the log cursor it is at. */
export interface SessionStateAt {
  state: AgentState;
  cursor: string | undefined;
}

/**
 * The host's AgentState of each session, a headless store fed from the event log in log
 * order, so it is the same on every instance whatever instance ran which run. It reads only
 * what was appended since it last looked. When the log trimmed entries it has not read, it
 * starts again from the session's snapshot, and it saves a snapshot every
 * `snapshotEvery` events or `snapshotEveryBytes` bytes of them, so a trimmed log always has
 * one to start from. At a run's end it saves one only while the state is small, or once as
 * many bytes of events came since the last as the state holds: a large state is not written
 * whole at every run end, and what snapshots write stays proportional to what is appended.
 *
 * It keeps at most `maxCachedSessions` states and about `maxCachedStateBytes` of them (each
 * counted as the JSON of the events and snapshot it was built from): past either bound the
 * least recently used states go, but none being read right now, and a session whose state
 * went is read again from its snapshot and the log when it is next asked for.
 */
export class SessionStates {
  private readonly sessions = new Map<string, SessionEntry>();

  constructor(
    private readonly log: AgentEventLog,
    private readonly options: {
      maxCachedSessions: number;
      /** About how many bytes of states are kept (see `cachedStateBytes`). */
      maxCachedStateBytes: number;
      snapshotEvery: number;
      /** A snapshot after this many bytes of events (their JSON) since the last. Default 4 MiB. */
      snapshotEveryBytes?: number;
      /** The log lost a session's events past what this instance holds: its state started over. */
      onLost: (sessionId: string, error: AgentHostError) => void;
    },
  ) {
    for (const name of ['maxCachedSessions', 'maxCachedStateBytes'] as const) {
      const value = options[name];
      if (!Number.isSafeInteger(value) || value < 1) {
        throw new RangeError(`${name} must be a positive integer, got ${value}`);
      }
    }
  }

  /** The session's state after everything appended so far. */
  sync(sessionId: string): Promise<SessionStateAt> {
    return this.withSynced(sessionId, (entry) => ({ state: entry.store.getSnapshot(), cursor: entry.cursor }));
  }

  /**
   * About how many bytes of states this holds (the JSON of the events and snapshots they were
   * built from): of one session (0 when its state is not kept), or of all of them.
   */
  cachedStateBytes(sessionId?: string): number {
    if (sessionId !== undefined) return this.sessions.get(sessionId)?.stateBytes ?? 0;
    let bytes = 0;
    for (const entry of this.sessions.values()) bytes += entry.stateBytes;
    return bytes;
  }

  /** Reads what was appended, in the background; calls made while one waits to read join it. */
  refresh(sessionId: string, onError: (error: unknown) => void): void {
    const entry = this.entry(sessionId);
    if (entry.refreshing) return;
    entry.refreshing = true;
    const run = async () => {
      while (entry.syncing !== undefined) await entry.syncing;
      entry.refreshing = false;
      await this.sync(sessionId);
    };
    run().catch((error) => {
      entry.refreshing = false;
      onError(error);
    });
  }

  /** Whether the session's machines, as of everything appended so far, take the command now. */
  can(sessionId: string, command: AgentCommand): Promise<boolean> {
    return this.withSynced(sessionId, (entry) => entry.store.can(command));
  }

  /** Saves the session's snapshot now (a run ended), when the store has read anything since the last one. */
  async saveSnapshot(sessionId: string): Promise<void> {
    const due = await this.withSynced(sessionId, (entry) => {
      const { cursor } = entry;
      if (cursor === undefined || entry.sinceSnapshot === 0 || entry.tooLarge) return undefined;
      if (entry.stateBytes > SMALL_STATE_BYTES && entry.sinceSnapshotBytes < entry.stateBytes) return undefined;
      return { entry, state: entry.store.getSnapshot(), cursor };
    });
    if (due !== undefined) await this.snapshot(sessionId, due.entry, due.state, due.cursor);
  }

  /** Saves a snapshot; a state the log refuses as too large is not tried again while it grows. */
  private async snapshot(sessionId: string, entry: SessionEntry, state: AgentState, cursor: string): Promise<void> {
    entry.sinceSnapshot = 0;
    entry.sinceSnapshotBytes = 0;
    try {
      await this.log.saveSnapshot(sessionId, { state, cursor });
    } catch (error) {
      if (AgentEventLogError.isInstance(error) && error.code === 'too_large') entry.tooLarge = true;
      throw error;
    }
  }

  destroy(): void {
    for (const entry of this.sessions.values()) entry.store.destroy();
    this.sessions.clear();
  }

  /**
   * Reads what was appended to the session (one reader of the log per session: a caller
   * joins the read in progress, then reads what came since), then `use`s its entry. The
   * entry is held while this runs, so no bound evicts it from under the caller; the bounds
   * are enforced once it is let go.
   */
  private async withSynced<Result>(sessionId: string, use: (entry: SessionEntry) => Result): Promise<Result> {
    const entry = this.entry(sessionId);
    entry.readers += 1;
    try {
      while (entry.syncing !== undefined) await entry.syncing;
      entry.syncing = this.readNew(sessionId, entry).finally(() => {
        entry.syncing = undefined;
      });
      await entry.syncing;
      return use(entry);
    } finally {
      entry.readers -= 1;
      this.evictPastBounds(undefined);
    }
  }

  /**
   * Past either bound, the least recently used states go, but none held by a reader (nor
   * `keep`, the one just created). The most recently used goes too when it alone is past the
   * byte bound: it is read again, from its snapshot and what the log holds, when next asked for.
   */
  private evictPastBounds(keep: SessionEntry | undefined): void {
    let bytes = this.cachedStateBytes();
    for (const [sessionId, entry] of this.sessions) {
      if (this.sessions.size <= this.options.maxCachedSessions && bytes <= this.options.maxCachedStateBytes) return;
      if (entry.readers > 0 || entry.syncing !== undefined || entry === keep) continue;
      bytes -= entry.stateBytes;
      entry.store.destroy();
      this.sessions.delete(sessionId);
    }
  }

  private entry(sessionId: string): SessionEntry {
    let entry = this.sessions.get(sessionId);
    if (entry !== undefined) {
      // Least recently used last: a Map keeps insertion order.
      this.sessions.delete(sessionId);
      this.sessions.set(sessionId, entry);
      return entry;
    }
    entry = {
      store: createAgentStore(),
      cursor: undefined,
      sinceSnapshot: 0,
      sinceSnapshotBytes: 0,
      stateBytes: 0,
      tooLarge: false,
      syncing: undefined,
      started: false,
      refreshing: false,
      readers: 0,
    };
    this.sessions.set(sessionId, entry);
    this.evictPastBounds(entry);
    return entry;
  }

  private async readNew(sessionId: string, entry: SessionEntry): Promise<void> {
    if (!entry.started) {
      // The log may have trimmed the session's first events: the snapshot holds them.
      const snapshot = await this.log.loadSnapshot(sessionId);
      if (snapshot !== undefined) this.startFrom(entry, snapshot);
      entry.started = true;
    }
    for (;;) {
      let page: Awaited<ReturnType<AgentEventLog['read']>>;
      try {
        page = await this.log.read(sessionId, { after: entry.cursor, limit: PAGE });
      } catch (error) {
        if (!AgentEventLogError.isInstance(error) || error.code !== 'cursor_expired') throw error;
        await this.startFromSnapshot(sessionId, entry);
        continue;
      }
      if (page.length === 0) return;
      entry.store.batch(page.map((logEntry) => logEntry.event));
      entry.cursor = (page[page.length - 1] as { cursor: string }).cursor;
      const bytes = bytesOfEvents(page);
      entry.sinceSnapshot += page.length;
      entry.sinceSnapshotBytes += bytes;
      entry.stateBytes += bytes;
      const due =
        entry.sinceSnapshot >= this.options.snapshotEvery ||
        entry.sinceSnapshotBytes >= (this.options.snapshotEveryBytes ?? 4 * 1024 * 1024);
      if (due && !entry.tooLarge) {
        // A state too large for the log is reported when a run ends (onError), not to every reader.
        await this.snapshot(sessionId, entry, entry.store.getSnapshot(), entry.cursor).catch((error: unknown) => {
          if (!AgentEventLogError.isInstance(error) || error.code !== 'too_large') throw error;
        });
      }
      if (page.length < PAGE) return;
    }
  }

  /**
   * The log no longer holds what comes after this entry's cursor. A later snapshot carries
   * the session on. Without one, the log lost the session (its TTL passed, Redis was emptied
   * or evicted it, or it was trimmed past its last snapshot): the session starts over from
   * its snapshot where the log kept one, otherwise from nothing, and reads whatever the log
   * holds for it from the oldest entry, as an instance that never saw it would. A user is
   * never locked out of a session the log dropped; readers with cursors from before get
   * `cursor_expired`.
   */
  private async startFromSnapshot(sessionId: string, entry: SessionEntry): Promise<void> {
    const snapshot = await this.log.loadSnapshot(sessionId);
    if (snapshot !== undefined && snapshot.cursor !== entry.cursor) {
      this.startFrom(entry, snapshot);
      return;
    }
    const lostAfter = entry.cursor;
    if (snapshot !== undefined) this.startFrom(entry, snapshot);
    else {
      entry.store.destroy();
      entry.store = createAgentStore();
    }
    // No cursor: the next read starts at the oldest entry the log holds, and `/state` says
    // so (`cursor: null`), so a client that resets to it reads on from there.
    entry.cursor = undefined;
    entry.sinceSnapshot = 0;
    entry.sinceSnapshotBytes = 0;
    entry.stateBytes = snapshot === undefined ? 0 : entry.stateBytes;
    entry.tooLarge = false;
    const from = snapshot === undefined ? 'nothing' : `its snapshot at cursor ${JSON.stringify(snapshot.cursor)}`;
    this.options.onLost(
      sessionId,
      new AgentHostError(
        'cursor_expired',
        `The event log no longer holds session "${sessionId}" after cursor ${JSON.stringify(lostAfter)}: it starts over from ${from}`,
      ),
    );
  }

  private startFrom(entry: SessionEntry, snapshot: AgentSessionSnapshot): void {
    entry.store.reset(parseAgentState(snapshot.state));
    entry.cursor = snapshot.cursor;
    entry.sinceSnapshot = 0;
    entry.sinceSnapshotBytes = 0;
    entry.stateBytes = JSON.stringify(snapshot.state)?.length ?? 0;
    entry.tooLarge = false;
  }
}
