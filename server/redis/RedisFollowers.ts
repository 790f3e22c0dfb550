import type { AgentEventLogEntry } from '../AgentEventLog';
import { destroyQuietly, type RedisEventLogConnection } from './redisConnections';
import { compareCursors } from './redisCursors';
import {
  addFollowerWaiter,
  type FollowerGroups,
  type FollowerOutcome,
  type RedisFollowing,
  serveFollowerGroup,
} from './redisFollowing';

export interface RedisFollowersOptions {
  /** Opens one blocking connection (connected) and gives its `CLIENT ID`. */
  open(): Promise<{ connection: RedisEventLogConnection; clientId: string }>;
  /** The log's `read` (on the shared, non-blocking connection), `maxBytes` as `AgentEventLogReadOptions` has it. */
  read(
    sessionId: string,
    after: string | undefined,
    limit: number,
    maxBytes: number | undefined,
  ): Promise<readonly AgentEventLogEntry[]>;
  /** Ends a blocking command of another connection at once (`CLIENT UNBLOCK`); resolves its reply. */
  unblock(clientId: string): Promise<unknown>;
  /** The error a failed XREAD rejects its waiters with. */
  toError(error: unknown): Error;
  streamKey(sessionId: string): string;
  maxConnections: number;
  /** How long one XREAD blocks: the longest a session waits to be watched when UNBLOCK fails. */
  blockMs: number;
}

/** The followers of one session, grouped by cursor: one group is served by one read. */
interface WatchedSession {
  sessionId: string;
  streamKey: string;
  groups: FollowerGroups;
  reader: Reader;
  /** The newest id someone waited after or read up to: where the XREAD watches it from while no one waits. */
  newestSeen: string;
  /** Since when no one waits on it (undefined while someone does). */
  idleSince: number | undefined;
}

/** One blocking connection and the sessions its XREAD watches. */
interface Reader {
  connection: { connection: RedisEventLogConnection; clientId: string } | undefined;
  sessions: Set<WatchedSession>;
  /** The sessions of the XREAD in flight, with the id it reads each after. */
  inFlight: Map<WatchedSession, string> | undefined;
  interrupting: Map<WatchedSession, string> | undefined;
  running: boolean;
}

const INTERRUPT_RETRY_MS = 5;
const INTERRUPT_ATTEMPTS = 20;
const COMMAND_MARGIN_MS = 5_000;

/** `0-0` is below every entry: an XREAD after it wakes on the first entry of the stream. */
const watchIdOf = (after: string | undefined) => after ?? '0-0';
const newer = (left: string, right: string) => (compareCursors(left, right) > 0 ? left : right);

/**
 * Waits for appends on behalf of `follow`, on at most `maxConnections` blocking connections.
 *
 * A session with followers is watched by exactly one connection, whatever the number of its
 * followers; one connection watches many sessions with one multi-stream
 * `XREAD COUNT 1 BLOCK <blockMs> STREAMS k1 k2 … id1 id2 …`, each stream read after the lowest
 * cursor its followers wait after. The XREAD only says which sessions moved: each group of
 * followers waiting after the same cursor is then served by one `read`, with its gap and cursor
 * checks, and fanned out. That read is bounded in bytes by the smallest `maxBytes` of the group,
 * so a follower woken by a burst of large entries holds one page of them, not `limit`.
 *
 * A follower whose session the XREAD in flight does not watch (or watches after a later id)
 * interrupts it with `CLIENT UNBLOCK`, so it is watched at once rather than after the window.
 * To spare that for the usual follower, which follows again from what it was just given, a
 * session no one waits on stays watched for one window, after the newest cursor read from it;
 * an entry no one has read yet lets it go.
 */
export class RedisFollowers implements RedisFollowing {
  readonly #options: RedisFollowersOptions;
  readonly #sessions = new Map<string, WatchedSession>();
  readonly #readers: Reader[] = [];
  #closed = false;

  constructor(options: RedisFollowersOptions) {
    this.#options = options;
  }

  /** Nothing: the XREAD watches from the follower's cursor, whenever it comes. */
  beforeRead(): undefined {
    return undefined;
  }

  /**
   * Resolves the entries after `after` once there are some (at most `limit`, and about
   * `maxBytes` with one entry at least), `[]` after `timeoutMs` or on abort.
   */
  wait(
    sessionId: string,
    after: string | undefined,
    limit: number,
    maxBytes: number | undefined,
    timeoutMs: number,
    signal: AbortSignal | undefined,
  ): Promise<readonly AgentEventLogEntry[]> {
    if (this.#closed || signal?.aborted) return Promise.resolve([]);
    return new Promise((resolve, reject) => {
      const session = this.#sessionOf(sessionId);
      addFollowerWaiter(session.groups, { after, limit, maxBytes, timeoutMs, signal }, resolve, reject, () => {
        session.idleSince = Date.now();
      });
      session.idleSince = undefined;
      session.newestSeen = newer(watchIdOf(after), session.newestSeen);
      this.#watch(session, watchIdOf(after));
    });
  }

  /** Notes that `cursor` of the session was read: followers after it need no interruption. */
  saw(sessionId: string, cursor: string): void {
    const session = this.#sessions.get(sessionId);
    if (session !== undefined) session.newestSeen = newer(cursor, session.newestSeen);
  }

  /** Resolves every waiter with `[]` and drops the blocking connections. */
  close(): void {
    this.#closed = true;
    for (const session of [...this.#sessions.values()]) this.#settleAll(session, { entries: [] });
    for (const reader of this.#readers.splice(0)) {
      if (reader.connection !== undefined) destroyQuietly(reader.connection.connection);
    }
  }

  #sessionOf(sessionId: string): WatchedSession {
    const existing = this.#sessions.get(sessionId);
    if (existing !== undefined) return existing;
    const reader = this.#pickReader();
    const session: WatchedSession = {
      sessionId,
      streamKey: this.#options.streamKey(sessionId),
      groups: new Map(),
      reader,
      newestSeen: '0-0',
      idleSince: undefined,
    };
    reader.sessions.add(session);
    this.#sessions.set(sessionId, session);
    return session;
  }

  /** An idle connection, else a new one while under the bound, else the least busy. */
  #pickReader(): Reader {
    const idle = this.#readers.find((reader) => reader.sessions.size === 0);
    if (idle !== undefined) return idle;
    if (this.#readers.length < this.#options.maxConnections) {
      const reader: Reader = {
        connection: undefined,
        sessions: new Set(),
        inFlight: undefined,
        interrupting: undefined,
        running: false,
      };
      this.#readers.push(reader);
      return reader;
    }
    return this.#readers.reduce((least, reader) => (reader.sessions.size < least.sessions.size ? reader : least));
  }

  /** Makes sure the session's connection watches it after `watchId` (or earlier). */
  #watch(session: WatchedSession, watchId: string): void {
    const reader = session.reader;
    if (!reader.running) {
      void this.#run(reader);
      return;
    }
    // Between two XREADs: the next one is built from the waiters, this one included.
    if (reader.inFlight === undefined) return;
    const inFlightId = reader.inFlight.get(session);
    if (inFlightId === undefined || compareCursors(watchId, inFlightId) < 0) this.#interrupt(reader);
  }

  #forget(session: WatchedSession): void {
    if (this.#sessions.get(session.sessionId) === session) this.#sessions.delete(session.sessionId);
    session.reader.sessions.delete(session);
  }

  #settleAll(session: WatchedSession, outcome: FollowerOutcome): void {
    for (const group of [...session.groups.values()]) for (const waiter of [...group]) waiter.settle(outcome);
  }

  /** The sessions the next XREAD watches, after which id each; lets go of those idle for a window. */
  #nextRound(reader: Reader): Map<WatchedSession, string> {
    const watched = new Map<WatchedSession, string>();
    const now = Date.now();
    for (const session of [...reader.sessions]) {
      if (session.groups.size > 0) {
        watched.set(session, lowestWatchId(session));
      } else if (session.idleSince === undefined || now - session.idleSince < this.#options.blockMs) {
        watched.set(session, session.newestSeen);
      } else {
        this.#forget(session);
      }
    }
    return watched;
  }

  async #run(reader: Reader): Promise<void> {
    reader.running = true;
    try {
      if (reader.connection === undefined) {
        const opened = await this.#options.open();
        // A connection that drops is not used again: after node-redis reconnects it, its
        // CLIENT ID (what UNBLOCK names) would be another's.
        opened.connection.on('error', () => {
          if (reader.connection !== opened) return;
          reader.connection = undefined;
          destroyQuietly(opened.connection);
        });
        reader.connection = opened;
      }
      while (!this.#closed) {
        const watched = this.#nextRound(reader);
        if (watched.size === 0) break;
        const keys = [...watched.keys()].map((session) => session.streamKey);
        reader.inFlight = watched;
        let reply: unknown;
        try {
          if (reader.connection === undefined) throw new Error('the blocking connection dropped');
          reply = await reader.connection.connection.sendCommand(
            ['XREAD', 'COUNT', '1', 'BLOCK', String(this.#options.blockMs), 'STREAMS', ...keys, ...watched.values()],
            { timeout: this.#options.blockMs + COMMAND_MARGIN_MS },
          );
        } finally {
          reader.inFlight = undefined;
        }
        const heads = streamHeadsOf(reply);
        const deliveries: Promise<void>[] = [];
        for (const session of watched.keys()) {
          const head = heads.get(session.streamKey);
          if (head === undefined) continue;
          if (session.groups.size > 0) deliveries.push(this.#deliver(session));
          // An entry no follower has read: no one follows this session any more.
          else if (head === '' || compareCursors(head, session.newestSeen) > 0) this.#forget(session);
        }
        await Promise.all(deliveries);
      }
    } catch (error) {
      // The connection failed (or was closed): its followers hear it; the next follower of
      // these sessions gets a fresh connection.
      const index = this.#readers.indexOf(reader);
      if (index >= 0) this.#readers.splice(index, 1);
      if (reader.connection !== undefined) destroyQuietly(reader.connection.connection);
      reader.connection = undefined;
      const failure = this.#options.toError(error);
      for (const session of [...reader.sessions]) {
        this.#settleAll(session, { error: failure });
        this.#forget(session);
      }
    } finally {
      reader.running = false;
      // Closed while this connection was being opened: `close` could not drop it.
      if (this.#closed && reader.connection !== undefined) destroyQuietly(reader.connection.connection);
    }
  }

  /** Serves each group of the session's followers with one read, and fans it out. */
  async #deliver(session: WatchedSession): Promise<void> {
    await Promise.all(
      [...session.groups.values()].map((group) => serveFollowerGroup(session.sessionId, group, this.#options.read)),
    );
  }

  /**
   * Ends the XREAD in flight so that the next one watches what this one does not. An UNBLOCK
   * that lands before the XREAD blocks does nothing (it answers 0): try again, briefly.
   */
  #interrupt(reader: Reader): void {
    const target = reader.inFlight;
    const clientId = reader.connection?.clientId;
    if (target === undefined || clientId === undefined || reader.interrupting === target) return;
    reader.interrupting = target;
    const attempt = (remaining: number) => {
      this.#options.unblock(clientId).then(
        (unblocked) => {
          if (unblocked === 1 || remaining <= 1 || this.#closed || reader.inFlight !== target) return;
          setTimeout(() => attempt(remaining - 1), INTERRUPT_RETRY_MS);
        },
        // Without UNBLOCK (an ACL may refuse it) the session waits for the window to end.
        () => {},
      );
    };
    attempt(INTERRUPT_ATTEMPTS);
  }
}

function lowestWatchId(session: WatchedSession): string {
  let lowest: string | undefined;
  for (const group of session.groups.values()) {
    // A group's waiters all wait after the same cursor.
    for (const waiter of group) {
      const id = watchIdOf(waiter.after);
      if (lowest === undefined || compareCursors(id, lowest) < 0) lowest = id;
      break;
    }
  }
  return lowest ?? '0-0';
}

/**
 * The first entry id an XREAD reply has for each stream ('' when it cannot tell): the reply is
 * an array of [key, entries] (RESP2) or a map of key to entries (RESP3).
 */
function streamHeadsOf(reply: unknown): Map<string, string> {
  const heads = new Map<string, string>();
  const add = (key: unknown, entries: unknown) => {
    const first = Array.isArray(entries) ? entries[0] : undefined;
    const id = Array.isArray(first) ? first[0] : undefined;
    heads.set(String(key), typeof id === 'string' ? id : '');
  };
  if (Array.isArray(reply)) {
    for (const stream of reply) if (Array.isArray(stream)) add(stream[0], stream[1]);
  } else if (reply instanceof Map) {
    for (const [key, entries] of reply) add(key, entries);
  } else if (typeof reply === 'object' && reply !== null) {
    for (const [key, entries] of Object.entries(reply)) add(key, entries);
  }
  return heads;
}
