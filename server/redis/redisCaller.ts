import { createClient, createCluster, type RedisClusterOptions } from 'redis';
import { AgentEventLogError } from '../AgentEventLogError';
import {
  destroyQuietly,
  isClusterClient,
  type RedisEventLogClient,
  type RedisEventLogClusterClient,
} from './redisConnections';
import { type RedisScript, runScript } from './redisScripts';

/** How long a first connection, or a blocking or pub/sub connection, may take to open. */
export const CONNECT_TIMEOUT_MS = 5_000;
/**
 * How long, by default, an idempotent call whose connection was lost is sent again: through a
 * reconnect of one Redis or the failover of a cluster's master (the node timeout, an election
 * and the client's rediscovery).
 */
export const RECONNECT_WITHIN_MS = 5_000;
/** The pause between two attempts of a call whose connection is lost, while the client reconnects. */
const RECONNECT_POLL_MS = 50;
/**
 * How often a cluster client of the log's own asks the cluster for its topology while a node's
 * connection is down (node-redis waits 5 s by default): a master that died is replaced by its
 * replica, and the client finds it within this much after the promotion (redis 6.3 or later).
 */
const TOPOLOGY_REFRESH_MS = 500;
/** How long a command a migrating slot answered TRYAGAIN waits before it is sent again. */
const TRY_AGAIN_MS = 10;

/** Where a log's commands go: one Redis, or a Redis Cluster that routes each by its key. */
export type RedisTarget =
  | { kind: 'standalone'; client: RedisEventLogClient }
  | { kind: 'cluster'; cluster: RedisEventLogClusterClient };

/** The client a log runs its commands on, with every failure turned into an `AgentEventLogError`. */
export interface RedisCaller {
  readonly target: RedisTarget;
  readonly closed: boolean;
  /**
   * Runs `run` for `what` ("append to <key>"): `closed` after close, `unavailable` when Redis
   * fails or does not answer within the command timeout. When the connection drops under it
   * (a `CLIENT KILL`, a restart, a master killed and replaced by its replica), an `idempotent`
   * call is sent again until it runs, for up to `reconnectWithinMs`: running it twice does
   * what running it once does. Any call is sent again when Redis answers that it did not run
   * it: `TRYAGAIN` (within the command timeout) and `CLUSTERDOWN` (within `reconnectWithinMs`).
   */
  call<Reply>(what: string, run: () => Promise<Reply>, idempotent?: boolean): Promise<Reply>;
  /** Sends `args`, on a cluster to the node that holds `key` (the command's first key, or its channel). */
  send<Reply>(what: string, key: string, args: readonly string[], idempotent?: boolean): Promise<Reply>;
  /** Runs a script, on a cluster on the node that holds `keys` (all of one slot). */
  script<Reply>(
    what: string,
    script: RedisScript,
    keys: readonly [string, ...string[]],
    args: readonly string[],
    idempotent?: boolean,
  ): Promise<Reply>;
  toError(what: string, error: unknown): AgentEventLogError;
  closedError(what: string): AgentEventLogError;
  /** Marks the caller closed and closes the client when it opened it (a given client stays open). */
  close(): Promise<void>;
}

/** A client the caller opened itself, and closes. */
interface OwnedClient {
  readonly isReady: boolean;
  connect(): Promise<unknown>;
  close(): Promise<void>;
  destroy(): void;
  on(event: 'error', listener: (error: Error) => void): unknown;
}

/** Whether `error` is an answer of Redis (node-redis `ErrorReply` and its subclasses, in any copy of the package). */
function isRedisReply(error: Error): boolean {
  for (let proto = Object.getPrototypeOf(error); proto !== null; proto = Object.getPrototypeOf(proto)) {
    if (proto.constructor?.name === 'ErrorReply') return true;
  }
  return false;
}

const messageOf = (error: unknown) => (error instanceof Error ? error.message : String(error));

/**
 * A caller on `client` (standalone or cluster), or on a client of its own for `url` or
 * `cluster` that fails fast while Redis is unreachable (no offline queue) and whose first
 * connect is awaited for at most `CONNECT_TIMEOUT_MS` (node-redis retries it forever).
 */
export function createRedisCaller(options: {
  url?: string | undefined;
  client?: RedisEventLogClient | RedisEventLogClusterClient | undefined;
  cluster?: RedisClusterOptions | undefined;
  /** The longest a command may take before it rejects with `unavailable`. */
  commandTimeoutMs: number;
  /** How long an idempotent call whose connection was lost is sent again. Default `RECONNECT_WITHIN_MS`. */
  reconnectWithinMs?: number | undefined;
}): RedisCaller {
  const { commandTimeoutMs, reconnectWithinMs = RECONNECT_WITHIN_MS } = options;
  let target: RedisTarget;
  let ownedClient: OwnedClient | undefined;
  if (options.client !== undefined) {
    target = isClusterClient(options.client)
      ? { kind: 'cluster', cluster: options.client }
      : { kind: 'standalone', client: options.client };
  } else if (options.cluster !== undefined) {
    const cluster = createCluster({
      topologyRefreshOnReconnectionAttemptStrategy: TOPOLOGY_REFRESH_MS,
      ...options.cluster,
      defaults: { disableOfflineQueue: true, ...options.cluster.defaults },
    });
    ownedClient = cluster;
    target = { kind: 'cluster', cluster: cluster as unknown as RedisEventLogClusterClient };
  } else {
    const client = createClient({
      ...(options.url === undefined ? {} : { url: options.url }),
      disableOfflineQueue: true,
    });
    ownedClient = client;
    target = { kind: 'standalone', client };
  }
  const isReady = () => (target.kind === 'cluster' ? target.cluster.isReady : target.client.isReady);
  const sendTo = <Reply>(key: string, args: readonly string[]): Promise<Reply> =>
    target.kind === 'cluster'
      ? target.cluster.sendCommand<Reply>(key, false, [...args])
      : target.client.sendCommand<Reply>(args);
  let connected = ownedClient === undefined;
  let connecting: Promise<unknown> | undefined;
  if (ownedClient !== undefined) {
    // Errors reach callers through their commands; an unheard 'error' event would throw.
    ownedClient.on('error', () => {});
    connecting = ownedClient.connect().then(() => {
      connected = true;
    });
    connecting.catch(() => {});
  }
  let closed = false;

  async function ensureConnected(): Promise<void> {
    if (connected || connecting === undefined) return;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timedOut = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`not connected within ${CONNECT_TIMEOUT_MS} ms`)), CONNECT_TIMEOUT_MS);
    });
    await Promise.race([connecting, timedOut]).finally(() => clearTimeout(timer));
  }

  const closedError = (what: string) =>
    new AgentEventLogError('closed', `Cannot ${what}: the Redis event log is closed`);

  function toError(what: string, error: unknown): AgentEventLogError {
    if (AgentEventLogError.isInstance(error)) return error;
    if (closed) return closedError(what);
    return new AgentEventLogError('unavailable', `Redis could not ${what}: ${messageOf(error)}`, { cause: error });
  }

  /** `run`, rejecting when it takes longer than the command timeout (a hung or paused Redis). */
  async function bounded<Reply>(run: () => Promise<Reply>): Promise<Reply> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timedOut = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer within ${commandTimeoutMs} ms`)), commandTimeoutMs);
    });
    try {
      return await Promise.race([run(), timedOut]);
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * Resolves `true` when the call may be sent again: after a pause, once the client is ready
   * (a cluster client stays ready while one node is down; its next attempt finds the node's
   * replacement or fails again). `false` when `deadline` passes first.
   */
  async function mayRetry(deadline: number): Promise<boolean> {
    do {
      if (closed || Date.now() >= deadline) return false;
      await new Promise((resolve) => setTimeout(resolve, Math.min(RECONNECT_POLL_MS, deadline - Date.now())));
    } while (!isReady());
    return !closed;
  }

  /** A failure of the connection (reset, closed under the call, reconnecting), not an answer of Redis nor a timeout. */
  const connectionLost = (error: unknown) =>
    error instanceof Error && !isRedisReply(error) && !error.message.startsWith('no answer within');

  /** Whether Redis answered `error` with `code` (`TRYAGAIN`, `CLUSTERDOWN`): the command did not run. */
  const answered = (error: unknown, code: string) =>
    error instanceof Error && isRedisReply(error) && error.message.startsWith(code);

  /**
   * Runs `run`, sending it again while Redis says it did not run it for a passing reason:
   * - `TRYAGAIN` (a multi-key command or script on a slot being migrated, whose keys are split
   *   between two nodes for a moment): every 10 ms, within the command timeout;
   * - `CLUSTERDOWN` (a slot has no master: a failover is under way) and, for an `idempotent`
   *   call, a lost connection: once the client is ready, within `reconnectWithinMs`.
   */
  async function call<Reply>(what: string, run: () => Promise<Reply>, idempotent = false): Promise<Reply> {
    if (closed) throw closedError(what);
    const started = Date.now();
    for (;;) {
      try {
        await ensureConnected();
        return await bounded(run);
      } catch (error) {
        if (closed) throw toError(what, error);
        if (answered(error, 'TRYAGAIN') && Date.now() < started + commandTimeoutMs) {
          await new Promise((resolve) => setTimeout(resolve, TRY_AGAIN_MS));
          continue;
        }
        const passing = answered(error, 'CLUSTERDOWN') || (idempotent && connectionLost(error));
        if (!passing || !(await mayRetry(started + reconnectWithinMs))) throw toError(what, error);
      }
    }
  }

  return {
    target,
    get closed() {
      return closed;
    },
    call,
    send: (what, key, args, idempotent) => call(what, () => sendTo(key, args), idempotent),
    script: (what, script, keys, args, idempotent) =>
      call(what, () => runScript((command) => sendTo(keys[0], command), script, keys, args), idempotent),
    toError,
    closedError,
    async close() {
      closed = true;
      const owned = ownedClient;
      if (owned === undefined) return;
      if (owned.isReady) await owned.close().catch(() => destroyQuietly(owned));
      else destroyQuietly(owned);
    },
  };
}
