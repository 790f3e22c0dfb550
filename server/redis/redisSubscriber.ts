import type { RedisCaller } from './redisCaller';
import { CONNECT_TIMEOUT_MS } from './redisCaller';
import {
  destroyQuietly,
  openConnection,
  type RedisEventLogConnection,
  type RedisMessageListener,
} from './redisConnections';

/** A log's one pub/sub connection, opened on first use and shared by all its channels. */
export interface RedisSubscriber {
  /** Resolves once `listener` hears `channel`, with the function that stops it (which never rejects). */
  subscribe(what: string, channel: string, listener: RedisMessageListener): Promise<() => Promise<void>>;
  close(): Promise<void>;
}

/**
 * node-redis keeps any number of channels, and listeners per channel, on one connection, and
 * subscribes them again after a reconnect; UNSUBSCRIBE goes out when a channel's last
 * listener leaves.
 */
export function createRedisSubscriber(caller: RedisCaller): RedisSubscriber {
  let connection: Promise<RedisEventLogConnection> | undefined;

  function connectionOf(): Promise<RedisEventLogConnection> {
    if (connection !== undefined) return connection;
    const opening = openConnection(caller.client, 'agent-machines-subscriber', CONNECT_TIMEOUT_MS);
    connection = opening;
    opening.catch(() => {
      if (connection === opening) connection = undefined;
    });
    return opening;
  }

  return {
    subscribe: (what, channel, listener) =>
      caller.call(what, async () => {
        const opened = await connectionOf();
        await opened.subscribe(channel, listener);
        return () => opened.unsubscribe(channel, listener).catch(() => {});
      }),
    async close() {
      const opened = connection;
      connection = undefined;
      await opened?.then(destroyQuietly, () => {});
    },
  };
}
