// The light SSE readers of bench/server.ts: each reads a session's event stream from its host
// over HTTP, as the full ones do (bench/serverClients.ts), but over a plain connection read
// into a reused buffer (openRawEventStream) rather than fetch, and checks it on the bytes
// (LightStreamCheck) rather than parsing every event into a store: a light reader costs a
// fraction of a full one, so that a bench of many readers measures the hosts they read from.
import { LightStreamCheck } from './LightStreamCheck';
import { openRawEventStream, type RawEventStream } from './openRawEventStream';
import type { LoadClient, LoadClientOptions, LoadClientResult } from './serverClients';

const MAX_RECONNECTS = 20;

/**
 * Opens one light reader's stream and resolves once the host answered; `done` resolves when
 * the run's terminal event arrived. A stream the host ends early (`event: dropped`) is resumed
 * from the last cursor, as the full readers do. The result has no `state`.
 */
export async function connectLightLoadClient(options: LoadClientOptions): Promise<LoadClient> {
  const controller = new AbortController();
  const timer = setTimeout(
    () => controller.abort(new Error(`The run did not end within ${options.timeoutMs} ms`)),
    options.timeoutMs,
  );
  const check = new LightStreamCheck(options.runId, options.expectedEvents);
  let reads = 0;
  const open = (after: string | undefined): Promise<RawEventStream> =>
    openRawEventStream({
      url: options.url,
      path: `/sessions/${encodeURIComponent(options.sessionId)}/events`,
      headers: after === undefined ? {} : { 'last-event-id': after },
      signal: controller.signal,
      onBody: (bytes, receivedAt) => {
        check.feed(bytes, receivedAt);
        // The run's end: the connection is closed.
        return !check.ended;
      },
    });
  let stream = await open(undefined);

  async function readToEnd(): Promise<LoadClientResult> {
    let reconnects = 0;
    try {
      for (;;) {
        await stream.ended;
        reads += stream.reads;
        if (check.ended) break;
        controller.signal.throwIfAborted();
        if (reconnects === MAX_RECONNECTS) throw new Error(`The stream ended early ${reconnects} times`);
        reconnects += 1;
        check.restart();
        stream = await open(check.lastCursor);
      }
    } finally {
      clearTimeout(timer);
      controller.abort();
    }
    return {
      events: check.events,
      latencies: check.latencies.subarray(0, check.events),
      firstEventAt: check.firstEventAt,
      terminalEventAt: check.terminalEventAt,
      terminalReceivedAt: check.terminalReceivedAt,
      reconnects,
      reads,
      problems: check.problems,
    };
  }

  return { done: readToEnd() };
}
