import { AGENT_COMMAND_TYPES, type AgentCommandType } from '../../protocol/commandSchemas';
import { createAgentCommandFactory } from '../../protocol/createAgentCommandFactory';
import { AGENT_EVENT_TYPES, type AgentEvent } from '../../protocol/eventSchemas';
import { checkAgentEvent } from '../../protocol/parseAgentEvent';
import { AgentTransportError } from '../../transports/AgentTransportError';
import type { SSEChunk } from '../../transports/createSSETransport';
import type { AgentProvider } from '../AgentProvider';
import { AgentProviderError } from '../AgentProviderError';
import { type AgentHostHeaders, createAgentHostClient } from './agentHostClient';
import { clientToolResults } from './clientToolResults';
import {
  type AgentHostContinuation,
  type AgentHostRunRequest,
  createAgentHostTransport,
} from './createAgentHostTransport';
import { executeAgentHostCommand } from './executeAgentHostCommand';

/** What a run asks the host for: the body of `POST /runs`, less the run id and continuation the runner gives. */
export interface AgentHostRunInput {
  /** The name of one of the host's providers. */
  provider: string;
  /** That provider's input (`{ prompt }` for an OpenAI-compatible one, say), checked on the host. */
  input: unknown;
}

export interface AgentEventProviderOptions {
  /** Where the host is mounted: `/api/agent`, `https://agents.example.com/v1`. */
  baseURL: string | URL;
  /** The session every run and command goes to; runs must be given the same one (see `createAgentEventProvider`). */
  sessionId: string;
  /** Sent on every request (runs, events, commands); a function is called per request, for a fresh token. */
  headers?: AgentHostHeaders;
  /** Default `globalThis.fetch`. */
  fetch?: typeof fetch;
  /** The commands the host's providers take. Default all four. */
  commands?: readonly AgentCommandType[];
  /**
   * How long the host may stay silent on any request (the events stream sends a heartbeat
   * comment, so only a lost host stays silent); it fails with a retryable `timeout`.
   * Default 60 000 ms; `0` or `Infinity` turns it off.
   */
  idleTimeoutMs?: number;
  /** Largest event frame, in characters; see `createSSETransport`. Default 10 MiB. */
  maxFrameSize?: number;
  /**
   * Largest answer to `POST /runs` and `POST /commands`, in bytes once decoded: read as it
   * arrives and refused past it (`AgentTransportError` `response_too_large`). Default 16 MiB.
   */
  maxResponseBytes?: number;
  /**
   * What aborting a run (`abort()`, Stop, unmounting `useXChat`) does on the host. `true`
   * (default): the host is asked to cancel it too (`run.cancel`, once, best effort), so both
   * sides end it `cancelled`. `false`: the client stops following and ends the run
   * `cancelled` in its own state only, while the run goes on on the host. A dropped
   * connection or a page reload is not an abort: the run goes on and the client resumes it.
   */
  cancelOnAbort?: boolean;
}

/** The run a provider's mapping is in. */
export interface AgentEventProviderContext {
  sessionId: string;
  runId: string;
  continuation: AgentHostContinuation | undefined;
  /** The run's terminal event arrived: an abort after it has nothing to cancel on the host. */
  ended: boolean;
}

const RUN_TERMINALS: ReadonlySet<string> = new Set(['run.completed', 'run.failed', 'run.cancelled']);

const PROVIDER_ID = 'agent-event';

/** Dropped connections, stalled or cut streams, server errors and rate limits are worth retrying. */
function isRetryable(error: unknown): boolean {
  if (!AgentTransportError.isInstance(error)) return false;
  if (error.code === 'http_error') return error.status === 429 || (error.status ?? 0) >= 500;
  return error.code === 'network_error' || error.code === 'timeout' || error.code === 'abnormal_close';
}

/** One frame's event, or an `AgentProviderError` naming the frame: the host must send valid AgentEvents. */
function readEvent(chunk: SSEChunk): AgentEvent {
  const frame = chunk.id === undefined ? 'a frame' : `frame ${chunk.id}`;
  let value: unknown;
  try {
    value = JSON.parse(chunk.data);
  } catch (error) {
    throw new AgentProviderError(
      'invalid_event',
      PROVIDER_ID,
      `the host sent ${frame}, which is not JSON`,
      chunk.data,
      {
        cause: error,
      },
    );
  }
  // The same acceptance as `parseAgentEvent`, with the fast path for deltas that the store uses.
  const failure = checkAgentEvent(value);
  if (failure !== undefined) {
    throw new AgentProviderError(
      'invalid_event',
      PROVIDER_ID,
      `the host sent ${frame}, which is not a valid AgentEvent: ${failure.message}`,
      value,
    );
  }
  return value as AgentEvent;
}

/**
 * The client of an `agent-machines/server` host (`createAgentHost`; its HTTP API is in
 * `docs/server.md`): a run starts with `POST /sessions/:sessionId/runs` and streams the
 * run's events from the host's event log (`GET /events?runId=`), which it resumes from its
 * last cursor after a dropped, cut or stalled stream, or when the host drops a slow reader;
 * commands go to `POST /commands`. The host's events are already AgentEvents: they pass
 * through unchanged, each checked, and an invalid one fails the run with an
 * `AgentProviderError` (`invalid_event`).
 *
 * The host emits `run.started` and the user's message itself, and keeps the conversation:
 * a request sends only the input (and, for a continuing run, the continuation). The runtime
 * must use the provider's `sessionId`, or every run throws an `AgentProviderError`: pass it
 * as `createXChatRuntime({ sessionId })`, or as `useXChat({ conversationKey })`, which is
 * the session id of the chat's runs.
 *
 * Refusals of `POST /runs` are `http_error`s carrying the status and the host's code and
 * message; 5xx, 429, network errors and timeouts are retried. A command refused by the host
 * is an `AgentCommandError` naming the host's code.
 *
 * @example
 * const sessionId = 'conversation-1';
 * const provider = createAgentEventProvider({
 *   baseURL: '/api/agent',
 *   sessionId,
 *   headers: async () => ({ Authorization: `Bearer ${await getToken()}` }),
 * });
 *
 * // React: the conversation key is the session id.
 * const { messages, onRequest } = useXChat({ provider, conversationKey: sessionId });
 * onRequest({ provider: 'openai', input: { prompt: 'Summarize this report' } });
 *
 * // Without React:
 * const chat = createXChatRuntime({ provider, sessionId });
 * await chat.request({ provider: 'openai', input: { prompt: 'Summarize this report' } });
 */
export function createAgentEventProvider(
  options: AgentEventProviderOptions,
): AgentProvider<AgentHostRunInput, AgentHostRunRequest, SSEChunk, AgentEventProviderContext> {
  const { sessionId } = options;
  const client = createAgentHostClient(options);
  return {
    id: PROVIDER_ID,
    protocol: { name: 'agent-event', version: '0.1' },
    capabilities: {
      eventTypes: AGENT_EVENT_TYPES,
      transports: ['sse'],
      resumable: true,
      commands: options.commands ?? AGENT_COMMAND_TYPES,
    },
    transport: createAgentHostTransport(client, { maxFrameSize: options.maxFrameSize }),
    createContext(context) {
      if (context.sessionId !== sessionId) {
        throw new AgentProviderError(
          'invalid_event',
          PROVIDER_ID,
          `is for session "${sessionId}" but was given a run of session "${context.sessionId}": ` +
            `give the runtime the same session id (createXChatRuntime({ sessionId }), useXChat({ conversationKey }))`,
        );
      }
      const { continuation } = context;
      if (continuation === undefined) return { sessionId, runId: context.runId, continuation, ended: false };
      // The client settled the waiting run's tool calls in its own store: the host needs the results.
      const toolResults = clientToolResults(context.history, continuation.runId);
      return {
        sessionId,
        runId: context.runId,
        continuation: toolResults.length === 0 ? continuation : { ...continuation, toolResults },
        ended: false,
      };
    },
    // The host emits `run.started` and the user's message.
    start: () => [],
    prepareRequest(input, context) {
      const request: AgentHostRunRequest = { provider: input.provider, input: input.input, runId: context.runId };
      if (context.continuation !== undefined) request.continuation = context.continuation;
      return request;
    },
    transformChunk(chunk, context) {
      const event = readEvent(chunk);
      if (event.runId === context.runId && RUN_TERMINALS.has(event.type)) context.ended = true;
      return [event];
    },
    flush: () => [],
    // The runner closes what the host's events left open, as it saw every one of them.
    transformError(error, context) {
      const aborted = AgentTransportError.isInstance(error) && error.code === 'aborted';
      if (options.cancelOnAbort !== false && aborted && !context.ended) {
        const command = createAgentCommandFactory({ sessionId, runId: context.runId }).create('run.cancel', {
          reason: 'aborted',
        });
        // Best effort: the client has stopped either way, and a run already over refuses it.
        client.postJSON('commands', command, AbortSignal.timeout(10_000)).catch(() => {});
      }
      return [];
    },
    classifyError: (error) => ({ retryable: isRetryable(error) }),
    executeCommand: (command, commandOptions) => executeAgentHostCommand(client, command, commandOptions),
  };
}
