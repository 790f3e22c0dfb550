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

/** What a follower's wait ends with: its page of entries, or the read's error. */
export type FollowerOutcome = { entries: readonly AgentEventLogEntry[] } | { error: unknown };

/** One follower waiting on a session, after its cursor. */
export interface FollowerWaiter {
  /** Canonical cursor, or undefined for "from the oldest retained entry". */
  after: string | undefined;
  limit: number;
  /** At most about this many bytes of events in its page; undefined for no byte bound. */
  maxBytes: number | undefined;
  settle(outcome: FollowerOutcome): void;
}

/** A session's waiting followers, grouped by the cursor they wait after (`''` for none). */
export type FollowerGroups = Map<string, Set<FollowerWaiter>>;

/** setTimeout fires at once for a delay past 2^31 - 1 ms: a longer wait is capped there (~24.8 days). */
const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * Adds a follower waiting after `after` to its group in `groups`. It settles once, with its
 * page or the read's error (`resolve`, `reject`), or with `[]` after `timeoutMs` or on abort;
 * then it leaves its group, and `onNoneLeft` runs when the session has no group left.
 */
export function addFollowerWaiter(
  groups: FollowerGroups,
  request: {
    after: string | undefined;
    limit: number;
    maxBytes: number | undefined;
    timeoutMs: number;
    signal: AbortSignal | undefined;
  },
  resolve: (entries: readonly AgentEventLogEntry[]) => void,
  reject: (error: unknown) => void,
  onNoneLeft: () => void,
): void {
  const { after, limit, maxBytes, timeoutMs, signal } = request;
  const groupKey = after ?? '';
  let group = groups.get(groupKey);
  if (group === undefined) {
    group = new Set();
    groups.set(groupKey, group);
  }
  const joined = group;
  const onAbort = () => waiter.settle({ entries: [] });
  const timer = setTimeout(onAbort, Math.min(timeoutMs, MAX_TIMER_MS));
  let settled = false;
  const waiter: FollowerWaiter = {
    after,
    limit,
    maxBytes,
    settle: (outcome) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      joined.delete(waiter);
      if (joined.size === 0 && groups.get(groupKey) === joined) groups.delete(groupKey);
      if (groups.size === 0) onNoneLeft();
      if ('error' in outcome) reject(outcome.error);
      else resolve(outcome.entries);
    },
  };
  joined.add(waiter);
  signal?.addEventListener('abort', onAbort, { once: true });
}

/** Reads a session's entries after a cursor, at most `limit` and about `maxBytes`. */
export type FollowerRead = (
  sessionId: string,
  after: string | undefined,
  limit: number,
  maxBytes: number | undefined,
) => Promise<readonly AgentEventLogEntry[]>;

/**
 * Serves a group of a session's followers at one cursor with one read (the largest limit, the
 * smallest byte bound) and gives each its page; a read that finds nothing settles no one.
 */
export async function serveFollowerGroup(
  sessionId: string,
  group: Iterable<FollowerWaiter>,
  read: FollowerRead,
): Promise<void> {
  const waiters = [...group];
  const first = waiters[0];
  if (first === undefined) return;
  let limit = 0;
  let maxBytes: number | undefined;
  for (const waiter of waiters) {
    limit = Math.max(limit, waiter.limit);
    // The smallest byte bound serves them all: a page is "at most", so a shorter one is one.
    if (waiter.maxBytes !== undefined) maxBytes = Math.min(maxBytes ?? waiter.maxBytes, waiter.maxBytes);
  }
  let entries: readonly AgentEventLogEntry[];
  try {
    entries = await read(sessionId, first.after, limit, maxBytes);
  } catch (error) {
    for (const waiter of waiters) waiter.settle({ error });
    return;
  }
  if (entries.length === 0) return;
  for (const waiter of waiters) {
    waiter.settle({ entries: waiter.limit < entries.length ? entries.slice(0, waiter.limit) : entries });
  }
}
