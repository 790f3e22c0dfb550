import type { AgentEvent } from '../protocol/eventSchemas';
import type { AgentEventLog, AgentEventLogEntry } from './AgentEventLog';
import { AgentHostError } from './AgentHostError';
import type { CatchUpPass } from './CatchUpReaders';

/**
 * One log entry as event-stream readers need it: its event, parsed once for all of them, and
 * its SSE frame (`id: <cursor>\ndata: <event JSON>\n\n`), encoded once, when a reader of
 * the host's own wire first asks for it.
 */
export class EncodedEntry {
  private encoded: string | undefined;

  constructor(
    readonly cursor: string,
    readonly event: AgentEvent,
  ) {}

  get runId(): string {
    return this.event.runId;
  }

  get type(): string {
    return this.event.type;
  }

  get frame(): string {
    this.encoded ??= `id: ${this.cursor}\ndata: ${JSON.stringify(this.event)}\n\n`;
    return this.encoded;
  }
}

export interface SessionFeedOptions {
  /** Entries kept for readers near the live edge; a reader further behind reads the log itself. */
  capacity: number;
  pageSize: number;
  /** At most about this many bytes of events in one read of the log (one entry at least). Default 1 MiB. */
  pageBytes?: number;
  /** How long the feed's own read of the log waits for an append before it looks again. */
  followMs: number;
}

const DEFAULT_PAGE_BYTES = 1_048_576;

const encodeEntry = ({ cursor, event }: AgentEventLogEntry): EncodedEntry => new EncodedEntry(cursor, event);

/**
 * What every event-stream reader of one session on this instance shares, whichever wire it
 * writes: one read of the log at the live edge, each event parsed once and its frame encoded
 * once. Without it, each of N readers would read, parse (and, from Redis, validate) and
 * encode every event: N times the work for the same bytes. Readers whose cursor is in the feed's window read from it; a reader behind the
 * window (or one that came before the feed started) reads the log itself until it catches up.
 * The window is bounded (`capacity` entries, each its event and, once asked for, its frame),
 * so the feed's memory is too.
 */
export class SessionFeed {
  private entries: EncodedEntry[] = [];
  /** Index in `entries` of the oldest kept entry: evicted slots are dropped in bulk, not shifted one by one. */
  private head = 0;
  /** Absolute position of every kept entry's cursor, and of `base` (the cursor the feed started after) as -1 + start. */
  private readonly positions = new Map<string, number>();
  /** Absolute position of `entries[head]`. */
  private start = 0;
  /** The cursor the feed reads after: its newest entry's, or the one it started from. */
  private edge: string | undefined;
  private started = false;
  /** The feed started at the session's very beginning (an empty session): `after` undefined reads from it. */
  private fromStart = false;
  private readers = 0;
  /** Readers waiting at the edge, woken by the feed's next page. */
  private readonly waiting = new Set<() => void>();
  private stop: AbortController | undefined;

  constructor(
    private readonly log: AgentEventLog,
    private readonly sessionId: string,
    private readonly options: SessionFeedOptions,
    /** Called when the last reader releases the feed. */
    private readonly onUnused: () => void = () => {},
  ) {}

  /** A reader starts using the feed; `release` when it ends. */
  acquire(): void {
    this.readers += 1;
  }

  /** A reader is done; the last one stops the feed's reading and drops its window. */
  release(): void {
    this.readers -= 1;
    if (this.readers > 0) return;
    this.stop?.abort();
    this.stop = undefined;
    this.started = false;
    this.entries = [];
    this.head = 0;
    this.positions.clear();
    this.wakeAll();
    this.onUnused();
  }

  /**
   * Up to `limit` entries after `after`, waiting up to `timeoutMs` when there are none yet.
   * Rejects as `log.read` does (`invalid_cursor`, `cursor_expired`) for a cursor outside the
   * feed's window. A reader outside the window reads the log with its `pass`, which holds a
   * place among the readers catching up until it reaches the window or the log's edge: with
   * no place free, a first read (`timeoutMs` 0) rejects with `unavailable` (retry after a
   * second), a later one waits for a place up to `timeoutMs`, then resolves `[]`.
   */
  async read(
    after: string | undefined,
    limit: number,
    timeoutMs: number,
    signal?: AbortSignal,
    pass?: CatchUpPass,
  ): Promise<readonly EncodedEntry[]> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const position = this.positionAfter(after);
      if (position !== undefined) {
        pass?.leave();
        const end = this.start + this.entries.length - this.head;
        if (position < end) {
          const from = this.head + (position - this.start);
          return this.entries.slice(from, from + Math.min(limit, end - position));
        }
      } else {
        if (pass !== undefined && !(await pass.enter(Math.max(0, deadline - Date.now()), signal))) {
          if (timeoutMs > 0) return [];
          throw new AgentHostError('unavailable', 'Too many readers are catching up on this host: retry shortly', {
            retryAfterSeconds: 1,
          });
        }
        const maxBytes = this.options.pageBytes ?? DEFAULT_PAGE_BYTES;
        const page = await this.log.read(this.sessionId, { after, limit, maxBytes });
        if (page.length > 0) return page.map(encodeEntry);
        // At the log's edge: caught up.
        pass?.leave();
        if (signal?.aborted || this.readers === 0) return [];
        // At the log's edge: the feed follows from here unless it already follows.
        if (!this.started) this.begin(after);
      }
      const left = deadline - Date.now();
      if (left <= 0 || signal?.aborted) return [];
      await this.sleep(left, signal);
    }
  }

  /** Waits for the feed's next page, at most `ms`, or until `signal` aborts. */
  private sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
    return new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', done);
        this.waiting.delete(done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      signal?.addEventListener('abort', done, { once: true });
      this.waiting.add(done);
    });
  }

  private wakeAll(): void {
    for (const wake of [...this.waiting]) wake();
  }

  /** The absolute position of the entry after `after`, when the window holds it (or `after` is the feed's start). */
  private positionAfter(after: string | undefined): number | undefined {
    if (!this.started) return undefined;
    // From the session's start: the window holds it while nothing was evicted.
    if (after === undefined) return this.fromStart && this.start === 0 ? 0 : undefined;
    const position = this.positions.get(after);
    return position === undefined ? undefined : position + 1;
  }

  private begin(after: string | undefined): void {
    this.started = true;
    this.fromStart = after === undefined;
    this.edge = after;
    this.start = 0;
    if (after !== undefined) this.positions.set(after, -1);
    const stop = new AbortController();
    this.stop = stop;
    void this.follow(stop.signal);
  }

  private async follow(signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      let page: readonly AgentEventLogEntry[];
      try {
        page = await this.log.follow(this.sessionId, {
          after: this.edge,
          limit: this.options.pageSize,
          maxBytes: this.options.pageBytes ?? DEFAULT_PAGE_BYTES,
          timeoutMs: this.options.followMs,
          signal,
        });
      } catch {
        // The log failed or trimmed past the feed: readers read the log themselves until one starts it again.
        if (!signal.aborted) this.reset();
        return;
      }
      if (signal.aborted) return;
      if (page.length === 0) continue;
      this.append(page.map(encodeEntry));
      this.wakeAll();
    }
  }

  private append(encoded: readonly EncodedEntry[]): void {
    for (const entry of encoded) {
      this.positions.set(entry.cursor, this.start + this.entries.length - this.head);
      this.entries.push(entry);
    }
    this.edge = encoded[encoded.length - 1]?.cursor ?? this.edge;
    const excess = this.entries.length - this.head - this.options.capacity;
    if (excess <= 0) return;
    for (let index = this.head; index < this.head + excess; index += 1) {
      this.positions.delete((this.entries[index] as EncodedEntry).cursor);
    }
    this.head += excess;
    this.start += excess;
    // The start cursor, once evicted with the first entries, no longer positions anyone.
    for (const [cursor, position] of this.positions) {
      if (position < this.start - 1) this.positions.delete(cursor);
      break;
    }
    if (this.head >= 1024 && this.head * 2 >= this.entries.length) {
      this.entries = this.entries.slice(this.head);
      this.head = 0;
    }
  }

  private reset(): void {
    this.started = false;
    this.stop = undefined;
    this.entries = [];
    this.head = 0;
    this.positions.clear();
    this.wakeAll();
  }
}
