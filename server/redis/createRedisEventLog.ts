import { randomUUID } from 'node:crypto';
import type { RedisClusterOptions } from 'redis';
import type { AgentEvent } from '../../protocol/eventSchemas';
import type { AgentCommandRecord, AgentEventLog, AgentEventLogEntry, AgentSessionSnapshot } from '../AgentEventLog';
import { AgentEventLogError } from '../AgentEventLogError';
import { RedisFollowers } from './RedisFollowers';
import { RedisSeenCursors } from './RedisSeenCursors';
import { RedisShardedFollowers } from './RedisShardedFollowers';
import { CONNECT_TIMEOUT_MS, createRedisCaller, RECONNECT_WITHIN_MS, type RedisCaller } from './redisCaller';
import {
  destroyQuietly,
  openConnection,
  type RedisEventLogClient,
  type RedisEventLogClusterClient,
  type RedisMessageListener,
} from './redisConnections';
import { canonicalCursor } from './redisCursors';
import type { RedisFollowing } from './redisFollowing';
import { createRedisKeys, type RedisKeys } from './redisKeys';
import {
  ENDED_RUN,
  hostSignalOf,
  ownedRun,
  parseCommandRecord,
  parseRunOwner,
  parseStreamEntries,
  settledRecordOf,
} from './redisRecords';
import {
  APPEND_SCRIPT,
  CLAIM_COMMAND_SCRIPT,
  READ_SCRIPT,
  RELEASE_RUN_SCRIPT,
  RENEW_RUN_SCRIPT,
  SAVE_SNAPSHOT_SCRIPT,
  SETTLE_COMMAND_SCRIPT,
} from './redisScripts';
import { createRedisSubscriber, type RedisSubscriber } from './redisSubscriber';

export interface RedisEventLogOptions {
  /** Where Redis is (`redis://host:port`); the log opens and closes its own client. */
  url?: string | undefined;
  /**
   * A connected node-redis client to share, instead of `url`: a standalone one (`createClient`),
   * which the log duplicates for its blocking reads and pub/sub, or a cluster one
   * (`createCluster`), whose connections it uses as they are. `close()` leaves it open.
   */
  client?: RedisEventLogClient | RedisEventLogClusterClient | undefined;
  /**
   * A Redis Cluster (7 or later) to open a client for, instead of `url`: what `createCluster`
   * takes (`rootNodes`, and `defaults` for the credentials and TLS of every node). The log
   * opens and closes that client.
   */
  cluster?: RedisClusterOptions | undefined;
  /** Prefix of every key and channel, without braces (they are the hash tag's). Default `'agent-machines:'`. */
  keyPrefix?: string | undefined;
  /**
   * Entries kept per session (`XADD … MAXLEN ~`): approximate trimming keeps at least this
   * many, and drops older ones in whole blocks. Default 10,000.
   */
  maxEntriesPerSession?: number | undefined;
  /** Trim to exactly `maxEntriesPerSession` (`MAXLEN =`), at some cost per append. Default false. */
  exactTrim?: boolean | undefined;
  /** A session's keys expire this long after its last append. Default 86,400 (a day). */
  sessionTtlSeconds?: number | undefined;
  /**
   * The most connections `follow` blocks on, whatever the number of followers. Default 16. On a
   * cluster `follow` blocks on none: it listens on the cluster client's pub/sub connection of each master.
   */
  maxBlockingConnections?: number | undefined;
  /**
   * Bytes of a session's entries (their JSON) and snapshot kept: past it the oldest entries
   * are trimmed (`XTRIM MINID`; the newest entry always stays), and a snapshot larger than
   * half of it is refused with `too_large`. Default 16 MiB.
   */
  maxBytesPerSession?: number | undefined;
  /**
   * The longest a Redis command may take: past it the call rejects with `unavailable` (a hung
   * or paused Redis fails requests with 503 instead of holding them). Blocking reads are not
   * bounded by it. Default 5 000 ms.
   */
  commandTimeoutMs?: number | undefined;
  /**
   * How long a call that running twice cannot harm (an append, a lease renewal, a read) is sent
   * again when its connection is lost: through a restart of Redis, or a cluster master killed
   * and replaced by its replica, a run goes on instead of failing. Give more than the cluster's
   * failover takes (`cluster-node-timeout`, plus about a second for the election), and a run
   * lease (`runLeaseMs` of the host) longer still. Default 5 000 ms.
   */
  reconnectWithinMs?: number | undefined;
}

const BLOCK_WINDOW_MS = 1_000;
/** Sessions whose newest cursor a log remembers, to tell entries a failover lost (a few hundred KB at most). */
const SEEN_SESSIONS = 10_000;
/** setTimeout fires at once for a delay past 2^31 - 1 ms: a longer wait is capped there (~24.8 days). */
const MAX_TIMER_MS = 2 ** 31 - 1;

type ReadPage = (
  sessionId: string,
  after: string | undefined,
  limit: number,
  maxBytes: number | undefined,
) => Promise<AgentEventLogEntry[]>;

/** Followers that block in XREAD on connections of their own, duplicated from `client`. */
function blockingFollowers(
  client: RedisEventLogClient,
  caller: RedisCaller,
  keys: RedisKeys,
  read: ReadPage,
  maxConnections: number,
): RedisFollowing {
  return new RedisFollowers({
    open: async () => {
      const connection = await openConnection(client, 'agent-machines-follow', CONNECT_TIMEOUT_MS);
      try {
        return { connection, clientId: String(await connection.sendCommand(['CLIENT', 'ID'])) };
      } catch (error) {
        destroyQuietly(connection);
        throw error;
      }
    },
    read,
    unblock: (clientId) => client.sendCommand(['CLIENT', 'UNBLOCK', clientId]),
    toError: (error) => caller.toError('follow', error),
    streamKey: keys.events,
    maxConnections,
    blockMs: BLOCK_WINDOW_MS,
  });
}

/**
 * Followers woken by the sharded channel of their session. A connection of the cluster that
 * comes back (a reconnect, a failover) may have lost messages: every waiting follower reads once.
 */
function shardedFollowers(
  cluster: RedisEventLogClusterClient,
  subscriber: RedisSubscriber,
  keys: RedisKeys,
  read: ReadPage,
  onClose: Set<() => void>,
): RedisFollowing {
  const followers = new RedisShardedFollowers({
    subscribe: (sessionId, listener) => {
      const channel = keys.eventsAppended(sessionId);
      return subscriber.subscribe(`follow ${channel}`, channel, listener);
    },
    read,
    lingerMs: BLOCK_WINDOW_MS,
  });
  const recheck = () => followers.recheck();
  cluster.on('node-ready', recheck);
  onClose.add(() => cluster.off('node-ready', recheck));
  return followers;
}

function positiveInteger(name: string, value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (!Number.isInteger(value) || value < 1) {
    throw new TypeError(`createRedisEventLog: ${name} must be a positive integer, got ${value}`);
  }
  return value;
}

/** Milliseconds for PX: Redis wants a positive integer. */
const milliseconds = (value: number) => String(Math.max(1, Math.ceil(value)));

/**
 * An `AgentEventLog` in Redis (≥ 6.2; the `redis` client, v5 or v6), or in a Redis Cluster
 * (≥ 7), shared by every host instance that points at the same Redis. A session's events are a
 * stream whose entry ids are the cursors (`<ms>-<seq>`); leases, command records and snapshots
 * are keys beside it, all under the hash tag `{sessionId}`, so each script touches one slot.
 *
 * On one Redis, command settlements and signals travel by pub/sub, on one subscriber
 * connection, and `follow` blocks on at most `maxBlockingConnections` connections, one XREAD
 * per connection watching many sessions, each session once however many follow it. On a
 * cluster they travel by sharded pub/sub, and each append publishes on its session's sharded
 * channel, which wakes that session's followers: they read from their cursor. Its connections
 * are the cluster client's: one per master for commands and one per master for pub/sub,
 * whatever the number of sessions and followers.
 *
 * Each entry keeps the id of the entry before it, and the log remembers the newest cursor it
 * appended or read of each recent session: an append a failover lost (acknowledged by the old
 * master, never replicated) reads as `cursor_expired` for a reader it would leave behind, as a
 * trimmed entry does, never as silence. A slot being migrated answers `TRYAGAIN` to a script
 * whose keys are split for a moment: the call is sent again within `commandTimeoutMs`. A
 * failover (`CLUSTERDOWN`, a master's connection lost) holds calls that are safe to send again
 * until the replica answers, within `reconnectWithinMs`: a run streaming on the lost master
 * goes on.
 *
 * What it reads back is checked (events against the protocol schema): a corrupted value
 * rejects the call with `unavailable` naming its key. A signal that does not parse is
 * dropped. Takes a standalone or a cluster client, not a sentinel one.
 *
 * @example
 * import { createRedisEventLog } from 'agent-machines/server/redis';
 *
 * const log = createRedisEventLog({ url: process.env.REDIS_URL, maxEntriesPerSession: 5_000 });
 * const [cursor] = await log.append('session-1', [event]);
 * const next = await log.follow('session-1', { after: cursor, limit: 100, timeoutMs: 15_000 });
 * await log.close();
 *
 * @example
 * const clustered = createRedisEventLog({ cluster: { rootNodes: [{ url: 'redis://10.0.0.1:7000' }] } });
 */
export function createRedisEventLog(options: RedisEventLogOptions): AgentEventLog {
  const given = (['url', 'client', 'cluster'] as const).filter((name) => options[name] !== undefined);
  if (given.length > 1) {
    throw new TypeError(`createRedisEventLog: give one of url, client and cluster, not ${given.join(' and ')}`);
  }
  const keyPrefix = options.keyPrefix ?? 'agent-machines:';
  if (/[{}]/.test(keyPrefix)) {
    // A brace would make the prefix the hash tag: every session on one cluster slot.
    throw new TypeError(`createRedisEventLog: keyPrefix must not contain { or }, got ${JSON.stringify(keyPrefix)}`);
  }
  const keys = createRedisKeys(keyPrefix);
  const maxEntries = String(positiveInteger('maxEntriesPerSession', options.maxEntriesPerSession, 10_000));
  const trim = options.exactTrim === true ? '=' : '~';
  const ttlSeconds = String(positiveInteger('sessionTtlSeconds', options.sessionTtlSeconds, 86_400));
  const maxConnections = positiveInteger('maxBlockingConnections', options.maxBlockingConnections, 16);
  const maxSessionBytes = positiveInteger('maxBytesPerSession', options.maxBytesPerSession, 16 * 1024 * 1024);
  const commandTimeoutMs = positiveInteger('commandTimeoutMs', options.commandTimeoutMs, 5_000);
  const reconnectWithinMs = positiveInteger('reconnectWithinMs', options.reconnectWithinMs, RECONNECT_WITHIN_MS);

  const caller = createRedisCaller({
    url: options.url,
    client: options.client,
    cluster: options.cluster,
    commandTimeoutMs,
    reconnectWithinMs,
  });
  const { target } = caller;
  const subscriber = createRedisSubscriber(caller);
  const onClose = new Set<() => void>();
  const seen = new RedisSeenCursors(SEEN_SESSIONS);

  function cursorOf(sessionId: string, cursor: string): string {
    const canonical = canonicalCursor(cursor);
    if (canonical === undefined) {
      throw new AgentEventLogError(
        'invalid_cursor',
        `Cursor ${JSON.stringify(cursor)} is not a cursor of session ${sessionId}`,
      );
    }
    return canonical;
  }

  async function read(
    sessionId: string,
    after: string | undefined,
    limit: number,
    maxBytes?: number,
  ): Promise<AgentEventLogEntry[]> {
    if (caller.closed) throw caller.closedError('read');
    const key = keys.events(sessionId);
    const canonical = after === undefined ? undefined : cursorOf(sessionId, after);
    // COUNT 0 would mean "no limit" to Redis; a limit below 1 still checks the cursor.
    const count = limit === Number.POSITIVE_INFINITY ? Number.MAX_SAFE_INTEGER : Math.max(1, Math.floor(limit) || 1);
    const bytes = maxBytes === undefined ? '' : String(Math.max(1, Math.floor(maxBytes) || 1));
    const reply = await caller.script<unknown[]>(
      `read ${key}`,
      READ_SCRIPT,
      [key],
      [canonical ?? '', String(count), bytes],
      true,
    );
    if (reply[0] === 'expired') {
      throw new AgentEventLogError(
        'cursor_expired',
        `Entries after cursor ${after} of session ${sessionId} were dropped (trimmed, or the session expired)`,
      );
    }
    // Past the stream's newest entry, but the newest this log gave: a failover lost the entries
    // up to it (Redis replicates after it acknowledges). This log's next append follows it,
    // so its reader misses nothing yet; another log's append would not, and that reads as lost.
    if (reply[0] === 'invalid' && canonical !== undefined && seen.newest(sessionId) === canonical) return [];
    // A cursor the stream no longer has, before what this log gave, or not in the chain: the
    // reader would miss lost entries. A gap, as for trimmed entries, never silence.
    if (
      reply[0] === 'lost' ||
      (reply[0] === 'invalid' && canonical !== undefined && seen.given(sessionId, canonical))
    ) {
      throw new AgentEventLogError(
        'cursor_expired',
        `Cursor ${after} of session ${sessionId} is no longer in the log: entries it had were lost (a Redis failover drops what the old master had not replicated)`,
      );
    }
    if (reply[0] === 'invalid') {
      throw new AgentEventLogError(
        'invalid_cursor',
        `Cursor ${after} is past the newest entry of session ${sessionId}`,
      );
    }
    if (limit < 1) return [];
    const entries = parseStreamEntries(key, reply[1]);
    const newest = entries.at(-1);
    if (newest !== undefined) {
      seen.saw(sessionId, newest.cursor);
      followers.saw(sessionId, newest.cursor);
    }
    return entries;
  }

  /** Where an append wakes the session's followers: on a cluster only (one Redis has them block in XREAD). */
  const wakeChannel = (sessionId: string) => (target.kind === 'cluster' ? keys.eventsAppended(sessionId) : '');
  const followers: RedisFollowing =
    target.kind === 'cluster'
      ? shardedFollowers(target.cluster, subscriber, keys, read, onClose)
      : blockingFollowers(target.client, caller, keys, read, maxConnections);

  return {
    async append(sessionId: string, events: readonly AgentEvent[]): Promise<readonly string[]> {
      if (caller.closed) throw caller.closedError('append');
      if (events.length === 0) return [];
      const key = keys.events(sessionId);
      const payloads = events.map((event) => JSON.stringify(event));
      // The batch's own key remembers its ids a minute: an append sent again after a dropped
      // connection (which may have run it already) answers them instead of appending twice.
      const batchKey = keys.appended(sessionId, randomUUID());
      const ids = await caller.script<unknown>(
        `append to ${key}`,
        APPEND_SCRIPT,
        [key, keys.snapshot(sessionId), batchKey],
        [
          trim,
          maxEntries,
          ttlSeconds,
          String(maxSessionBytes),
          wakeChannel(sessionId),
          seen.newest(sessionId) ?? '',
          ...payloads,
        ],
        true,
      );
      if (!Array.isArray(ids) || ids.length !== events.length || !ids.every((id) => typeof id === 'string')) {
        throw new AgentEventLogError('unavailable', `Redis answered an append to ${key} without its ids`);
      }
      seen.saw(sessionId, ids.at(-1) as string);
      return ids as string[];
    },

    read: (sessionId, { after, limit, maxBytes }) => read(sessionId, after, limit, maxBytes),

    async follow(sessionId, { after, limit, maxBytes, timeoutMs, signal }) {
      const beforeRead = followers.beforeRead(sessionId);
      const entries = await read(sessionId, after, limit, maxBytes);
      if (entries.length > 0 || timeoutMs <= 0 || signal?.aborted || limit < 1) return entries;
      const canonical = after === undefined ? undefined : cursorOf(sessionId, after);
      return followers.wait(sessionId, canonical, limit, maxBytes, timeoutMs, signal, beforeRead);
    },

    async lastCursor(sessionId) {
      const key = keys.events(sessionId);
      const reply = await caller.send<unknown[][]>(
        `read ${key}`,
        key,
        ['XREVRANGE', key, '+', '-', 'COUNT', '1'],
        true,
      );
      const cursor = reply[0]?.[0];
      return typeof cursor === 'string' ? cursor : undefined;
    },

    async saveSnapshot(sessionId: string, snapshot: AgentSessionSnapshot): Promise<void> {
      if (caller.closed) throw caller.closedError('save a snapshot');
      const key = keys.snapshot(sessionId);
      const cursor = cursorOf(sessionId, snapshot.cursor);
      const state = JSON.stringify(snapshot.state) ?? 'null';
      if (state.length > maxSessionBytes / 2) {
        throw new AgentEventLogError(
          'too_large',
          `The snapshot of session ${sessionId} has ${state.length} bytes, more than half of maxBytesPerSession (${maxSessionBytes})`,
        );
      }
      await caller.script(`save ${key}`, SAVE_SNAPSHOT_SCRIPT, [key], [cursor, state, ttlSeconds], true);
    },

    async loadSnapshot(sessionId) {
      const key = keys.snapshot(sessionId);
      const [cursor, state] = await caller.send<(string | null)[]>(
        `load ${key}`,
        key,
        ['HMGET', key, 'cursor', 'state'],
        true,
      );
      if (cursor === null || cursor === undefined) return undefined;
      if (typeof state !== 'string') throw new AgentEventLogError('unavailable', `Snapshot ${key} has no state`);
      try {
        return { cursor, state: JSON.parse(state) as unknown };
      } catch (error) {
        throw new AgentEventLogError('unavailable', `Snapshot ${key} holds a state that is not JSON`, { cause: error });
      }
    },

    async claimRun(sessionId, runId, owner, ttlMs) {
      const key = keys.run(sessionId, runId);
      const reply = await caller.send(`claim ${key}`, key, [
        'SET',
        key,
        ownedRun(owner),
        'NX',
        'PX',
        milliseconds(ttlMs),
      ]);
      return reply === 'OK';
    },

    async renewRun(sessionId, runId, owner, ttlMs) {
      const key = keys.run(sessionId, runId);
      const renewed = await caller.script(
        `renew ${key}`,
        RENEW_RUN_SCRIPT,
        [key, keys.events(sessionId), keys.snapshot(sessionId)],
        [ownedRun(owner), milliseconds(ttlMs), ttlSeconds],
        true,
      );
      return renewed === 1;
    },

    async releaseRun(sessionId, runId, owner) {
      const key = keys.run(sessionId, runId);
      await caller.script(`release ${key}`, RELEASE_RUN_SCRIPT, [key], [ownedRun(owner), ENDED_RUN, ttlSeconds], true);
    },

    async runOwner(sessionId, runId) {
      const key = keys.run(sessionId, runId);
      return parseRunOwner(key, await caller.send<string | null>(`read ${key}`, key, ['GET', key], true));
    },

    async claimCommand(sessionId, key, fingerprint, ttlMs) {
      const recordKey = keys.command(sessionId, key);
      const pending = JSON.stringify({ status: 'pending', fingerprint });
      const current = await caller.script<string | null>(
        `claim ${recordKey}`,
        CLAIM_COMMAND_SCRIPT,
        [recordKey],
        [pending, milliseconds(ttlMs)],
      );
      return current === null ? undefined : parseCommandRecord(recordKey, current);
    },

    async settleCommand(sessionId, key, { fingerprint, outcome }, ttlMs) {
      const recordKey = keys.command(sessionId, key);
      const channel = keys.commandSettled(sessionId, key);
      const standing = await caller.script<string>(
        `settle ${recordKey}`,
        SETTLE_COMMAND_SCRIPT,
        [recordKey],
        [JSON.stringify(outcome), milliseconds(ttlMs), channel, fingerprint, subscriber.publishCommand],
        true,
      );
      const record = parseCommandRecord(recordKey, standing);
      return record.status === 'settled' ? record.outcome : outcome;
    },

    async awaitCommand(sessionId, key, { timeoutMs, signal }) {
      if (caller.closed) throw caller.closedError('await a command');
      const recordKey = keys.command(sessionId, key);
      const channel = keys.commandSettled(sessionId, key);
      if (signal?.aborted) return undefined;
      if (timeoutMs <= 0) {
        const current = await caller.send<string | null>(`read ${recordKey}`, recordKey, ['GET', recordKey], true);
        const record = current === null ? undefined : parseCommandRecord(recordKey, current);
        return record?.status === 'settled' ? record : undefined;
      }
      return new Promise<AgentCommandRecord | undefined>((resolve, reject) => {
        let done = false;
        let unsubscribe: (() => Promise<void>) | undefined;
        const finish = (outcome: { record: AgentCommandRecord | undefined } | { error: unknown }) => {
          if (done) return;
          done = true;
          clearTimeout(timer);
          signal?.removeEventListener('abort', giveUp);
          onClose.delete(giveUp);
          void unsubscribe?.();
          if ('error' in outcome) reject(outcome.error);
          else resolve(outcome.record);
        };
        const giveUp = () => finish({ record: undefined });
        const listener: RedisMessageListener = (message) => {
          const record = settledRecordOf(recordKey, message);
          if (record !== undefined) finish({ record });
        };
        const timer = setTimeout(giveUp, Math.min(timeoutMs, MAX_TIMER_MS));
        signal?.addEventListener('abort', giveUp, { once: true });
        onClose.add(giveUp);
        // Subscribe first, then read: a settlement between the two is heard either way.
        (async () => {
          const stop = await subscriber.subscribe(`subscribe to ${channel}`, channel, listener);
          if (done) {
            void stop();
            return;
          }
          unsubscribe = stop;
          const current = await caller.send<string | null>(`read ${recordKey}`, recordKey, ['GET', recordKey], true);
          const record = current === null ? undefined : parseCommandRecord(recordKey, current);
          if (record?.status === 'settled') finish({ record });
        })().catch((error: unknown) => finish({ error }));
      });
    },

    async signal(owner, signal) {
      await subscriber.publish(`signal ${owner}`, keys.signals(owner), JSON.stringify(signal));
    },

    async listen(owner, handler) {
      const channel = keys.signals(owner);
      let listening = true;
      const listener: RedisMessageListener = (message) => {
        const signal = hostSignalOf(message);
        if (signal === undefined || !listening) return;
        try {
          handler(signal);
        } catch {
          // The handler runs inside the shared subscriber's reply parser: a throw there
          // would break delivery for every listener of this log. Its errors are its own.
        }
      };
      const unsubscribe = await subscriber.subscribe(`listen for ${owner}`, channel, listener);
      return async () => {
        if (!listening) return;
        listening = false;
        if (!caller.closed) await unsubscribe();
      };
    },

    async close() {
      if (caller.closed) return;
      const closing = caller.close();
      followers.close();
      for (const giveUp of [...onClose]) giveUp();
      await Promise.all([subscriber.close(), closing]);
    },
  };
}
