import type { ServerResponse } from 'node:http';
import { afterEach } from 'vitest';
import type { AgentEvent, AgentEventType } from '../../protocol/eventSchemas';
import type { AgentProvider } from '../../providers/AgentProvider';
import { AGENT_EVENT_TYPE_GROUPS, eventTypesOf } from '../../providers/eventTypeGroups';
import { AgentTransportError } from '../../transports/AgentTransportError';
import { createSSETransport, type SSEChunk, type SSETransportOptions } from '../../transports/createSSETransport';
import { runEvents } from './events';
import { type RecordedRequest, startHttpServer, type TestServer } from './httpServer';

export const SSE_HEADERS = { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' };

/** One run of an assistant answering in six deltas: sequences 1 to 10, ids `r1-e1` to `r1-e10`. */
export function answerRun(runId = 'r1'): AgentEvent[] {
  const events = runEvents(runId);
  return [
    events.create('run.started', { input: { prompt: 'Summarize the log' } }),
    events.create('message.started', { messageId: 'answer', role: 'assistant' }),
    ...['The ', 'log ', 'has ', 'three ', 'errors', '.'].map((delta) =>
      events.create('message.delta', { messageId: 'answer', delta }),
    ),
    events.create('message.completed', { messageId: 'answer' }),
    events.create('run.completed', {}),
  ];
}

/** An SSE frame carrying one event, with an `id:` line unless `id` is null. */
export function frame(event: AgentEvent, id: string | null = String(event.sequence)): string {
  return `${id === null ? '' : `id: ${id}\n`}data: ${JSON.stringify(event)}\n\n`;
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Writes frames, each in its own read; then ends, drops the connection, or stalls (keeps it open, silent). */
export async function serveFrames(
  response: ServerResponse,
  frames: readonly string[],
  then: 'end' | 'drop' | 'stall',
): Promise<void> {
  response.writeHead(200, SSE_HEADERS);
  let flushed = Promise.resolve();
  for (const text of frames) {
    if (response.destroyed) return;
    flushed = new Promise<void>((resolve) => response.write(text, () => resolve()));
    await pause(2);
  }
  if (then === 'end') response.end();
  else if (then === 'drop') {
    // The frames reach the socket before it goes: the last write calls back once flushed.
    await flushed;
    response.socket?.destroy();
  }
}

/**
 * A real SSE server that answers its `n`th request with `script[n]` (the last one for any
 * later request), recording every request (with its `Last-Event-ID`).
 */
export function startEventLogServer(
  script: ReadonlyArray<(response: ServerResponse, request: RecordedRequest) => void | Promise<void>>,
): Promise<TestServer> {
  let count = 0;
  return startHttpServer(async (request, response) => {
    const handler = script[Math.min(count, script.length - 1)];
    count += 1;
    await handler?.(response, request);
  });
}

/**
 * `startEventLogServer` for one test file: each server it starts is closed after each test.
 * Call it at the top of the file, where vitest's `afterEach` registers.
 */
export function eventLogServers(): (...script: Parameters<typeof startEventLogServer>[0]) => Promise<TestServer> {
  const servers: TestServer[] = [];
  afterEach(async () => {
    await Promise.all(servers.splice(0).map((server) => server.close()));
  });
  return async (...script) => {
    const started = await startEventLogServer(script);
    servers.push(started);
    return started;
  };
}

const EVENT_TYPES: AgentEventType[] = eventTypesOf(
  Object.keys(AGENT_EVENT_TYPE_GROUPS) as Array<keyof typeof AGENT_EVENT_TYPE_GROUPS>,
);

/** Retryable: a dropped or silent connection, and a server error. */
export function isRetryableTransportError(error: unknown): boolean {
  if (!AgentTransportError.isInstance(error)) return false;
  if (error.code === 'http_error') return (error.status ?? 0) >= 500;
  return error.code === 'network_error' || error.code === 'timeout' || error.code === 'abnormal_close';
}

export type EventLogProvider = AgentProvider<{ prompt: string }, { prompt: string }, SSEChunk, undefined>;

/**
 * A provider whose runtime streams our own AgentEvents as SSE `data:` (each with its own
 * sequence, as an event log would), resumable with `Last-Event-ID`. It leaves closing the
 * run to the runner, whose tracker saw every event.
 */
export function eventLogProvider(
  url: string,
  transport: Partial<SSETransportOptions<{ prompt: string }>> = {},
): EventLogProvider {
  return {
    id: 'event-log',
    protocol: { name: 'agent-event', version: '0.1' },
    capabilities: { eventTypes: EVENT_TYPES, transports: ['sse'], resumable: true },
    transport: createSSETransport<{ prompt: string }>({ url, ...transport }),
    createContext: () => undefined,
    start: () => [],
    prepareRequest: (input) => input,
    transformChunk: (chunk) => [JSON.parse(chunk.data) as AgentEvent],
    flush: () => [],
    transformError: () => [],
    classifyError: (error) => ({ retryable: isRetryableTransportError(error) }),
  };
}

/** What `runScopedEventLogProvider` sends: the input, and the session and run it is for. */
export interface RunScopedRequest {
  prompt: string;
  sessionId: string;
  runId: string;
}

export type RunScopedEventLogProvider = AgentProvider<
  { prompt: string },
  RunScopedRequest,
  SSEChunk,
  { sessionId: string; runId: string }
>;

/**
 * `eventLogProvider` for runs whose ids the caller does not choose (a runtime's `request`):
 * its request names the session and the run, so a server answers with that run's events
 * (`requestedRun`). The same request goes again on a resume.
 */
export function runScopedEventLogProvider(
  url: string,
  transport: Partial<SSETransportOptions<RunScopedRequest>> = {},
): RunScopedEventLogProvider {
  return {
    id: 'event-log',
    protocol: { name: 'agent-event', version: '0.1' },
    capabilities: { eventTypes: EVENT_TYPES, transports: ['sse'], resumable: true },
    transport: createSSETransport<RunScopedRequest>({ url, ...transport }),
    createContext: ({ sessionId, runId }) => ({ sessionId, runId }),
    start: () => [],
    prepareRequest: (input, { sessionId, runId }) => ({ ...input, sessionId, runId }),
    transformChunk: (chunk) => [JSON.parse(chunk.data) as AgentEvent],
    flush: () => [],
    transformError: () => [],
    classifyError: (error) => ({ retryable: isRetryableTransportError(error) }),
  };
}

/** The session and run a request of `runScopedEventLogProvider` is for. */
export function requestedRun(request: RecordedRequest): { sessionId: string; runId: string } {
  const { sessionId, runId } = JSON.parse(request.body) as RunScopedRequest;
  return { sessionId, runId };
}
