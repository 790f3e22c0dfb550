import type { AgentEvent } from '../protocol/eventSchemas';
import type {
  AgentCommandRecord,
  AgentEventLog,
  AgentEventLogEntry,
  AgentEventLogReadOptions,
  AgentHostSignal,
  AgentSessionSnapshot,
} from './AgentEventLog';
import { AgentEventLogError } from './AgentEventLogError';

export interface MemoryEventLogOptions {
  /** The newest entries kept per session; older ones are trimmed. Default 10 000. */
  maxEntriesPerSession?: number;
  /**
   * Bytes a session holds (its entries' JSON, its snapshot, its leases and command records);
   * beyond it its oldest entries are trimmed (its newest entry always stays), and a snapshot
   * larger than half of it is refused with `too_large`. Default 16 MiB.
   */
  maxBytesPerSession?: number;
  /**
   * Bytes the whole log holds; beyond it whole sessions are dropped: the least recently
   * active session of the client that holds the most bytes (see `clientOf`). Default 256 MiB.
   */
  maxBytes?: number;
  /** A session with no append (nor lease activity) for this long is dropped, with all it holds. Default 24 h. */
  sessionTtlMs?: number;
  /**
   * Sessions kept; beyond it the least recently active session of the client that holds the
   * most sessions is dropped. Default 10 000.
   */
  maxSessions?: number;
  /**
   * Whose a session is (the user or tenant `authorize` checks it for), so that one client
   * with many or large sessions loses its own to the bounds, not another client's. Default:
   * each session is its own client (the count bound drops the least recently active session,
   * the byte bound the largest). A client given by `assignClient` (the host passes the
   * `clientId` its `authorize` returned) comes first.
   */
  clientOf?: (sessionId: string) => string;
  /** The clock of session, lease and command-record expiry. Default `Date.now`. */
  now?: () => number;
}

/** An event log in memory, which says how many bytes it holds. */
export interface MemoryEventLog extends AgentEventLog {
  /**
   * About how many bytes the log holds (JSON of entries and snapshots, leases, command
   * records): of one session, or of all of them. What the byte bounds are checked against.
   */
  retainedBytes(sessionId?: string): number;
}

type RunLease = { state: 'owned'; owner: string; expiresAt: number } | { state: 'ended' };

interface MemorySession {
  client: string;
  /** `client` came from `assignClient`, and stays. */
  assigned: boolean;
  /** Events from `head` on are retained (trimmed slots hold `undefined`); `events[head]` has cursor `firstCursor`. */
  events: Array<AgentEvent | undefined>;
  /** The size of each event's JSON, at the same index as in `events`. */
  sizes: number[];
  head: number;
  /** Bytes of the retained entries. */
  entryBytes: number;
  /** Bytes of the snapshot, leases and command records. */
  otherBytes: number;
  firstCursor: number;
  /** Cursors of this session start above every cursor the log gave before it existed. */
  startCursor: number;
  activeAt: number;
  snapshot?: { cursor: number; text: string };
  runs: Map<string, RunLease>;
  /** In order of last write, so expired records are swept from the front. */
  commands: Map<string, { record: AgentCommandRecord; expiresAt: number; bytes: number }>;
}

/** What one client holds: the bounds drop sessions of the client holding the most. */
interface ClientUsage {
  sessions: number;
  bytes: number;
}

interface Waiter {
  wake(): void;
  cancel(): void;
}

const CURSOR_PATTERN = /^[1-9][0-9]{0,15}$/;
/** Below this many trimmed slots an array is not worth copying. */
const COMPACT_AFTER = 1024;
/** What a lease or a record costs beside its strings (the map entry, the object). */
const RECORD_OVERHEAD = 64;

const leaseBytes = (runId: string) => runId.length + RECORD_OVERHEAD;
const commandBytes = (key: string, record: AgentCommandRecord) =>
  key.length + RECORD_OVERHEAD + (JSON.stringify(record)?.length ?? 0);

function positiveInteger(name: string, value: number): number {
  if (!Number.isSafeInteger(value) || value < 1) {
    throw new RangeError(`${name} must be a positive integer, got ${value}`);
  }
  return value;
}

function retainedCount(session: MemorySession): number {
  return session.events.length - session.head;
}

/**
 * An event log in this process's memory: one host instance, nothing survives a restart.
 * Cursors are decimal integers, consecutive within a session; a session created (or created
 * again after it was dropped) starts above every cursor the log gave before, so a cursor is
 * never given twice for one session. Signals go to handlers of this same object, on a later
 * microtask; a handler that throws is skipped, the others still get the signal.
 *
 * @example
 * const log = createMemoryEventLog({ maxEntriesPerSession: 5_000 });
 * const [cursor] = await log.append('s1', [events.create('run.started', {})]);
 * const next = await log.follow('s1', { after: cursor, limit: 100, timeoutMs: 15_000 });
 */
export function createMemoryEventLog(options: MemoryEventLogOptions = {}): MemoryEventLog {
  const maxEntries = positiveInteger('maxEntriesPerSession', options.maxEntriesPerSession ?? 10_000);
  const maxSessionBytes = positiveInteger('maxBytesPerSession', options.maxBytesPerSession ?? 16 * 1024 * 1024);
  const maxBytes = positiveInteger('maxBytes', options.maxBytes ?? 256 * 1024 * 1024);
  const sessionTtlMs = positiveInteger('sessionTtlMs', options.sessionTtlMs ?? 24 * 60 * 60 * 1000);
  const maxSessions = positiveInteger('maxSessions', options.maxSessions ?? 10_000);
  const clientOf = options.clientOf ?? ((sessionId: string) => sessionId);
  const now = options.now ?? Date.now;

  /** In order of last activity: the least recently active session comes first. */
  const sessions = new Map<string, MemorySession>();
  const clients = new Map<string, ClientUsage>();
  let totalBytes = 0;
  const followers = new Map<string, Set<Waiter>>();
  const commandWaiters = new Map<string, Set<Waiter>>();
  const listeners = new Map<string, Set<(signal: AgentHostSignal) => void>>();
  let highestCursor = 0;
  let closed = false;

  function ensureOpen(): void {
    if (closed) throw new AgentEventLogError('closed', 'The event log is closed');
  }

  const sessionBytes = (session: MemorySession) => session.entryBytes + session.otherBytes;

  /** Adds `bytes` (negative to take away) to what the session, its client and the log hold. */
  function account(session: MemorySession, bytes: number, kind: 'entryBytes' | 'otherBytes'): void {
    session[kind] += bytes;
    totalBytes += bytes;
    const usage = clients.get(session.client);
    if (usage) usage.bytes += bytes;
  }

  /** Drops a session with all it holds; a reader behind it gets `cursor_expired`. */
  function drop(sessionId: string, session: MemorySession): void {
    sessions.delete(sessionId);
    totalBytes -= sessionBytes(session);
    const usage = clients.get(session.client);
    if (!usage) return;
    usage.sessions -= 1;
    usage.bytes -= sessionBytes(session);
    if (usage.sessions === 0) clients.delete(session.client);
  }

  function dropExpiredSessions(): void {
    const expiredBefore = now() - sessionTtlMs;
    for (const [sessionId, session] of sessions) {
      if (session.activeAt > expiredBefore) return;
      drop(sessionId, session);
    }
  }

  /**
   * Drops the least recently active session of the client holding the most (sessions or
   * bytes), sparing `keep`: one client filling the log loses its own sessions first.
   */
  function evictOne(measure: keyof ClientUsage, keep: MemorySession): boolean {
    let most = 0;
    for (const [client, usage] of clients) {
      const held = usage[measure] - (client === keep.client ? (measure === 'sessions' ? 1 : sessionBytes(keep)) : 0);
      if (held > most) most = held;
    }
    if (most === 0) return false;
    for (const [sessionId, session] of sessions) {
      if (session === keep) continue;
      const usage = clients.get(session.client)!;
      const held =
        usage[measure] - (session.client === keep.client ? (measure === 'sessions' ? 1 : sessionBytes(keep)) : 0);
      if (held === most) {
        drop(sessionId, session);
        return true;
      }
    }
    return false;
  }

  /** Keeps the log within its bounds after `session` grew. */
  function enforceBounds(session: MemorySession): void {
    trim(session);
    while (sessions.size > maxSessions && evictOne('sessions', session)) {}
    while (totalBytes > maxBytes && evictOne('bytes', session)) {}
  }

  function findSession(sessionId: string): MemorySession | undefined {
    dropExpiredSessions();
    return sessions.get(sessionId);
  }

  /** Moves the session's count and bytes to `client`. */
  function moveToClient(session: MemorySession, client: string): void {
    const bytes = sessionBytes(session);
    const from = clients.get(session.client);
    if (from) {
      from.sessions -= 1;
      from.bytes -= bytes;
      if (from.sessions === 0) clients.delete(session.client);
    }
    session.client = client;
    const to = clients.get(client) ?? { sessions: 0, bytes: 0 };
    to.sessions += 1;
    to.bytes += bytes;
    clients.set(client, to);
  }

  /** The session, created (for `assigned`, the client `assignClient` gave) when the log holds none. */
  function sessionFor(sessionId: string, assigned?: string): MemorySession {
    const existing = findSession(sessionId);
    if (existing) return existing;
    const session: MemorySession = {
      client: assigned ?? clientOf(sessionId),
      assigned: assigned !== undefined,
      events: [],
      sizes: [],
      head: 0,
      entryBytes: 0,
      otherBytes: 0,
      firstCursor: highestCursor + 1,
      startCursor: highestCursor + 1,
      activeAt: now(),
      runs: new Map(),
      commands: new Map(),
    };
    sessions.set(sessionId, session);
    const usage = clients.get(session.client) ?? { sessions: 0, bytes: 0 };
    usage.sessions += 1;
    clients.set(session.client, usage);
    enforceBounds(session);
    return session;
  }

  /** Moves the session to the back of the eviction order. */
  function touch(sessionId: string, session: MemorySession): void {
    session.activeAt = now();
    sessions.delete(sessionId);
    sessions.set(sessionId, session);
  }

  /** Trims the oldest entries past the count and byte bounds; the newest entry always stays. */
  function trim(session: MemorySession): void {
    let excess = Math.max(0, retainedCount(session) - maxEntries);
    let bytes = 0;
    for (let index = session.head; index < session.head + excess; index += 1) bytes += session.sizes[index]!;
    while (excess < retainedCount(session) - 1 && sessionBytes(session) - bytes > maxSessionBytes) {
      bytes += session.sizes[session.head + excess]!;
      excess += 1;
    }
    if (excess <= 0) return;
    // Trimmed slots are let go of at once; the array itself is copied only once the dead
    // prefix outweighs the live part, so each append costs O(1) amortized.
    session.events.fill(undefined, session.head, session.head + excess);
    session.sizes.fill(0, session.head, session.head + excess);
    session.head += excess;
    session.firstCursor += excess;
    account(session, -bytes, 'entryBytes');
    if (session.head >= COMPACT_AFTER && session.head * 2 >= session.events.length) {
      session.events = session.events.slice(session.head);
      session.sizes = session.sizes.slice(session.head);
      session.head = 0;
    }
  }

  function parseCursor(cursor: string): number {
    if (!CURSOR_PATTERN.test(cursor)) {
      throw new AgentEventLogError('invalid_cursor', `Cursor ${JSON.stringify(cursor)} is not a cursor of this log`);
    }
    return Number(cursor);
  }

  function readNow(
    sessionId: string,
    { after, limit, maxBytes: pageBytes }: AgentEventLogReadOptions,
  ): AgentEventLogEntry[] {
    positiveInteger('limit', limit);
    const afterCursor = after === undefined ? undefined : parseCursor(after);
    const session = findSession(sessionId);
    const count = session ? retainedCount(session) : 0;
    if (!session || count === 0) {
      if (afterCursor === undefined) return [];
      throw new AgentEventLogError('cursor_expired', `Session ${sessionId} has no entries after cursor ${after}`);
    }
    const lastCursor = session.firstCursor + count - 1;
    let start = 0;
    if (afterCursor !== undefined) {
      if (afterCursor > lastCursor) {
        throw new AgentEventLogError(
          'invalid_cursor',
          `Cursor ${after} is past session ${sessionId}'s newest, ${lastCursor}`,
        );
      }
      if (afterCursor < session.startCursor || afterCursor + 1 < session.firstCursor) {
        throw new AgentEventLogError(
          'cursor_expired',
          `Entries of session ${sessionId} after cursor ${after} were dropped`,
        );
      }
      start = afterCursor + 1 - session.firstCursor;
    }
    const end = Math.min(count, start + limit);
    const entries: AgentEventLogEntry[] = [];
    let bytes = 0;
    for (let index = start; index < end; index += 1) {
      bytes += session.sizes[session.head + index]!;
      if (pageBytes !== undefined && entries.length > 0 && bytes > pageBytes) break;
      entries.push({ cursor: String(session.firstCursor + index), event: session.events[session.head + index]! });
    }
    return entries;
  }

  /**
   * Parks a caller under `key` until `wake` (which resolves with `current()`), the timeout or
   * the abort (both resolve `empty`), or `close`.
   */
  function park<T>(
    registry: Map<string, Set<Waiter>>,
    key: string,
    wait: { timeoutMs: number; signal?: AbortSignal | undefined },
    empty: T,
    current: () => T,
  ): Promise<T> {
    const { signal } = wait;
    if (signal?.aborted || wait.timeoutMs <= 0) return Promise.resolve(empty);
    return new Promise<T>((resolve, reject) => {
      const finish = (value: () => T) => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        const waiters = registry.get(key);
        waiters?.delete(waiter);
        if (waiters?.size === 0) registry.delete(key);
        try {
          resolve(value());
        } catch (error) {
          reject(error);
        }
      };
      const onAbort = () => finish(() => empty);
      const waiter: Waiter = { wake: () => finish(current), cancel: () => finish(() => empty) };
      const timer = setTimeout(onAbort, wait.timeoutMs);
      signal?.addEventListener('abort', onAbort, { once: true });
      const waiters = registry.get(key) ?? new Set<Waiter>();
      waiters.add(waiter);
      registry.set(key, waiters);
    });
  }

  function wakeAll(registry: Map<string, Set<Waiter>>, key: string): void {
    for (const waiter of [...(registry.get(key) ?? [])]) waiter.wake();
  }

  function liveCommand(sessionId: string, key: string): AgentCommandRecord | undefined {
    const session = findSession(sessionId);
    const stored = session?.commands.get(key);
    if (!session || !stored) return undefined;
    if (stored.expiresAt <= now()) {
      deleteCommand(session, key);
      return undefined;
    }
    return { ...stored.record };
  }

  function settledCommand(
    sessionId: string,
    key: string,
  ): Extract<AgentCommandRecord, { status: 'settled' }> | undefined {
    const record = liveCommand(sessionId, key);
    return record?.status === 'settled' ? record : undefined;
  }

  function deleteCommand(session: MemorySession, key: string): void {
    const stored = session.commands.get(key);
    if (!stored) return;
    session.commands.delete(key);
    account(session, -stored.bytes, 'otherBytes');
  }

  function setCommand(session: MemorySession, key: string, record: AgentCommandRecord, expiresAt: number): void {
    deleteCommand(session, key);
    const bytes = commandBytes(key, record);
    session.commands.set(key, { record, expiresAt, bytes });
    account(session, bytes, 'otherBytes');
    enforceBounds(session);
  }

  function setLease(session: MemorySession, runId: string, lease: RunLease | undefined): void {
    const had = session.runs.has(runId);
    if (lease === undefined) session.runs.delete(runId);
    else session.runs.set(runId, lease);
    const has = lease !== undefined;
    if (had !== has) account(session, has ? leaseBytes(runId) : -leaseBytes(runId), 'otherBytes');
    if (has && !had) enforceBounds(session);
  }

  function liveLease(session: MemorySession | undefined, runId: string): RunLease | undefined {
    const lease = session?.runs.get(runId);
    if (session && lease?.state === 'owned' && lease.expiresAt <= now()) {
      setLease(session, runId, undefined);
      return undefined;
    }
    return lease;
  }

  function commandKey(sessionId: string, key: string): string {
    return JSON.stringify([sessionId, key]);
  }

  return {
    async append(sessionId, events) {
      ensureOpen();
      if (events.length === 0) return [];
      const session = sessionFor(sessionId);
      touch(sessionId, session);
      const firstNew = session.firstCursor + retainedCount(session);
      let bytes = 0;
      for (const event of events) {
        const size = JSON.stringify(event).length;
        session.events.push(event);
        session.sizes.push(size);
        bytes += size;
      }
      account(session, bytes, 'entryBytes');
      highestCursor = Math.max(highestCursor, firstNew + events.length - 1);
      enforceBounds(session);
      wakeAll(followers, sessionId);
      return events.map((_, index) => String(firstNew + index));
    },

    async read(sessionId, readOptions) {
      ensureOpen();
      return readNow(sessionId, readOptions);
    },

    async follow(sessionId, followOptions) {
      ensureOpen();
      const entries = readNow(sessionId, followOptions);
      if (entries.length > 0) return entries;
      return park(followers, sessionId, followOptions, [] as AgentEventLogEntry[], () =>
        readNow(sessionId, followOptions),
      );
    },

    async assignClient(sessionId, clientId) {
      ensureOpen();
      const session = sessionFor(sessionId, clientId);
      if (session.assigned) return;
      session.assigned = true;
      if (session.client === clientId) return;
      moveToClient(session, clientId);
      enforceBounds(session);
    },

    async lastCursor(sessionId) {
      ensureOpen();
      const session = findSession(sessionId);
      const count = session ? retainedCount(session) : 0;
      return session && count > 0 ? String(session.firstCursor + count - 1) : undefined;
    },

    async saveSnapshot(sessionId, snapshot) {
      ensureOpen();
      const cursor = parseCursor(snapshot.cursor);
      const session = sessionFor(sessionId);
      if (session.snapshot && session.snapshot.cursor > cursor) return;
      // Kept as JSON text: what is loaded is a fresh value, as from a shared store.
      const text = JSON.stringify(snapshot.state) ?? 'null';
      if (text.length > maxSessionBytes / 2) {
        throw new AgentEventLogError(
          'too_large',
          `The snapshot of session ${sessionId} has ${text.length} bytes, more than half of maxBytesPerSession (${maxSessionBytes})`,
        );
      }
      account(session, text.length - (session.snapshot?.text.length ?? 0), 'otherBytes');
      session.snapshot = { cursor, text };
      enforceBounds(session);
    },

    async loadSnapshot(sessionId) {
      ensureOpen();
      const stored = findSession(sessionId)?.snapshot;
      if (!stored) return undefined;
      const snapshot: AgentSessionSnapshot = { state: JSON.parse(stored.text), cursor: String(stored.cursor) };
      return snapshot;
    },

    async claimRun(sessionId, runId, owner, ttlMs) {
      ensureOpen();
      const session = sessionFor(sessionId);
      if (liveLease(session, runId)) return false;
      touch(sessionId, session);
      setLease(session, runId, { state: 'owned', owner, expiresAt: now() + ttlMs });
      return true;
    },

    async renewRun(sessionId, runId, owner, ttlMs) {
      ensureOpen();
      const session = findSession(sessionId);
      const lease = liveLease(session, runId);
      if (!session || lease?.state !== 'owned' || lease.owner !== owner) return false;
      lease.expiresAt = now() + ttlMs;
      touch(sessionId, session);
      return true;
    },

    async releaseRun(sessionId, runId, owner) {
      ensureOpen();
      const session = findSession(sessionId);
      const lease = liveLease(session, runId);
      if (session && lease?.state === 'owned' && lease.owner === owner) setLease(session, runId, { state: 'ended' });
    },

    async runOwner(sessionId, runId) {
      ensureOpen();
      const lease = liveLease(findSession(sessionId), runId);
      if (!lease) return { state: 'unowned' };
      return lease.state === 'owned' ? { state: 'owned', owner: lease.owner } : { state: 'ended' };
    },

    async claimCommand(sessionId, key, fingerprint, ttlMs) {
      ensureOpen();
      const existing = liveCommand(sessionId, key);
      if (existing) return existing;
      const session = sessionFor(sessionId);
      const nowMs = now();
      for (const [storedKey, stored] of session.commands) {
        if (stored.expiresAt > nowMs) break;
        deleteCommand(session, storedKey);
      }
      setCommand(session, key, { status: 'pending', fingerprint }, nowMs + ttlMs);
      return undefined;
    },

    async settleCommand(sessionId, key, { fingerprint, outcome }, ttlMs) {
      ensureOpen();
      const standing = settledCommand(sessionId, key);
      if (standing !== undefined) return standing.outcome;
      const session = sessionFor(sessionId);
      setCommand(session, key, { status: 'settled', fingerprint, outcome }, now() + ttlMs);
      wakeAll(commandWaiters, commandKey(sessionId, key));
      return outcome;
    },

    async awaitCommand(sessionId, key, wait) {
      ensureOpen();
      const settled = settledCommand(sessionId, key);
      if (settled) return settled;
      return park<AgentCommandRecord | undefined>(commandWaiters, commandKey(sessionId, key), wait, undefined, () =>
        settledCommand(sessionId, key),
      );
    },

    async signal(owner, signal) {
      ensureOpen();
      const handlers = listeners.get(owner);
      for (const handler of [...(handlers ?? [])]) {
        queueMicrotask(() => {
          // Stopped (or closed) between `signal` and now: not delivered.
          if (!listeners.get(owner)?.has(handler)) return;
          try {
            handler(signal);
          } catch {
            // A failing handler is its own owner's problem; the other handlers still run.
          }
        });
      }
    },

    async listen(owner, handler) {
      ensureOpen();
      // Each call is its own listener, even with a handler already listening.
      const listener = (signal: AgentHostSignal) => handler(signal);
      const handlers = listeners.get(owner) ?? new Set();
      handlers.add(listener);
      listeners.set(owner, handlers);
      return async () => {
        const current = listeners.get(owner);
        current?.delete(listener);
        if (current?.size === 0) listeners.delete(owner);
      };
    },

    async close() {
      if (closed) return;
      closed = true;
      listeners.clear();
      for (const registry of [followers, commandWaiters]) {
        for (const waiters of [...registry.values()]) for (const waiter of [...waiters]) waiter.cancel();
        registry.clear();
      }
      sessions.clear();
      clients.clear();
      totalBytes = 0;
    },

    retainedBytes(sessionId) {
      if (sessionId === undefined) return totalBytes;
      const session = findSession(sessionId);
      return session ? sessionBytes(session) : 0;
    },
  };
}
