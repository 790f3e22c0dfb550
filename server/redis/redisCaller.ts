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
/** How long a call whose connection was dropped waits for the client to reconnect, to run again. */
export const RECONNECT_WAIT_MS = 1_000;
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
   * (a `CLIENT KILL`, a network blip) and the client reconnects within a second, an
   * `idempotent` call runs once more: running it twice does what running it once does.
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
}): RedisCaller {
  const { commandTimeoutMs } = options;
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

  /** Resolves `true` once the client is ready again, `false` when it is not within `RECONNECT_WAIT_MS`. */
  async function reconnected(): Promise<boolean> {
    const deadline = Date.now() + RECONNECT_WAIT_MS;
    while (!isReady()) {
      if (closed || Date.now() >= deadline) return false;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    return true;
  }

  /** A failure of the connection (reset, closed under the call, reconnecting), not an answer of Redis nor a timeout. */
  const connectionLost = (error: unknown) =>
    error instanceof Error && !isRedisReply(error) && !error.message.startsWith('no answer within');

  /**
   * `run`, sent again while a cluster node answers TRYAGAIN (a multi-key command or script on a
   * slot being migrated, whose keys are split between two nodes or not all there yet; the
   * command did not run), every 10 ms, within the command timeout.
   */
  async function tryAgain<Reply>(run: () => Promise<Reply>): Promise<Reply> {
    const deadline = Date.now() + commandTimeoutMs;
    for (;;) {
      try {
        return await bounded(run);
      } catch (error) {
        const migrating = error instanceof Error && isRedisReply(error) && error.message.startsWith('TRYAGAIN');
        if (!migrating || closed || Date.now() >= deadline) throw error;
        await new Promise((resolve) => setTimeout(resolve, TRY_AGAIN_MS));
      }
    }
  }

  async function call<Reply>(what: string, run: () => Promise<Reply>, idempotent = false): Promise<Reply> {
    if (closed) throw closedError(what);
    try {
      await ensureConnected();
      return await tryAgain(run);
    } catch (error) {
      if (!idempotent || closed || !connectionLost(error) || !(await reconnected())) throw toError(what, error);
      try {
        return await tryAgain(run);
      } catch (again) {
        throw toError(what, again);
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
