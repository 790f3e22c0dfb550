/** Where one log keeps a session's data and publishes its messages. */
export interface RedisKeys {
  events(sessionId: string): string;
  snapshot(sessionId: string): string;
  /** The ids one append batch got, kept a short while so the batch sent again is not appended twice. */
  appended(sessionId: string, batchId: string): string;
  run(sessionId: string, runId: string): string;
  command(sessionId: string, key: string): string;
  commandSettled(sessionId: string, key: string): string;
  /** The sharded channel each append to the session publishes its newest id on (on a cluster). */
  eventsAppended(sessionId: string): string;
  signals(owner: string): string;
}

/**
 * Key names under `prefix`. Every key of a session carries the hash tag `{<sessionId>}`, so a
 * Redis Cluster keeps a session on one slot (the scripts touch several of its keys). Ids are
 * URI-encoded: a `}` or `:` in an id can neither cut the tag short nor reach another key.
 *
 * @example
 * createRedisKeys('agent-machines:').events('s1'); // 'agent-machines:{s1}:events'
 */
export function createRedisKeys(prefix: string): RedisKeys {
  const session = (sessionId: string) => `${prefix}{${encodeURIComponent(sessionId)}}`;
  return {
    events: (sessionId) => `${session(sessionId)}:events`,
    snapshot: (sessionId) => `${session(sessionId)}:snapshot`,
    appended: (sessionId, batchId) => `${session(sessionId)}:appended:${batchId}`,
    run: (sessionId, runId) => `${session(sessionId)}:run:${encodeURIComponent(runId)}`,
    command: (sessionId, key) => `${session(sessionId)}:command:${encodeURIComponent(key)}`,
    commandSettled: (sessionId, key) => `${session(sessionId)}:command:${encodeURIComponent(key)}:settled`,
    eventsAppended: (sessionId) => `${session(sessionId)}:events:appended`,
    signals: (owner) => `${prefix}signal:${encodeURIComponent(owner)}`,
  };
}
