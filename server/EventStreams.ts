import type { AgentEventLog } from './AgentEventLog';
import { CatchUpReaders } from './CatchUpReaders';
import { createEventStream } from './createEventStream';
import type { EventStreamWire } from './EventStreamWire';
import { type EncodedEntry, SessionFeed } from './SessionFeed';
import type { StreamRunSelection } from './StreamRuns';

export interface EventStreamsOptions {
  log: AgentEventLog;
  /** Entries each followed session's feed keeps for readers at the live edge. */
  feedCapacity: number;
  pageSize: number;
  /** Readers of the whole instance that may read the log at once to catch up. */
  maxCatchUpReaders: number;
  maxQueuedBytes: number;
  heartbeatMs: number;
  slowReaderMs: number;
  now: () => number;
  /** The last reader of a session's feed on this instance is gone. */
  onUnused: (sessionId: string) => void;
}

/** One stream to open: where it starts, what it shows and writes, and what it asks on the way. */
export interface EventStreamRequest {
  /** The cursor the stream starts after; `undefined` for the session's oldest retained entry. */
  after: string | undefined;
  runs?: StreamRunSelection;
  wire: EventStreamWire;
  /** The client went away. */
  signal?: AbortSignal | undefined;
  /** Called after `heartbeatMs` without an event of interest, with the run the stream waits on. */
  onIdle: (runId: string | undefined) => Promise<void>;
  /** Asked at each new run the stream shows and every `reauthorizeMs` (see `createEventStream`). */
  reauthorize?: (() => Promise<boolean>) | undefined;
  reauthorizeMs?: number | undefined;
  /** Checks made once the first page was read, before the stream is answered; a throw refuses the request. */
  check?: () => Promise<void>;
}

/**
 * Every event stream of the host, whatever wire it writes: the feed of each session some
 * reader on this instance follows (one read of the log and one decoding per event, shared)
 * and the bound on readers catching up. A stream's first page is read when it is opened, so
 * a cursor the log refuses, or no place left for another reader catching up
 * (`unavailable`, retry after a second), is the request's answer, not the stream's.
 */
export class EventStreams {
  /** The feed of each session some reader on this instance follows. */
  private readonly feeds = new Map<string, SessionFeed>();
  private readonly catchUpReaders: CatchUpReaders;

  constructor(private readonly options: EventStreamsOptions) {
    this.catchUpReaders = new CatchUpReaders(options.maxCatchUpReaders);
  }

  /** Opens a stream of the session's log; rejects as the log or the catch-up bound refuses its first read. */
  async open(sessionId: string, request: EventStreamRequest): Promise<ReadableStream<Uint8Array>> {
    const { options } = this;
    const feed = this.feedOf(sessionId);
    feed.acquire();
    const catchUp = this.catchUpReaders.pass();
    let firstPage: readonly EncodedEntry[];
    try {
      firstPage = await feed.read(request.after, options.pageSize, 0, undefined, catchUp);
      await request.check?.();
    } catch (error) {
      catchUp.leave();
      feed.release();
      throw error;
    }
    return createEventStream({
      feed,
      after: request.after,
      firstPage,
      catchUp,
      runs: request.runs,
      wire: request.wire,
      pageSize: options.pageSize,
      maxQueuedBytes: options.maxQueuedBytes,
      signal: request.signal,
      heartbeatMs: options.heartbeatMs,
      slowReaderMs: options.slowReaderMs,
      onIdle: request.onIdle,
      reauthorize: request.reauthorize,
      reauthorizeMs: request.reauthorizeMs,
      now: options.now,
    });
  }

  private feedOf(sessionId: string): SessionFeed {
    const { options } = this;
    let feed = this.feeds.get(sessionId);
    if (feed === undefined) {
      const created = new SessionFeed(
        options.log,
        sessionId,
        { capacity: options.feedCapacity, pageSize: options.pageSize, followMs: options.heartbeatMs },
        () => {
          if (this.feeds.get(sessionId) !== created) return;
          this.feeds.delete(sessionId);
          options.onUnused(sessionId);
        },
      );
      feed = created;
      this.feeds.set(sessionId, feed);
    }
    return feed;
  }
}
