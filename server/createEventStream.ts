import type { CatchUpPass } from './CatchUpReaders';
import type { EventStreamWire } from './EventStreamWire';
import type { EncodedEntry, SessionFeed } from './SessionFeed';
import { type StreamRunSelection, StreamRuns } from './StreamRuns';

export interface EventStreamOptions {
  /** The session's feed on this instance; the stream holds it until it ends. */
  feed: SessionFeed;
  /** The cursor the reader starts after; `undefined` for the oldest retained entry. */
  after: string | undefined;
  /** Entries already read after `after` (the request's first read, which checked its cursor). */
  firstPage: readonly EncodedEntry[];
  /** The reader's place among the readers catching up (the first read's); given back when the stream ends. */
  catchUp?: CatchUpPass | undefined;
  /** The runs the stream shows (see `StreamRunSelection`); every run when absent. */
  runs?: StreamRunSelection;
  /** What the stream writes: its frames, and its last frames when it is refused, dropped or the log fails. */
  wire: EventStreamWire;
  /** Entries read from the log (or the feed) at once. */
  pageSize: number;
  /**
   * Bytes of frames queued for a reader that does not read, before reading from the log stops;
   * one queued chunk holds about this many at most (one frame at least).
   */
  maxQueuedBytes: number;
  /** Ends the stream (the request's signal: the client went away). */
  signal?: AbortSignal | undefined;
  /** A comment line after this much silence, so proxies and the client's idle timeout keep the stream. */
  heartbeatMs: number;
  /** A reader that takes nothing from its full queue for this long is dropped with its cursor. */
  slowReaderMs: number;
  /**
   * Called after `heartbeatMs` without an event of interest, with the run the stream waits on
   * (when its end ends the stream): the host checks for runs whose instance is gone.
   */
  onIdle: (runId: string | undefined) => Promise<void>;
  /**
   * Asked again before the frames of a run this reader has not seen start are written, and
   * once `reauthorizeMs` passed since it last answered: anything but `true` ends the stream
   * with the wire's `refused` frames. Absent: the stream is never asked again.
   */
  reauthorize?: (() => Promise<boolean>) | undefined;
  reauthorizeMs?: number | undefined;
  now: () => number;
}

const KEEP_ALIVE = ': keep-alive\n\n';

/**
 * A session's log as a server-sent event stream, in the frames of `wire`: the host's own
 * (one frame per event with `id:` = its cursor) or the AI SDK's UI message stream. The
 * stream pulls from the log only as fast as its reader takes frames, in chunks of about
 * `maxQueuedBytes` at most: a reader that keeps reading is never dropped, however far behind
 * the live edge it is and however slowly it reads (it reads the log page by page at its own
 * pace, and the session's feed again once it caught up). At most `maxQueuedBytes` of frames
 * wait for a reader, and one that takes none of them for `slowReaderMs` gets the wire's
 * `dropped` frames (the host's carry its cursor) and the stream ends, so a client that stops
 * reading never makes the host buffer without bound, and resumes.
 */
export function createEventStream(options: EventStreamOptions): ReadableStream<Uint8Array> {
  const { feed, wire } = options;
  const runs = new StreamRuns(options.runs);
  const encoder = new TextEncoder();
  const stop = new AbortController();
  let after = options.after;
  /** The cursor of the last frame queued: where a dropped reader resumes. */
  let delivered = options.after;
  let lastWrite = options.now();
  let dropTimer: ReturnType<typeof setTimeout> | undefined;
  /** The page being written: its entries from `next` on are not framed yet (they wait for the next pull). */
  let page: readonly EncodedEntry[] = [];
  let next = 0;
  let finished = false;
  const { reauthorize } = options;
  // 0 (or less) is no periodic check, never a check at every read.
  const reauthorizeMs =
    options.reauthorizeMs !== undefined && options.reauthorizeMs > 0 ? options.reauthorizeMs : Number.POSITIVE_INFINITY;
  let authorizedAt = options.now();

  /** Whether the reader may still read these entries: `authorize` is asked again at a new run and when due. */
  async function stillAllowed(entries: readonly EncodedEntry[]): Promise<boolean> {
    if (reauthorize === undefined) return true;
    const due = options.now() - authorizedAt >= reauthorizeMs;
    const newRun = entries.some((entry) => runs.startsShownRun(entry));
    if (!due && !newRun) return true;
    authorizedAt = options.now();
    return (await reauthorize().catch(() => false)) === true;
  }

  /** How long a read may wait for an entry: a heartbeat, or less when authorization is due sooner. */
  function waitMs(): number {
    if (reauthorize === undefined) return options.heartbeatMs;
    return Math.max(0, Math.min(options.heartbeatMs, authorizedAt + reauthorizeMs - options.now()));
  }

  /**
   * Frames of the page's next entries this reader wants, about `maxQueuedBytes` at most (one
   * frame at least): the rest of the page waits for the next pull. `ended` once the run it
   * follows has ended.
   */
  function nextFrames(): { text: string; ended: boolean } {
    let text = '';
    let ended = false;
    while (next < page.length && text.length < options.maxQueuedBytes) {
      const entry = page[next] as EncodedEntry;
      next += 1;
      after = entry.cursor;
      if (!runs.shows(entry)) continue;
      text += wire.frameOf(entry);
      delivered = entry.cursor;
      if (runs.endsWith(entry)) {
        text += wire.ending(entry);
        ended = true;
        break;
      }
    }
    return { text, ended };
  }

  /** Ends the stream, after `last` (the wire's last frames, when it ends for a reason). */
  function finish(controller: ReadableStreamDefaultController<Uint8Array>, last = ''): void {
    if (finished) return;
    finished = true;
    if (last !== '') controller.enqueue(encoder.encode(last));
    clearTimeout(dropTimer);
    stop.abort();
    options.catchUp?.leave();
    feed.release();
    controller.close();
  }

  /** Queues frames; ends the stream after a run's terminal; watches a reader that lets the queue fill. */
  function write(controller: ReadableStreamDefaultController<Uint8Array>, text: string, ended: boolean): void {
    if (text !== '') {
      controller.enqueue(encoder.encode(text));
      lastWrite = options.now();
    }
    if (ended) {
      finish(controller);
      return;
    }
    if ((controller.desiredSize ?? 1) <= 0 && dropTimer === undefined) watch(controller);
  }

  /**
   * Drops the reader once it took nothing from its full queue for `slowReaderMs`: one that
   * took something meanwhile (its queue shrank) is watched again from then, so a reader that
   * keeps reading, however slowly, stays.
   */
  function watch(controller: ReadableStreamDefaultController<Uint8Array>): void {
    const queued = controller.desiredSize ?? 0;
    dropTimer = setTimeout(() => {
      if ((controller.desiredSize ?? 0) > queued) {
        watch(controller);
        return;
      }
      finish(controller, wire.dropped(delivered));
    }, options.slowReaderMs);
  }

  return new ReadableStream<Uint8Array>(
    {
      start(controller) {
        options.signal?.addEventListener('abort', () => finish(controller), { once: true });
        page = options.firstPage;
        const { text, ended } = nextFrames();
        write(controller, wire.opening() + text, ended);
      },
      async pull(controller) {
        clearTimeout(dropTimer);
        dropTimer = undefined;
        while (!finished) {
          if (next < page.length) {
            const { text, ended } = nextFrames();
            if (text !== '' || ended) {
              write(controller, text, ended);
              return;
            }
            continue;
          }
          page = [];
          next = 0;
          try {
            page = await feed.read(after, options.pageSize, waitMs(), stop.signal, options.catchUp);
          } catch {
            // The log failed or trimmed past this reader: ending the stream makes the client
            // resume from its cursor, and the answer to that request says which it was.
            finish(controller, wire.failed());
            return;
          }
          if (finished) return;
          if (!(await stillAllowed(page))) {
            if (finished) return;
            finish(controller, wire.refused());
            return;
          }
          if (finished) return;
          if (page.length === 0) {
            write(controller, KEEP_ALIVE, false);
            await options.onIdle(runs.last).catch(() => {});
            return;
          }
          const { text, ended } = nextFrames();
          if (text !== '' || ended) {
            write(controller, text, ended);
            return;
          }
          // Only other runs' events: keep reading, with a heartbeat when this run stays silent.
          if (options.now() - lastWrite >= options.heartbeatMs) {
            write(controller, KEEP_ALIVE, false);
            return;
          }
        }
      },
      cancel() {
        if (finished) return;
        finished = true;
        clearTimeout(dropTimer);
        stop.abort();
        options.catchUp?.leave();
        feed.release();
      },
    },
    { highWaterMark: options.maxQueuedBytes, size: (chunk) => chunk.byteLength },
  );
}
