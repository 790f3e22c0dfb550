import type { AgentEventLogEntry } from '../AgentEventLog';

/** What `follow` waits with once its read found nothing: it resolves when appends come. */
export interface RedisFollowing {
  /**
   * Taken just before `follow` reads: given back to `wait`, it tells whether an append after
   * that read is sure to wake the follower, or the follower must read once more.
   */
  beforeRead(sessionId: string): unknown;
  /**
   * Resolves the entries after `after` once there are some (at most `limit`, and about
   * `maxBytes` with one entry at least), `[]` after `timeoutMs` or on abort.
   */
  wait(
    sessionId: string,
    after: string | undefined,
    limit: number,
    maxBytes: number | undefined,
    timeoutMs: number,
    signal: AbortSignal | undefined,
    beforeRead: unknown,
  ): Promise<readonly AgentEventLogEntry[]>;
  /** Notes that `cursor` of the session was read. */
  saw(sessionId: string, cursor: string): void;
  /** Resolves every waiter with `[]` and lets go of what it holds. */
  close(): void;
}
