import type { AgentEvent } from '../../protocol/eventSchemas';
import type { UIMessageChunk } from '../../providers/ai-sdk/uiMessageChunkSchema';
import type { AgentEventLog } from '../AgentEventLog';
import type { UIMessageChunkEncoder } from './UIMessageChunkEncoder';

/**
 * Which runs of the session a stream shows, in log order: `runIds`, ending after the last
 * one's terminal event; or, with `continuing`, the run that continues one of those runs, as
 * soon as its `run.started` shows up (the host starts it while the stream is being opened).
 */
export type UIMessageStreamRuns = { runIds: readonly string[] } | { continuing: readonly string[] };

export interface UIMessageStreamBodyOptions {
  log: AgentEventLog;
  sessionId: string;
  /** The cursor the stream reads after; `undefined` for the session's oldest retained event. */
  after: string | undefined;
  runs: UIMessageStreamRuns;
  encoder: UIMessageChunkEncoder;
  /** Chunks sent right after the encoder's `start`, before any event (a stream with no run ends with them). */
  leading?: readonly UIMessageChunk[];
  /** No run to read: the stream is `start`, `leading` and `[DONE]`. */
  empty?: boolean;
  pageSize: number;
  /** A keep-alive comment after this much silence; the host looks for runs whose instance is gone then. */
  heartbeatMs: number;
  /** Called after `heartbeatMs` without an event, with the run the stream waits on. */
  onIdle: (runId: string | undefined) => Promise<void>;
  /** The client went away. */
  signal?: AbortSignal | undefined;
}

const RUN_TERMINALS: ReadonlySet<string> = new Set(['run.completed', 'run.failed', 'run.cancelled']);
const KEEP_ALIVE = ': keep-alive\n\n';
const DONE = 'data: [DONE]\n\n';
const PAGE_BYTES = 1_048_576;

const frameOf = (chunk: UIMessageChunk) => `data: ${JSON.stringify(chunk)}\n\n`;

/**
 * The body of a UI message stream answer: server-sent events `data: <chunk JSON>` of the
 * runs' events, read from the session's log as the client takes them (one page of the log
 * per read, so a slow client holds the host's reading, not its memory), and `data: [DONE]`
 * once the last run ended. Comments keep an idle stream open; the AI SDK's parser skips them.
 */
export function createUIMessageStreamBody(options: UIMessageStreamBodyOptions): ReadableStream<Uint8Array> {
  const { log, sessionId, encoder } = options;
  const encoder8 = new TextEncoder();
  const stop = new AbortController();
  const wanted = new Set('runIds' in options.runs ? options.runs.runIds : []);
  const continuing = new Set('continuing' in options.runs ? options.runs.continuing : []);
  let last = 'runIds' in options.runs ? options.runs.runIds.at(-1) : undefined;
  let after = options.after;
  let finished = false;

  /** Frames of one page of events; `ended` once the last run's terminal is among them. */
  function framesOf(events: readonly AgentEvent[]): { text: string; ended: boolean } {
    let text = '';
    for (const event of events) {
      if (
        last === undefined &&
        event.type === 'run.started' &&
        event.payload.continuesRunId !== undefined &&
        continuing.has(event.payload.continuesRunId)
      ) {
        last = event.runId;
        wanted.add(event.runId);
      }
      if (!wanted.has(event.runId)) continue;
      for (const chunk of encoder.encode(event)) text += frameOf(chunk);
      if (event.runId === last && RUN_TERMINALS.has(event.type)) {
        for (const chunk of encoder.end(event)) text += frameOf(chunk);
        return { text: text + DONE, ended: true };
      }
    }
    return { text, ended: false };
  }

  function finish(controller: ReadableStreamDefaultController<Uint8Array>, text: string): void {
    if (finished) return;
    finished = true;
    stop.abort();
    if (text !== '') controller.enqueue(encoder8.encode(text));
    controller.close();
  }

  return new ReadableStream<Uint8Array>({
    start(controller) {
      options.signal?.addEventListener('abort', () => finish(controller, ''), { once: true });
      let text = '';
      for (const chunk of [...encoder.start(), ...(options.leading ?? [])]) text += frameOf(chunk);
      if (options.empty === true) finish(controller, text + DONE);
      else controller.enqueue(encoder8.encode(text));
    },
    async pull(controller) {
      while (!finished) {
        let page: readonly { cursor: string; event: AgentEvent }[];
        try {
          page = await log.follow(sessionId, {
            after,
            limit: options.pageSize,
            maxBytes: PAGE_BYTES,
            timeoutMs: options.heartbeatMs,
            signal: stop.signal,
          });
        } catch {
          // The log failed or trimmed what the stream still had to read: the client sees why it ends.
          const error: UIMessageChunk = { type: 'error', errorText: 'The event log could not be read' };
          finish(controller, frameOf(error) + DONE);
          return;
        }
        if (finished) return;
        if (page.length === 0) {
          controller.enqueue(encoder8.encode(KEEP_ALIVE));
          await options.onIdle(last).catch(() => {});
          return;
        }
        after = page[page.length - 1]?.cursor;
        const { text, ended } = framesOf(page.map((entry) => entry.event));
        if (ended) {
          finish(controller, text);
          return;
        }
        if (text !== '') {
          controller.enqueue(encoder8.encode(text));
          return;
        }
      }
    },
    cancel() {
      finished = true;
      stop.abort();
    },
  });
}
