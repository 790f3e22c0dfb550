/** A pub/sub message handler: node-redis calls it with the message and its channel. */
export type RedisMessageListener = (message: string, channel: string) => unknown;

/**
 * The part of a node-redis client (`redis` v5 or v6) the event log uses: what `createClient()`
 * returns, with any modules, RESP version or type mapping.
 */
export interface RedisEventLogClient {
  readonly isOpen: boolean;
  readonly isReady: boolean;
  sendCommand<Reply = unknown>(args: ReadonlyArray<string>, options?: { timeout?: number }): Promise<Reply>;
  duplicate(overrides?: { disableOfflineQueue?: boolean; name?: string }): RedisEventLogConnection;
}

/**
 * The part of a node-redis cluster client (`redis` v5 or v6, what `createCluster()` returns)
 * the event log uses: commands routed by their first key, and sharded pub/sub (Redis 7).
 */
export interface RedisEventLogClusterClient {
  readonly isOpen: boolean;
  readonly isReady: boolean;
  /** The cluster's masters: a cluster client has them, a standalone one does not. */
  readonly masters: readonly unknown[];
  sendCommand<Reply = unknown>(
    firstKey: string | undefined,
    isReadonly: boolean | undefined,
    args: string[],
  ): Promise<Reply>;
  sSubscribe(channel: string, listener: RedisMessageListener): Promise<void>;
  sUnsubscribe(channel: string, listener?: RedisMessageListener): Promise<void>;
  on(event: 'node-ready', listener: () => void): unknown;
  off(event: 'node-ready', listener: () => void): unknown;
}

/** Whether `client` is a cluster client rather than a standalone one. */
export function isClusterClient(
  client: RedisEventLogClient | RedisEventLogClusterClient,
): client is RedisEventLogClusterClient {
  return 'masters' in client && 'sSubscribe' in client;
}

/** A connection the log opens itself (with `duplicate`) and closes. */
export interface RedisEventLogConnection extends RedisEventLogClient {
  connect(): Promise<unknown>;
  close(): Promise<void>;
  destroy(): void;
  on(event: 'error', listener: (error: Error) => void): unknown;
  subscribe(channel: string, listener: RedisMessageListener): Promise<void>;
  unsubscribe(channel: string, listener: RedisMessageListener): Promise<void>;
}

/**
 * Connects within `timeoutMs` or destroys the connection and rejects: node-redis retries a
 * refused connection forever, which would hang the caller while Redis is down.
 */
export async function connectWithin(connection: RedisEventLogConnection, timeoutMs: number): Promise<void> {
  const connecting = connection.connect();
  // Destroying the connection below rejects `connecting` too; that rejection is this one's.
  connecting.catch(() => {});
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timedOut = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`Could not connect to Redis within ${timeoutMs} ms`)), timeoutMs);
  });
  try {
    await Promise.race([connecting, timedOut]);
  } catch (error) {
    connection.destroy();
    throw error;
  } finally {
    clearTimeout(timer);
  }
}

/** Opens one more connection like `client`'s that fails fast while Redis is unreachable. */
export async function openConnection(
  client: RedisEventLogClient,
  name: string,
  timeoutMs: number,
): Promise<RedisEventLogConnection> {
  // A duplicate of a client that lost Redis would retry its connect until the bound: fail now.
  if (!client.isReady) throw new Error('the Redis client is not connected');
  const connection = client.duplicate({ disableOfflineQueue: true, name });
  // node-redis emits connection errors as events (an unheard 'error' event throws); the
  // commands on this connection reject with them too, which is where they are reported.
  connection.on('error', () => {});
  await connectWithin(connection, timeoutMs);
  return connection;
}

/** Drops a connection now, whatever its state (node-redis v5 throws on a second destroy). */
export function destroyQuietly(connection: { destroy(): void }): void {
  try {
    connection.destroy();
  } catch {
    // Already closed: nothing left to drop.
  }
}
