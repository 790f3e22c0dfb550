export type { RedisEventLogOptions } from './createRedisEventLog';
export { createRedisEventLog } from './createRedisEventLog';
export type { RedisEventLogClient, RedisEventLogConnection, RedisMessageListener } from './redisConnections';
