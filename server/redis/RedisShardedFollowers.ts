import type { AgentEventLogEntry } from '../AgentEventLog';
import type { RedisMessageListener } from './redisConnections';
import { canonicalCursor, compareCursors } from './redisCursors';
import {
  addFollowerWaiter,
  type FollowerGroups,
  type FollowerWaiter,
  type RedisFollowing,
  serveFollowerGroup,
} from './redisFollowing';

export interface RedisShardedFollowersOptions {
  /**
   * Listens to the session's append channel (where each append publishes its newest id);
   * resolves once subscribed, with the function that stops it.
   */
  subscribe(sessionId: string, listener: RedisMessageListener): Promise<() => Promise<void>>;
  /** The log's `read`, `maxBytes` as `AgentEventLogReadOptions` has it. */
  read(
    sessionId: string,
    after: string | undefined,
    limit: number,
    maxBytes: number | undefined,
  ): Promise<readonly AgentEventLogEntry[]>;
  /** How long a session stays subscribed after its last follower left. */
  lingerMs: number;
}

/** A session someone follows (or followed a moment ago), and its followers grouped by cursor. */
interface FollowedSession {
  sessionId: string;
  groups: FollowerGroups;
  /** Subscribed: every append from now on is heard. */
  live: boolean;
  unsubscribe: (() => Promise<void>) | undefined;
  /** The newest id heard on the channel ('0-0' before any). */
  heard: string;
  reading: boolean;
  readAgain: boolean;
  lingering: ReturnType<typeof setTimeout> | undefined;
}

/**
 * Waits for appends on behalf of `follow` on a Redis Cluster, where one XREAD across sessions
 * is refused (`CROSSSLOT`). Each append publishes its newest id on the session's sharded
 * channel (`SPUBLISH`, on the session's own shard); a followed session is subscribed once
 * (`SSUBSCRIBE`), whatever the number of its followers, on the cluster client's one pub/sub
 * connection per master. A message only says that the session moved: each group of followers
 * waiting after the same cursor is then served by one `read` (`XRANGE` from that cursor, with
 * its gap and cursor checks) and fanned out, bounded in bytes by the group's smallest `maxBytes`.
 *
 * A follower that read before its session was subscribed reads once more when it is: an
 * append between its read and the subscription is not missed. Reads of a session do not
 * overlap: messages that come during one make one more. A session no one follows stays
 * subscribed for `lingerMs`, so the usual follower, which follows again from what it was just
 * given, finds it subscribed. `recheck` (after a connection of the cluster came back, when
 * messages may have been lost) reads once for every waiting group.
 */
export class RedisShardedFollowers implements RedisFollowing {
  readonly #options: RedisShardedFollowersOptions;
  readonly #sessions = new Map<string, FollowedSession>();
  #closed = false;

  constructor(options: RedisShardedFollowersOptions) {
    this.#options = options;
  }

  /** The session's subscription when it is live: an append after a read that follows is heard. */
  beforeRead(sessionId: string): unknown {
    const session = this.#sessions.get(sessionId);
    return session?.live === true ? session : undefined;
  }

  wait(
    sessionId: string,
    after: string | undefined,
    limit: number,
    maxBytes: number | undefined,
    timeoutMs: number,
    signal: AbortSignal | undefined,
    beforeRead: unknown,
  ): Promise<readonly AgentEventLogEntry[]> {
    if (this.#closed || signal?.aborted) return Promise.resolve([]);
    return new Promise((resolve, reject) => {
      const session = this.#sessionOf(sessionId);
      addFollowerWaiter(session.groups, { after, limit, maxBytes, timeoutMs, signal }, resolve, reject, () =>
        this.#linger(session),
      );
      if (session.lingering !== undefined) {
        clearTimeout(session.lingering);
        session.lingering = undefined;
      }
      if (!session.live) return;
      // Read before the subscription was live, or an append heard since the read: read again.
      const heardSince = session.heard !== '0-0' && (after === undefined || compareCursors(session.heard, after) > 0);
      if (beforeRead !== session || heardSince) this.#deliver(session);
    });
  }

  saw(): void {
    // Appends are heard on the channel: what was read changes nothing.
  }

  /** Reads once for every group of followers: messages published while a connection was down are lost. */
  recheck(): void {
    for (const session of this.#sessions.values()) {
      if (session.live && session.groups.size > 0) this.#deliver(session);
    }
  }

  close(): void {
    this.#closed = true;
    for (const session of [...this.#sessions.values()]) {
      this.#forget(session);
      for (const group of [...session.groups.values()]) for (const waiter of [...group]) waiter.settle({ entries: [] });
    }
  }

  #sessionOf(sessionId: string): FollowedSession {
    const existing = this.#sessions.get(sessionId);
    if (existing !== undefined) return existing;
    const session: FollowedSession = {
      sessionId,
      groups: new Map(),
      live: false,
      unsubscribe: undefined,
      heard: '0-0',
      reading: false,
      readAgain: false,
      lingering: undefined,
    };
    this.#sessions.set(sessionId, session);
    const listener: RedisMessageListener = (message) => {
      // Runs inside the client's reply parser: nothing here may throw.
      const cursor = canonicalCursor(String(message));
      if (cursor !== undefined && compareCursors(cursor, session.heard) > 0) session.heard = cursor;
      if (session.groups.size > 0) this.#deliver(session);
    };
    this.#options.subscribe(sessionId, listener).then(
      (unsubscribe) => {
        if (this.#sessions.get(sessionId) !== session) {
          void unsubscribe();
          return;
        }
        session.unsubscribe = unsubscribe;
        session.live = true;
        // Its followers read before the subscription: what came in between is read now.
        if (session.groups.size > 0) this.#deliver(session);
      },
      (error: unknown) => {
        this.#forget(session);
        for (const group of [...session.groups.values()]) for (const waiter of [...group]) waiter.settle({ error });
      },
    );
    return session;
  }

  /** Unsubscribes the session after `lingerMs` unless a follower comes back by then. */
  #linger(session: FollowedSession): void {
    if (session.lingering !== undefined || this.#closed) return;
    session.lingering = setTimeout(() => {
      session.lingering = undefined;
      if (session.groups.size === 0) this.#forget(session);
    }, this.#options.lingerMs);
    session.lingering.unref?.();
  }

  #forget(session: FollowedSession): void {
    if (session.lingering !== undefined) clearTimeout(session.lingering);
    session.lingering = undefined;
    if (this.#sessions.get(session.sessionId) === session) this.#sessions.delete(session.sessionId);
    const unsubscribe = session.unsubscribe;
    session.unsubscribe = undefined;
    session.live = false;
    void unsubscribe?.();
  }

  /** Serves every group of the session with one read each; one more round if messages came meanwhile. */
  #deliver(session: FollowedSession): void {
    if (session.reading) {
      session.readAgain = true;
      return;
    }
    session.reading = true;
    void (async () => {
      try {
        do {
          session.readAgain = false;
          await Promise.all([...session.groups.values()].map((group) => this.#serve(session, group)));
        } while (session.readAgain && !this.#closed && session.groups.size > 0);
      } finally {
        session.reading = false;
      }
    })();
  }

  async #serve(session: FollowedSession, group: Set<FollowerWaiter>): Promise<void> {
    await serveFollowerGroup(session.sessionId, group, this.#options.read);
  }
}
