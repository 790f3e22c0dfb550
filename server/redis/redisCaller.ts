import { createClient } from 'redis';
import { AgentEventLogError } from '../AgentEventLogError';
import { destroyQuietly, type RedisEventLogClient, type RedisEventLogConnection } from './redisConnections';
import { type RedisScript, runScript } from './redisScripts';

/** How long a first connection, or a blocking or pub/sub connection, may take to open. */
export const CONNECT_TIMEOUT_MS = 5_000;

/** The client a log runs its commands on, with every failure turned into an `AgentEventLogError`. */
export interface RedisCaller {
  readonly client: RedisEventLogClient;
  readonly closed: boolean;
  /** Runs `run` for `what` ("append to <key>"): `closed` after close, `unavailable` when Redis fails. */
  call<Reply>(what: string, run: () => Promise<Reply>): Promise<Reply>;
  send<Reply>(what: string, args: readonly string[]): Promise<Reply>;
  script<Reply>(what: string, script: RedisScript, keys: readonly string[], args: readonly string[]): Promise<Reply>;
  toError(what: string, error: unknown): AgentEventLogError;
  closedError(what: string): AgentEventLogError;
  /** Marks the caller closed and closes the client when it opened it (a given client stays open). */
  close(): Promise<void>;
}

const messageOf = (error: unknown) => (error instanceof Error ? error.message : String(error));

/**
 * A caller on `client`, or on a client of its own for `url` that fails fast while Redis is
 * unreachable (no offline queue) and whose first connect is awaited for at most
 * `CONNECT_TIMEOUT_MS` (node-redis retries it forever).
 */
export function createRedisCaller(options: { url?: string | undefined; client?: RedisEventLogClient | undefined }) {
  const ownedClient: RedisEventLogConnection | undefined =
    options.client === undefined
      ? createClient({ ...(options.url === undefined ? {} : { url: options.url }), disableOfflineQueue: true })
      : undefined;
  const client: RedisEventLogClient = options.client ?? ownedClient!;
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

  async function call<Reply>(what: string, run: () => Promise<Reply>): Promise<Reply> {
    if (closed) throw closedError(what);
    try {
      await ensureConnected();
      return await run();
    } catch (error) {
      throw toError(what, error);
    }
  }

  const caller: RedisCaller = {
    client,
    get closed() {
      return closed;
    },
    call,
    send: (what, args) => call(what, () => client.sendCommand(args)),
    script: (what, script, keys, args) => call(what, () => runScript(client, script, keys, args)),
    toError,
    closedError,
    async close() {
      closed = true;
      if (ownedClient === undefined) return;
      if (ownedClient.isReady) await ownedClient.close().catch(() => destroyQuietly(ownedClient));
      else destroyQuietly(ownedClient);
    },
  };
  return caller;
}
