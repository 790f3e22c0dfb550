import * as z from 'zod/mini';
import type { AgentTransport } from '../../transports/AgentTransport';
import { AgentTransportError } from '../../transports/AgentTransportError';
import { createSSETransport, type SSEChunk } from '../../transports/createSSETransport';
import type { AgentRunContinuation } from '../AgentProvider';
import { type AgentHostClient, describeRefusal, forbiddenFrameError } from './agentHostClient';
import type { AgentHostToolResult } from './clientToolResults';

/** The body of `POST /sessions/:sessionId/runs`: which of the host's providers runs what, as which run. */
/** A continuation as the host takes it: with the results of the tool calls the client settled. */
export type AgentHostContinuation = AgentRunContinuation & { toolResults?: AgentHostToolResult[] };

export interface AgentHostRunRequest {
  /** The name of a provider the host runs. */
  provider: string;
  /** That provider's input, checked by its `parseInput` on the host. */
  input: unknown;
  runId: string;
  continuation?: AgentHostContinuation;
}

export interface AgentHostTransportOptions {
  maxFrameSize?: number | undefined;
}

const runStartedSchema = z.object({ runId: z.string(), cursor: z.nullable(z.string()) });

const TERMINAL_TYPES: ReadonlySet<unknown> = new Set(['run.completed', 'run.failed', 'run.cancelled']);

/**
 * Whether a frame carries the run's terminal event. Only frames that can hold one are
 * parsed: any JSON encoder writes a `run.*` type as `"run.` literally, so the other frames
 * (the deltas, nearly all of them) are not parsed twice.
 */
function isTerminalFrame(chunk: SSEChunk, runId: string): boolean {
  if (!chunk.data.includes('"run.')) return false;
  try {
    const event = JSON.parse(chunk.data) as { type?: unknown; runId?: unknown } | null;
    return TERMINAL_TYPES.has(event?.type) && event?.runId === runId;
  } catch {
    // Not JSON: the provider refuses the frame.
    return false;
  }
}

/** What the transport knows of a request's POST: sent without a known outcome, or accepted. */
type RunStart = { status: 'sent' } | { status: 'accepted'; cursor: string | null };

/**
 * The transport of `createAgentEventProvider`: `open` starts the run with `POST /runs`, then
 * reads its events with `GET /events?runId=...&after=<cursor>`; `resume` reads them with
 * `Last-Event-ID` and starts nothing. The events stream is `createSSETransport`'s, so a 410
 * or 422 to a resume is `invalid_cursor`. A stream that ends before the run's terminal
 * event, or a last frame `event: dropped` (the host dropped a slow reader), fails with
 * `abnormal_close`, which the provider classifies as retryable: the runner resumes from its
 * last cursor. A last frame `event: forbidden` (the host asked `authorize` again and it
 * refused) is the `http_error` 403 the next request would get, not retried.
 *
 * `open` again for the same request (the runner retrying before any event arrived) does not
 * start the run twice: once the host accepted it, it only reads; after an earlier POST whose
 * outcome is unknown (its answer lost, or a 5xx), a `409 run_exists` means that POST started it.
 */
export function createAgentHostTransport(
  client: AgentHostClient,
  options: AgentHostTransportOptions = {},
): AgentTransport<AgentHostRunRequest, SSEChunk> {
  // Keyed by the request object, which the runner passes to every attempt of one run.
  const starts = new WeakMap<AgentHostRunRequest, RunStart>();

  /** Starts the run unless it was; resolves with the cursor to read after, or undefined for the run's start. */
  async function start(request: AgentHostRunRequest, signal: AbortSignal): Promise<string | undefined> {
    const known = starts.get(request);
    if (known?.status === 'accepted') return known.cursor ?? undefined;
    starts.set(request, { status: 'sent' });
    const answer = await client.postJSON('runs', request, signal);
    if (!answer.ok) {
      if (known?.status === 'sent' && answer.status === 409 && answer.refusal.code === 'run_exists') {
        // Ours: an earlier attempt of this run sent it. Its cursor is unknown: the run is read from its start.
        starts.set(request, { status: 'accepted', cursor: null });
        return undefined;
      }
      throw new AgentTransportError('http_error', describeRefusal(client.url('runs'), answer), {
        status: answer.status,
        bodyExcerpt: answer.bodyExcerpt,
      });
    }
    const started = runStartedSchema.safeParse(answer.body);
    if (!started.success || started.data.runId !== request.runId) {
      throw new AgentTransportError(
        'http_error',
        `POST ${client.url('runs')} answered ${answer.status} without { runId: "${request.runId}", cursor }`,
        { status: answer.status, bodyExcerpt: JSON.stringify(answer.body)?.slice(0, 2048) ?? '' },
      );
    }
    starts.set(request, { status: 'accepted', cursor: started.data.cursor });
    return started.data.cursor ?? undefined;
  }

  /** The run's frames from the events stream, up to its terminal event. */
  async function* follow(
    runId: string,
    signal: AbortSignal,
    from: { after?: string | undefined; lastEventId?: string },
  ): AsyncGenerator<SSEChunk> {
    const events = createSSETransport<undefined>({
      url: client.url('events', { runId, after: from.after }),
      method: 'GET',
      fetch: client.fetch,
      ...(client.headers === undefined ? {} : { headers: client.headers }),
      ...(client.idleTimeoutMs === undefined ? {} : { idleTimeoutMs: client.idleTimeoutMs }),
      ...(options.maxFrameSize === undefined ? {} : { maxFrameSize: options.maxFrameSize }),
    });
    const frames =
      from.lastEventId === undefined || events.resume === undefined
        ? events.open(undefined, signal)
        : events.resume(undefined, from.lastEventId, signal);
    for await (const chunk of frames) {
      if (chunk.event === 'forbidden') throw forbiddenFrameError(client.url('events'), chunk.data);
      if (chunk.event === 'dropped') {
        throw new AgentTransportError(
          'abnormal_close',
          `The host dropped the events of run "${runId}" (a slow reader) after cursor ${droppedCursor(chunk.data)}`,
        );
      }
      // Frames of other names are for other clients, as an EventSource would ignore them.
      if (chunk.event !== undefined && chunk.event !== 'message') continue;
      yield chunk;
      if (isTerminalFrame(chunk, runId)) return;
    }
    throw new AgentTransportError(
      'abnormal_close',
      `The host ended the events of run "${runId}" before the run's terminal event`,
    );
  }

  return {
    kind: 'sse',
    async *open(request, signal) {
      const after = await start(request, signal);
      yield* follow(request.runId, signal, { after });
    },
    getCursor: (chunk) => chunk.id,
    resume: (request, cursor, signal) => follow(request.runId, signal, { lastEventId: cursor }),
  };
}

function droppedCursor(data: string): string {
  try {
    const { cursor } = JSON.parse(data) as { cursor?: unknown };
    return typeof cursor === 'string' ? `"${cursor}"` : 'unknown';
  } catch {
    return 'unknown';
  }
}
