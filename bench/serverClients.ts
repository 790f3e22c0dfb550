// The SSE clients of bench/server.ts: each follows a session's event stream with plain
// fetch and the SSE parser, applies the events to its own AgentStore, and records when
// each event arrived.
import { createParser } from 'eventsource-parser';
import type { AgentState } from '../machines/agentState';
import { createAgentStore } from '../machines/createAgentStore';
import type { AgentEvent } from '../protocol/eventSchemas';

/** What one client saw of the run. */
export interface LoadClientResult {
  /** Events of the run received and applied. */
  events: number;
  /** Receive time minus the event's timestamp, in ms, one per event in order. */
  latencies: Float64Array;
  /** The run's first event's timestamp (host clock, wall-clock ms). */
  firstEventAt: number;
  /** The run's terminal event's timestamp (host clock). */
  terminalEventAt: number;
  /** When the client received the terminal event (this process's wall clock, ms). */
  terminalReceivedAt: number;
  /** Streams resumed from the last cursor after the host dropped or ended one early. */
  reconnects: number;
  /** Reads of the stream: each a chunk of frames as the network gave it. */
  reads: number;
  /** Events missing, repeated or out of order, and other surprises; empty when all is well. */
  problems: string[];
  /** The store's state after the terminal event; none for a light reader (bench/serverLightClients.ts). */
  state?: AgentState;
}

/** A connected client: its stream is open and it reads until the run's terminal event. */
export interface LoadClient {
  done: Promise<LoadClientResult>;
}

export interface LoadClientOptions {
  /** The host's origin, `http://127.0.0.1:<port>`. */
  url: string;
  sessionId: string;
  /** The run to follow to its terminal event; the session has no other. */
  runId: string;
  /** Events expected: sizes the latency buffer. */
  expectedEvents: number;
  /** Abort when the run has not ended by then. */
  timeoutMs: number;
}

const RUN_TERMINALS: ReadonlySet<string> = new Set(['run.completed', 'run.failed', 'run.cancelled']);
const MAX_RECONNECTS = 20;
const now = () => performance.timeOrigin + performance.now();

async function openStream(options: LoadClientOptions, signal: AbortSignal, after: string | undefined) {
  const response = await fetch(`${options.url}/sessions/${encodeURIComponent(options.sessionId)}/events`, {
    headers: after === undefined ? {} : { 'last-event-id': after },
    signal,
  });
  if (!response.ok || response.body === null) {
    throw new Error(`GET /events answered ${response.status}: ${await response.text()}`);
  }
  return response.body.getReader();
}

/**
 * Opens one client's stream and resolves once the host answered (the client is connected);
 * `done` then resolves when the run's terminal event was applied. A stream the host ends
 * early (`event: dropped`, a slow reader) is resumed from its last cursor, as a client does.
 */
export async function connectLoadClient(options: LoadClientOptions): Promise<LoadClient> {
  const controller = new AbortController();
  const timer = setTimeout(
    () => controller.abort(new Error(`The run did not end within ${options.timeoutMs} ms`)),
    options.timeoutMs,
  );
  const store = createAgentStore();
  let latencies = new Float64Array(options.expectedEvents);
  let events = 0;
  let lastSequence = 0;
  let lastCursor: string | undefined;
  let receivedAt = 0;
  let firstEventAt = Number.NaN;
  let terminalEventAt = Number.NaN;
  let terminalReceivedAt = Number.NaN;
  let ended = false;
  const problems: string[] = [];
  const parser = createParser({
    onEvent: (message) => {
      if (message.event !== undefined) return;
      const event = JSON.parse(message.data) as AgentEvent;
      if (events === latencies.length) {
        const grown = new Float64Array(latencies.length * 2 + 16);
        grown.set(latencies);
        latencies = grown;
      }
      latencies[events] = receivedAt - event.timestamp;
      events += 1;
      lastCursor = message.id;
      if (event.runId !== options.runId) problems.push(`an event of run ${event.runId}`);
      else if (event.sequence !== lastSequence + 1) problems.push(`sequence ${event.sequence} after ${lastSequence}`);
      lastSequence = event.sequence;
      if (events === 1) firstEventAt = event.timestamp;
      store.dispatch(event);
      if (RUN_TERMINALS.has(event.type)) {
        ended = true;
        terminalEventAt = event.timestamp;
        terminalReceivedAt = receivedAt;
      }
    },
  });
  const decoder = new TextDecoder();
  let reader = await openStream(options, controller.signal, undefined);

  async function readToEnd(): Promise<LoadClientResult> {
    let reconnects = 0;
    let reads = 0;
    try {
      while (!ended) {
        const { done, value } = await reader.read();
        if (done) {
          if (reconnects === MAX_RECONNECTS) throw new Error(`The stream ended early ${reconnects} times`);
          reconnects += 1;
          parser.reset();
          reader = await openStream(options, controller.signal, lastCursor);
          continue;
        }
        // One clock reading per read: every frame of the chunk arrived with it.
        receivedAt = now();
        reads += 1;
        parser.feed(decoder.decode(value, { stream: true }));
      }
    } finally {
      clearTimeout(timer);
      controller.abort();
    }
    const state = store.getSnapshot();
    store.destroy();
    return {
      events,
      latencies: latencies.subarray(0, events),
      firstEventAt,
      terminalEventAt,
      terminalReceivedAt,
      reconnects,
      reads,
      problems,
      state,
    };
  }

  return { done: readToEnd() };
}
