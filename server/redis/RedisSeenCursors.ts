import { compareCursors } from './redisCursors';

/**
 * The newest cursor one log has appended or read for each of the latest `maxSessions`
 * sessions (the oldest-touched session is forgotten first). A failover may lose what the old
 * master acknowledged: this is what lets the log know a cursor it gave is gone, and chain the
 * next append to it, so readers before it get `cursor_expired` instead of missing it.
 */
export class RedisSeenCursors {
  readonly #newest = new Map<string, string>();
  readonly #maxSessions: number;

  constructor(maxSessions: number) {
    this.#maxSessions = maxSessions;
  }

  /** Notes `cursor` (canonical) of the session, when it is newer than the one noted. */
  saw(sessionId: string, cursor: string): void {
    const current = this.#newest.get(sessionId);
    this.#newest.delete(sessionId);
    this.#newest.set(sessionId, current !== undefined && compareCursors(current, cursor) > 0 ? current : cursor);
    if (this.#newest.size > this.#maxSessions) {
      const oldest = this.#newest.keys().next();
      if (!oldest.done) this.#newest.delete(oldest.value);
    }
  }

  /** The newest cursor noted for the session, or `undefined`. */
  newest(sessionId: string): string | undefined {
    return this.#newest.get(sessionId);
  }

  /** Whether `cursor` (canonical) is one the log appended or read for the session, or before it. */
  given(sessionId: string, cursor: string): boolean {
    const newest = this.#newest.get(sessionId);
    return newest !== undefined && compareCursors(cursor, newest) <= 0;
  }
}
