import type { RedisCaller } from './redisCaller';
import { CONNECT_TIMEOUT_MS } from './redisCaller';
import {
  destroyQuietly,
  openConnection,
  type RedisEventLogClient,
  type RedisEventLogClusterClient,
  type RedisEventLogConnection,
  type RedisMessageListener,
} from './redisConnections';

/** A log's pub/sub: every channel it listens to, on as few connections as the topology allows. */
export interface RedisSubscriber {
  /** Resolves once `listener` hears `channel`, with the function that stops it (which never rejects). */
  subscribe(what: string, channel: string, listener: RedisMessageListener): Promise<() => Promise<void>>;
  /** Publishes `message` on `channel` the way `subscribe` listens (`PUBLISH`, or `SPUBLISH` on a cluster). */
  publish(what: string, channel: string, message: string): Promise<void>;
  /** The command that publishes from a script: 'PUBLISH', or 'SPUBLISH' on a cluster. */
  readonly publishCommand: 'PUBLISH' | 'SPUBLISH';
  close(): Promise<void>;
}

/**
 * Pub/sub for the caller's target. On one Redis: classic channels on one connection of the
 * log's own, opened on first use. On a cluster: sharded channels (`SSUBSCRIBE`, Redis 7) on
 * the cluster client's one pub/sub connection per master, which node-redis moves with the
 * channel's slot; `close` takes back every listener the log added.
 */
export function createRedisSubscriber(caller: RedisCaller): RedisSubscriber {
  const { target } = caller;
  return target.kind === 'cluster'
    ? shardedSubscriber(caller, target.cluster)
    : standaloneSubscriber(caller, target.client);
}

/**
 * node-redis keeps any number of channels, and listeners per channel, on one connection, and
 * subscribes them again after a reconnect; UNSUBSCRIBE goes out when a channel's last
 * listener leaves.
 */
function standaloneSubscriber(caller: RedisCaller, client: RedisEventLogClient): RedisSubscriber {
  let connection: Promise<RedisEventLogConnection> | undefined;

  function connectionOf(): Promise<RedisEventLogConnection> {
    if (connection !== undefined) return connection;
    const opening = openConnection(client, 'agent-machines-subscriber', CONNECT_TIMEOUT_MS);
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
    async publish(what, channel, message) {
      await caller.send(what, channel, ['PUBLISH', channel, message]);
    },
    publishCommand: 'PUBLISH',
    async close() {
      const opened = connection;
      connection = undefined;
      await opened?.then(destroyQuietly, () => {});
    },
  };
}

/** The cluster client's connections are its own: the log only adds and removes listeners. */
function shardedSubscriber(caller: RedisCaller, cluster: RedisEventLogClusterClient): RedisSubscriber {
  const subscriptions = new Set<{ channel: string; listener: RedisMessageListener }>();
  const stop = async (subscription: { channel: string; listener: RedisMessageListener }) => {
    if (!subscriptions.delete(subscription)) return;
    await cluster.sUnsubscribe(subscription.channel, subscription.listener).catch(() => {});
  };
  return {
    subscribe: (what, channel, listener) =>
      caller.call(what, async () => {
        const subscription = { channel, listener };
        subscriptions.add(subscription);
        try {
          await cluster.sSubscribe(channel, listener);
        } catch (error) {
          void stop(subscription);
          throw error;
        }
        return () => stop(subscription);
      }),
    async publish(what, channel, message) {
      await caller.send(what, channel, ['SPUBLISH', channel, message]);
    },
    publishCommand: 'SPUBLISH',
    async close() {
      await Promise.all([...subscriptions].map(stop));
    },
  };
}
