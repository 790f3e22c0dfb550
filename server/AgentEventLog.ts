import type { AgentCommand } from '../protocol/commandSchemas';
import type { AgentErrorInfo, AgentEvent } from '../protocol/eventSchemas';

/** One event of a session's log and the cursor the log gave it. */
export interface AgentEventLogEntry {
  cursor: string;
  event: AgentEvent;
}

/** A session's AgentState as it was after the entry at `cursor` (plain JSON; checked when read). */
export interface AgentSessionSnapshot {
  state: unknown;
  cursor: string;
}

/** How a command ended on the host, recorded under its idempotency key. */
export type AgentCommandOutcome =
  | { status: 'accepted'; events: readonly AgentEvent[] }
  | { status: 'failed'; error: AgentErrorInfo };

/** A command's idempotency record: `pending` while the first request for the key is executing it. */
export type AgentCommandRecord =
  | { status: 'pending'; fingerprint: string }
  | { status: 'settled'; fingerprint: string; outcome: AgentCommandOutcome };

/** What one host instance asks the instance that runs a run to do. */
export interface AgentHostSignal {
  type: 'command';
  command: AgentCommand;
}

export interface AgentEventLogReadOptions {
  /** Entries after this cursor; missing means from the oldest retained entry. */
  after?: string | undefined;
  /** At most this many entries. */
  limit: number;
  /**
   * At most about this many bytes of events (their JSON): the page ends before the entry that
   * would pass it, but holds at least one entry. Default: no byte bound, only `limit`.
   */
  maxBytes?: number | undefined;
}

export interface AgentEventLogFollowOptions extends AgentEventLogReadOptions {
  /** When nothing is after `after` yet, wait this long for an entry, then resolve `[]`. */
  timeoutMs: number;
  /** Resolves `[]` as soon as it aborts. */
  signal?: AbortSignal | undefined;
}

/**
 * Where a host writes every event of every session before any client sees it, and what
 * host instances share: run leases (exactly one instance runs a run), command idempotency
 * records, signals to the instance that runs a run, and session snapshots.
 *
 * Cursors are opaque strings, increasing within a session in the order of `append`. A
 * log is bounded, in entries and in bytes: it keeps the newest entries of each session (and
 * drops idle sessions), so a reader far behind gets `cursor_expired` and starts again from a
 * snapshot. What a bound drops is never dropped silently: a read after it is `cursor_expired`.
 *
 * Every method may reject with an `AgentEventLogError`; storage failures reject with code
 * `unavailable`.
 */
export interface AgentEventLog {
  /** Appends events of one session, in order; resolves with their cursors, in the same order. */
  append(sessionId: string, events: readonly AgentEvent[]): Promise<readonly string[]>;
  /**
   * The session's entries after `after`, oldest first, at most `limit`; `[]` when there are
   * none (also for a session the log never saw, when `after` is missing).
   * Rejects with `invalid_cursor` when `after` is not a cursor this log could have given
   * for the session (malformed, or past its newest entry), and with `cursor_expired` when
   * entries after `after` were dropped (trimmed by the bound, or the session expired) or the
   * log has no entries for the session at all.
   */
  read(sessionId: string, options: AgentEventLogReadOptions): Promise<readonly AgentEventLogEntry[]>;
  /** `read`, but when it would resolve `[]`, first waits up to `timeoutMs` for an append. */
  follow(sessionId: string, options: AgentEventLogFollowOptions): Promise<readonly AgentEventLogEntry[]>;
  /** The newest cursor of the session, or `undefined` when it has no entries. */
  lastCursor(sessionId: string): Promise<string | undefined>;
  /**
   * Says whose a session is (the user or tenant `authorize` allowed to write to it), so that a
   * log with bounds per client drops a client's own sessions first, never another client's.
   * The first client a session is given stays its client while the log holds it. Optional: a
   * log without such bounds leaves it out. The host calls it before a client's run is written.
   */
  assignClient?(sessionId: string, clientId: string): Promise<void>;

  /**
   * Keeps the newest snapshot of a session (a later `cursor` replaces an earlier one; an older
   * one is ignored). Rejects with `too_large` when the state is larger than the log keeps for a
   * session (the snapshot before it stays).
   */
  saveSnapshot(sessionId: string, snapshot: AgentSessionSnapshot): Promise<void>;
  loadSnapshot(sessionId: string): Promise<AgentSessionSnapshot | undefined>;

  /**
   * Takes the lease on a run for `owner` for `ttlMs` when no one holds it: `true` if taken.
   * A run's lease can be taken once only: after `releaseRun` (the run ended) it is never
   * given again, so a run id cannot be run twice.
   */
  claimRun(sessionId: string, runId: string, owner: string, ttlMs: number): Promise<boolean>;
  /** Extends `owner`'s lease; `false` when `owner` no longer holds it (it expired). */
  renewRun(sessionId: string, runId: string, owner: string, ttlMs: number): Promise<boolean>;
  /** Ends `owner`'s lease for good: the run is over. Does nothing when `owner` does not hold it. */
  releaseRun(sessionId: string, runId: string, owner: string): Promise<void>;
  /**
   * Who runs the run: `{ owner }` while a lease is held, `ended` after `releaseRun`,
   * `unowned` when no lease was ever taken or the last one expired without a release.
   */
  runOwner(
    sessionId: string,
    runId: string,
  ): Promise<{ state: 'owned'; owner: string } | { state: 'ended' } | { state: 'unowned' }>;

  /**
   * Claims a command's idempotency key: `undefined` when this call took it (the caller
   * executes the command and settles it), otherwise the record already there. The record
   * lives `ttlMs`.
   */
  claimCommand(
    sessionId: string,
    key: string,
    fingerprint: string,
    ttlMs: number,
  ): Promise<AgentCommandRecord | undefined>;
  /**
   * Records how the command of `key` (whose fingerprint is `settled.fingerprint`) ended, for
   * `ttlMs`, and wakes everyone in `awaitCommand` for it. The first outcome stays: when the
   * key is already settled, nothing changes. Resolves with the outcome that stands.
   */
  settleCommand(
    sessionId: string,
    key: string,
    settled: { fingerprint: string; outcome: AgentCommandOutcome },
    ttlMs: number,
  ): Promise<AgentCommandOutcome>;
  /**
   * Resolves the settled record of `key` as soon as there is one (at once when it is already
   * settled), or `undefined` after `timeoutMs` or when `signal` aborts.
   */
  awaitCommand(
    sessionId: string,
    key: string,
    options: { timeoutMs: number; signal?: AbortSignal | undefined },
  ): Promise<AgentCommandRecord | undefined>;

  /** Delivers a signal to the instance `owner`, if it listens; dropped otherwise. */
  signal(owner: string, signal: AgentHostSignal): Promise<void>;
  /** Listens for signals to `owner`; resolves once listening, with the function that stops it. */
  listen(owner: string, handler: (signal: AgentHostSignal) => void): Promise<() => Promise<void>>;

  /** Stops everything it started (connections, timers); pending `follow`/`awaitCommand` resolve empty. */
  close(): Promise<void>;
}
