import type { AgentEvent } from '../../protocol/eventSchemas';
import type { AgentProvider } from '../../providers/AgentProvider';
import { AGENT_EVENT_TYPE_GROUPS, eventTypesOf } from '../../providers/eventTypeGroups';
import { AgentTransportError } from '../../transports/AgentTransportError';
import { answerRun, isRetryableTransportError } from './eventLogServer';

/*
 * An event log in the test's own process, resumable by cursor as the host's SSE log is: each
 * request or resume of a run is one connection the test plays by hand (send some of the
 * run's events, end, drop, answer with an error). No socket and no timer: what the runner
 * sees happens when the test says, so a path of the connection machine can be played step
 * by step, and the runner's backoff runs on the test's fake clock.
 */

/** One chunk of the log: an event of the run, and its cursor (the sequence), unless sent without one. */
export interface ScriptedChunk {
  event: AgentEvent;
  cursor: string | undefined;
}

/** What the provider sends: the run it is for. */
export interface ScriptedRequest {
  sessionId: string;
  runId: string;
}

type Item = { chunk: ScriptedChunk } | { end: true } | { error: unknown };

/** One connection of a run, opened by a request (`from` undefined) or a resume from a cursor. */
export class ScriptedConnection {
  private readonly items: Item[] = [];
  private wake: (() => void) | undefined;

  constructor(
    readonly runId: string,
    readonly from: string | undefined,
    private readonly log: readonly AgentEvent[],
    readonly signal: AbortSignal,
  ) {
    signal.addEventListener('abort', () => this.wake?.(), { once: true });
  }

  /** Sends the run's events of these sequences, one chunk each, with their cursor unless `cursor` is false. */
  send(sequences: readonly number[], options: { cursor?: boolean } = {}): void {
    for (const sequence of sequences) {
      const event = this.log[sequence - 1];
      if (event === undefined) throw new Error(`run ${this.runId} has no event ${sequence}`);
      this.push({ chunk: { event, cursor: options.cursor === false ? undefined : String(sequence) } });
    }
  }

  /** Ends the stream as the server does after the run's last event. */
  end(): void {
    this.push({ end: true });
  }

  /** Breaks the stream with `error`, as the transport would report it. */
  fail(error: unknown): void {
    this.push({ error });
  }

  private push(item: Item): void {
    this.items.push(item);
    this.wake?.();
  }

  async *chunks(): AsyncGenerator<ScriptedChunk> {
    for (;;) {
      const item = this.items.shift();
      if (item === undefined) {
        if (this.signal.aborted) throw abortError(this.signal);
        await new Promise<void>((resolve) => {
          this.wake = resolve;
        });
        this.wake = undefined;
        continue;
      }
      if ('end' in item) return;
      if ('error' in item) throw item.error;
      yield item.chunk;
    }
  }
}

function abortError(signal: AbortSignal): AgentTransportError {
  return new AgentTransportError('aborted', 'The scripted connection was aborted', { cause: signal.reason });
}

export type ScriptedEventLogProvider = AgentProvider<
  { prompt: string },
  ScriptedRequest,
  ScriptedChunk,
  ScriptedRequest
>;

/**
 * The log of session `s1` (every run answers with `answerRun`'s ten events) and a resumable
 * provider of it, retrying what `isRetryableTransportError` calls retryable. The test takes
 * each connection as the runner opens it (`nextConnection`) and plays it.
 */
export function createScriptedEventLog() {
  const connections: ScriptedConnection[] = [];
  const waiting: Array<(connection: ScriptedConnection) => void> = [];
  let taken = 0;

  const connect = (request: ScriptedRequest, from: string | undefined, signal: AbortSignal) => {
    const connection = new ScriptedConnection(request.runId, from, answerRun(request.runId), signal);
    connections.push(connection);
    waiting.shift()?.(connection);
    return connection.chunks();
  };

  const provider: ScriptedEventLogProvider = {
    id: 'scripted-event-log',
    protocol: { name: 'agent-event', version: '0.1' },
    capabilities: {
      eventTypes: eventTypesOf(Object.keys(AGENT_EVENT_TYPE_GROUPS) as Array<keyof typeof AGENT_EVENT_TYPE_GROUPS>),
      transports: ['async-iterable'],
      resumable: true,
    },
    transport: {
      kind: 'async-iterable',
      open: (request, signal) => connect(request, undefined, signal),
      resume: (request, cursor, signal) => connect(request, cursor, signal),
      getCursor: (chunk) => chunk.cursor,
    },
    createContext: ({ sessionId, runId }) => ({ sessionId, runId }),
    start: () => [],
    prepareRequest: (_input, request) => request,
    transformChunk: (chunk) => [chunk.event],
    flush: () => [],
    transformError: () => [],
    classifyError: (error) => ({ retryable: isRetryableTransportError(error) }),
  };

  return {
    provider,
    connections,
    /** The next connection the runner opens (or the one it opened and nobody took yet). */
    nextConnection(): Promise<ScriptedConnection> {
      const opened = connections[taken];
      taken += 1;
      if (opened !== undefined) return Promise.resolve(opened);
      return new Promise((resolve) => waiting.push(resolve));
    },
  };
}
