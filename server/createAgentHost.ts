import type { AgentState } from '../machines/agentState';
import { isWaitingForInput } from '../machines/pendingInput';
import type { AgentCommand } from '../protocol/commandSchemas';
import type { AgentEvent } from '../protocol/eventSchemas';
import { parseAgentEvent } from '../protocol/parseAgentEvent';
import { randomId } from '../protocol/randomId';
import { type AnyAgentProvider, isAgentProvider } from '../providers/AgentProvider';
import type { AgentReconnectOptions } from '../providers/runAgentProvider';
import type { AgentCommandOutcome, AgentEventLog } from './AgentEventLog';
import { AgentEventLogError } from './AgentEventLogError';
import { AgentHostError, errorResponse, failed, jsonResponse } from './AgentHostError';
import { commandOutcomeError } from './commandOutcomeError';
import { createMemoryEventLog } from './createMemoryEventLog';
import { EventStreams } from './EventStreams';
import { agentEventWire } from './EventStreamWire';
import { HostCommands } from './HostCommands';
import {
  type AgentHostRunRequest,
  describeFailure,
  parseHostCommand,
  parseRunRequest,
  readJsonBody,
  routeOf,
  toContinuation,
} from './hostRequests';
import { OrphanReaper } from './OrphanReaper';
import { RunningRuns } from './RunningRuns';
import { SessionStates } from './SessionStates';
import { redactedForLog } from './safeEventErrors';
import { settleClientTools } from './settleClientTools';
import {
  type AgentHostUIMessageStreamOptions,
  UIMessageStreamEndpoint,
} from './uiMessageStream/UIMessageStreamEndpoint';
import { WaitingRunAnswers } from './WaitingRunAnswers';
import { answerKey, continuationKey, continuationOf } from './waitingRuns';

/** A provider the host runs, by name; `parseInput` checks (and may transform) a client's input first. */
export type AgentHostProvider =
  | AnyAgentProvider
  | { provider: AnyAgentProvider; parseInput: (input: unknown) => unknown };

/** What a request asks to do, for `authorize`. */
export interface AgentHostAccess {
  sessionId: string;
  /** `run`: start a run; `read`: follow events; `command`: send a command; `state`: read the state. */
  action: 'run' | 'read' | 'command' | 'state';
}

export interface AgentHostOptions {
  /** The providers clients may start runs with, by the name they give in `POST /runs`. */
  providers: Readonly<Record<string, AgentHostProvider>>;
  /** Default: `createMemoryEventLog()`, one process only. Share a Redis log between instances. */
  eventLog?: AgentEventLog;
  /**
   * Called before every request is handled: `true` allows it, and so does `{ clientId }`, which
   * also says whom it is allowed for (the user or tenant, a non-empty string): a run it starts
   * makes its session that client's in the event log (`assignClient`), so one client with many
   * sessions loses its own to the log's bounds, never another's. Anything else refuses it
   * (`403 forbidden`); throw an `AgentHostError` to answer with another code (`forbidden` with
   * your message, say). Default: everything is allowed, so give one in production.
   */
  authorize?: (
    request: Request,
    access: AgentHostAccess,
  ) => boolean | { clientId: string } | Promise<boolean | { clientId: string }>;
  now?: () => number;
  /** This instance's name in run leases and signals. Default: a random id. */
  instanceId?: string;
  /** The path the host is mounted at (`/api/agent`); requests outside it are `404`. Default `''`. */
  basePath?: string;
  /** How long a run's lease lasts without renewal; an instance that dies loses its runs after it. Default 15 000 ms. */
  runLeaseMs?: number;
  /** A keep-alive comment after this much silence on an event stream. Default 15 000 ms. */
  heartbeatMs?: number;
  /** How long a command waits for the instance that runs its run. Default 10 000 ms. */
  commandTimeoutMs?: number;
  /** How long a command's idempotency record lives. Default 24 h. */
  commandRecordMs?: number;
  /**
   * Events of each followed session kept on this instance for its readers at the live edge,
   * who share one read of the log and one encoding of each event. Default 4 096.
   */
  feedCapacity?: number;
  /** Events read from the log at once for a reader. Default 256. */
  pageSize?: number;
  /**
   * Event-stream readers of the whole instance that may read the log at once to catch up
   * (behind what their session's feed holds, from a session's start, say). Past it a new
   * stream is answered `503 unavailable` with `Retry-After: 1`, and an open one that fell
   * behind waits its turn. Default 32.
   */
  maxCatchUpReaders?: number;
  /**
   * Bytes of frames queued for a reader that does not read before the host stops reading for
   * it; frames go out in chunks of about this size at most. Default 1 MiB.
   */
  maxQueuedBytes?: number;
  /**
   * A reader that takes nothing from its full queue for this long is dropped with its cursor;
   * one that keeps reading, however slowly and however far behind, is not. Default 30 000 ms.
   */
  slowReaderMs?: number;
  /**
   * How often an open event stream asks `authorize` again (`action: 'read'`, with the request
   * that opened it); it also asks before the frames of each new run. A refusal ends the stream
   * with a last `event: forbidden` frame (a chat stream: an `error` chunk, then `[DONE]`).
   * Default 60 000 ms; `0` checks only at new runs.
   */
  reauthorizeMs?: number;
  /** Largest request body. Default 1 MiB. */
  maxBodyBytes?: number;
  /**
   * A snapshot of a session's state is saved every this many events (and when a run ends),
   * so `/state` survives the log trimming a session's oldest events. Keep it well below the
   * log's bound per session (`maxEntriesPerSession`). Default 1 000.
   */
  snapshotEvery?: number;
  /** Sessions whose state the instance keeps in memory. Default 1 000. */
  maxCachedSessions?: number;
  /**
   * About how many bytes of session states the instance keeps in memory (each counted as the
   * JSON of the events and snapshot it was built from). Past it, or past `maxCachedSessions`,
   * the least recently used states go (none being read right now) and are read again from
   * their snapshot and the log when next asked for. Keep it above the log's
   * `maxBytesPerSession`: a state larger than the bound is read again at every request.
   * Default 64 MiB.
   */
  maxCachedStateBytes?: number;
  /** Reconnecting upstream streams that break (see `runAgentProvider`). */
  reconnect?: false | AgentReconnectOptions;
  /**
   * Errors no client sees as an event (the log failed, a provider broke its contract, a run
   * failed: its event carries a safe code and message, this gets the error with the upstream's
   * address and answer). Default `console.error`, with credentials redacted.
   */
  onError?: (error: unknown, context: { sessionId: string; runId?: string }) => void;
  /**
   * Serves the AI SDK's chat wire beside the host's own, so a `useChat` app points `api` at
   * `{basePath}/chat`: `POST {basePath}/chat` starts a run of `provider` from a new user
   * message, or answers the approvals and client tools of a run that waits, and streams the
   * run as a UI message stream; `GET {basePath}/chat/:chatId/stream` resumes the running
   * one (see docs/server.md). The chat id is the session id. Off by default.
   */
  uiMessageStream?: AgentHostUIMessageStreamOptions;
}

/** A session's AgentState and the cursor of the last event in it. */
export interface AgentHostState {
  state: AgentState;
  cursor: string | null;
}

export interface AgentHost {
  /** Handles one request of the HTTP API (see docs/server.md); never throws. */
  fetch(request: Request): Promise<Response>;
  /** Starts a run from the server itself (no request, no `authorize`): every client of the session sees it. */
  startRun(sessionId: string, request: AgentHostRunRequest): Promise<{ runId: string; cursor: string | null }>;
  /** The session's state now and its cursor. */
  getState(sessionId: string): Promise<AgentHostState>;
  /** Executes a command as `POST /commands` does, idempotent by its key. */
  executeCommand(command: AgentCommand): Promise<AgentCommandOutcome>;
  readonly instanceId: string;
  /** Stops taking requests, cancels the runs this instance runs, and waits for their events to reach the log. */
  close(): Promise<void>;
}

/** The HTTP answer to a command's outcome. */
function outcomeResponse(outcome: AgentCommandOutcome): Response {
  if (outcome.status === 'accepted') return jsonResponse({ status: 'accepted', events: outcome.events });
  return errorResponse(commandOutcomeError(outcome.error));
}

/**
 * The events the host writes from a client's request, checked as any event is (the schema,
 * plain JSON, the nesting limit): one the protocol would refuse would be served to every
 * reader, or refused by the log when read back, for as long as the log keeps the session.
 */
function checkedForLog(events: readonly AgentEvent[], from: string): AgentEvent[] {
  return events.map((event, index) => {
    const parsed = parseAgentEvent(event);
    if (parsed.success) return parsed.value;
    throw new AgentHostError(
      'invalid_request',
      `Invalid run request: ${from}.${index} would make an invalid ${event.type} event: ${describeFailure(parsed.error)}`,
    );
  });
}

/** The log's refusals as host errors: a cursor problem keeps its code, a storage failure is `unavailable`. */
function fromLogError(error: unknown): unknown {
  if (!AgentEventLogError.isInstance(error)) return error;
  if (error.code === 'invalid_cursor' || error.code === 'cursor_expired')
    return new AgentHostError(error.code, error.message);
  return new AgentHostError('unavailable', 'The event log is unavailable');
}

/**
 * Runs provider runs on a backend and serves them over HTTP: a run started by any client
 * (or by the server) is written to the event log, one event at a time in order, and every
 * client of the session reads it as server-sent events it can resume from any instance.
 * The handlers take and return web `Request`/`Response`, for Hono, Next.js route handlers
 * or Fastify as they are, and for `node:http` through `toNodeHandler`.
 *
 * @example
 * import { createServer } from 'node:http';
 * import { createAgentHost, toNodeHandler } from 'agent-machines/server';
 * import { createOpenAICompatibleAgentProvider } from 'agent-machines/providers/openai';
 *
 * const host = createAgentHost({
 *   providers: { assistant: createOpenAICompatibleAgentProvider({ baseURL, apiKey, model }) },
 *   authorize: (request, { sessionId }) => ownsSession(request, sessionId),
 * });
 * createServer(toNodeHandler(host.fetch)).listen(8787, '127.0.0.1');
 */
export function createAgentHost(options: AgentHostOptions): AgentHost {
  const ownsLog = options.eventLog === undefined;
  const log = options.eventLog ?? createMemoryEventLog();
  const now = options.now ?? Date.now;
  const instanceId = options.instanceId ?? randomId();
  const basePath = (options.basePath ?? '').replace(/\/+$/, '');
  const leaseMs = options.runLeaseMs ?? 15_000;
  const heartbeatMs = options.heartbeatMs ?? 15_000;
  const commandTimeoutMs = options.commandTimeoutMs ?? 10_000;
  const pageSize = options.pageSize ?? 256;
  const maxBodyBytes = options.maxBodyBytes ?? 1_048_576;
  const onError =
    options.onError ??
    ((error: unknown, context: { sessionId: string; runId?: string }) => {
      console.error('agent-machines host:', context, redactedForLog(error));
    });
  const sessions = new SessionStates(log, {
    maxCachedSessions: options.maxCachedSessions ?? 1000,
    maxCachedStateBytes: options.maxCachedStateBytes ?? 64 * 1024 * 1024,
    snapshotEvery: options.snapshotEvery ?? 1000,
    onLost: (sessionId, error) => onError(error, { sessionId }),
  });
  const runs = new RunningRuns({
    log,
    instanceId,
    leaseMs,
    reconnect: options.reconnect,
    now,
    // The session's state follows the log as the run writes it, so its snapshots are taken
    // before the log's bound trims what they hold.
    onAppended: (sessionId) => sessions.refresh(sessionId, (error) => onError(error, { sessionId })),
    onRunEnded: (sessionId) => sessions.saveSnapshot(sessionId),
    onError,
  });
  const streams = new EventStreams({
    log,
    feedCapacity: options.feedCapacity ?? 4096,
    pageSize,
    maxCatchUpReaders: options.maxCatchUpReaders ?? 32,
    maxQueuedBytes: options.maxQueuedBytes ?? 1_048_576,
    heartbeatMs,
    slowReaderMs: options.slowReaderMs ?? 30_000,
    now,
    onUnused: (sessionId) => reaper.forget(sessionId),
  });
  const reaper = new OrphanReaper({ log, sessions, runs, instanceId, leaseMs, heartbeatMs, now });
  const waiting = new WaitingRunAnswers({
    log,
    sessions,
    instanceId,
    leaseMs,
    timeoutMs: commandTimeoutMs,
    now,
    continueRun: (sessionId, request) => startRun(sessionId, request, { trusted: true }),
  });
  const commands = new HostCommands({
    log,
    sessions,
    runs,
    reaper,
    waiting,
    instanceId,
    leaseMs,
    timeoutMs: commandTimeoutMs,
    recordMs: options.commandRecordMs ?? 86_400_000,
    now,
  });
  const chatProvider = options.uiMessageStream?.provider;
  if (chatProvider !== undefined && !Object.hasOwn(options.providers, chatProvider)) {
    throw new AgentHostError('unknown_provider', `uiMessageStream.provider: no provider named "${chatProvider}"`);
  }
  const chat =
    options.uiMessageStream === undefined
      ? undefined
      : new UIMessageStreamEndpoint({
          ...options.uiMessageStream,
          sessions,
          basePath,
          maxBodyBytes,
          authorize,
          startRun,
          executeCommand: async (command) => {
            await listening;
            return commands.execute(command);
          },
          openStream: (request, sessionId, opening) =>
            streams.open(sessionId, {
              ...opening,
              signal: request.signal,
              onIdle: (runId) => reaper.sweep(sessionId, runId),
              ...reauthorizing(request, sessionId),
            }),
        });
  let closed = false;

  const listening = log.listen(instanceId, (signal) => {
    if (signal.type !== 'command') return;
    const { command } = signal;
    commands
      .executeHere(command)
      .then((outcome) => commands.record(command, outcome))
      .catch((error) => onError(error, { sessionId: command.sessionId, runId: command.runId }));
  });
  // A log that cannot listen fails the requests that need it, not the process.
  listening.catch(() => {});

  function resolveProvider(name: string): { provider: AnyAgentProvider; parseInput?: (input: unknown) => unknown } {
    const entry = Object.hasOwn(options.providers, name) ? options.providers[name] : undefined;
    if (entry === undefined) throw new AgentHostError('unknown_provider', `No provider named "${name}"`);
    return isAgentProvider(entry) ? { provider: entry } : entry;
  }

  /**
   * `clientId`: whom `authorize` allowed the request for, when it said. `trusted`: the host
   * continues a run itself, with the input the waiting run was started with (parsed then).
   */
  async function startRun(
    sessionId: string,
    request: AgentHostRunRequest,
    { clientId, trusted = false }: { clientId?: string | undefined; trusted?: boolean } = {},
  ) {
    if (closed) throw new AgentHostError('unavailable', 'The host is closing');
    const { provider, parseInput } = resolveProvider(request.provider);
    let input = request.input;
    if (parseInput !== undefined && !trusted) {
      try {
        input = parseInput(input);
      } catch (error) {
        const reason = error instanceof Error ? error.message : 'refused';
        throw new AgentHostError('invalid_input', `Invalid input for "${request.provider}": ${reason}`);
      }
    }
    const runId = request.runId ?? randomId();
    let { state, cursor } = await sessions.sync(sessionId);
    if (Object.hasOwn(state.runs, runId)) throw new AgentHostError('run_exists', `Run "${runId}" already exists`);
    const continued = request.continuation?.runId;
    if (continued !== undefined && !Object.hasOwn(state.runs, continued)) {
      throw new AgentHostError('invalid_request', `The continued run "${continued}" is not a run of this session`);
    }
    if (continued !== undefined) checkContinuable(state, continued);
    checkedForLog(settleClientTools(state, sessionId, request, now), 'continuation.toolResults');
    if (clientId !== undefined) await log.assignClient?.(sessionId, clientId);
    // One continuation of a waiting run at a time, across instances (a double click, two
    // tabs): the lease lapses by itself, so a continuation that failed can be tried again.
    if (continued !== undefined && !(await log.claimRun(sessionId, continuationKey(continued), instanceId, leaseMs))) {
      throw new AgentHostError('continuation_in_progress', `Run "${continued}" is being continued by another request`);
    }
    if (continued !== undefined) ({ state, cursor } = await sessions.sync(sessionId));
    const settled =
      continued === undefined
        ? []
        : await continuing(sessionId, state, continued, settleClientTools(state, sessionId, request, now));
    if (!(await log.claimRun(sessionId, runId, instanceId, leaseMs))) {
      throw new AgentHostError('run_exists', `Run "${runId}" already exists`);
    }
    const starting = runs.reserve(sessionId, runId);
    try {
      if (settled.length > 0) {
        await log.append(sessionId, settled);
        ({ state, cursor } = await sessions.sync(sessionId));
      }
      runs.start({
        sessionId,
        runId,
        provider,
        providerName: request.provider,
        startsAfter: continued === undefined ? cursor : undefined,
        input,
        history: state,
        continuation: toContinuation(request),
      });
    } finally {
      starting();
    }
    return { runId, cursor: cursor ?? null };
  }

  /** Refuses to continue a run that another run is continuing, or that one continued for good. */
  function checkContinuable(state: AgentState, continued: string): void {
    const previous = continuationOf(state, continued);
    if (previous?.status === 'running') {
      throw new AgentHostError(
        'continuation_in_progress',
        `Run "${continued}" is being continued by run "${previous.id}"`,
      );
    }
    const run = state.runs[continued];
    if (previous !== undefined && run !== undefined && !isWaitingForInput(state, run)) {
      throw new AgentHostError(
        'invalid_request',
        `Run "${continued}" does not wait for input: run "${previous.id}" continued it`,
      );
    }
  }

  /**
   * Checks again that a waiting run may be continued, holding its continuation's lease and
   * with the state read after taking it, and takes the lease of its next sequence for the
   * client's tool results that go to it: answers written by commands meanwhile come first.
   * Resolves with the results' events, checked for the log.
   */
  async function continuing(sessionId: string, state: AgentState, continued: string, results: AgentEvent[]) {
    checkContinuable(state, continued);
    if (results.length === 0) return [];
    const sequence = state.lastSequenceByRun[continued] ?? 0;
    if (!(await log.claimRun(sessionId, answerKey(continued, sequence), instanceId, leaseMs))) {
      throw new AgentHostError('continuation_in_progress', `An answer to run "${continued}" is being written`);
    }
    return checkedForLog(results, 'continuation.toolResults');
  }

  async function getState(sessionId: string): Promise<AgentHostState> {
    const { state, cursor } = await sessions.sync(sessionId);
    return { state, cursor: cursor ?? null };
  }

  /** Resolves whom `authorize` allowed the request for (`undefined` when it said `true`), or throws `forbidden`. */
  async function authorize(request: Request, access: AgentHostAccess): Promise<string | undefined> {
    if (options.authorize === undefined) return undefined;
    const allowed: unknown = await options.authorize(request, access);
    if (allowed === true) return undefined;
    const clientId =
      typeof allowed === 'object' && allowed !== null ? (allowed as { clientId?: unknown }).clientId : undefined;
    if (typeof clientId === 'string' && clientId !== '') return clientId;
    throw new AgentHostError('forbidden', `Not allowed to ${access.action} in this session`);
  }

  /** Asks `authorize` again for a reader of an open stream, as `reauthorizeMs` and each new run say. */
  function reauthorizing(request: Request, sessionId: string) {
    if (options.authorize === undefined) return {};
    return {
      reauthorize: () => authorize(request, { sessionId, action: 'read' }).then(() => true),
      reauthorizeMs: options.reauthorizeMs ?? 60_000,
    };
  }

  async function streamEvents(request: Request, sessionId: string): Promise<Response> {
    const url = new URL(request.url);
    const after = request.headers.get('last-event-id') ?? url.searchParams.get('after') ?? undefined;
    const runId = url.searchParams.get('runId') ?? undefined;
    const body = await streams
      .open(sessionId, {
        after: after === '' ? undefined : after,
        runs: runId === undefined ? undefined : { runIds: [runId] },
        wire: agentEventWire,
        signal: request.signal,
        onIdle: (waitingOn) => reaper.sweep(sessionId, waitingOn),
        ...reauthorizing(request, sessionId),
        check: async () => {
          if (runId === undefined || runs.has(sessionId, runId)) return;
          const owner = await log.runOwner(sessionId, runId);
          if (owner.state === 'unowned' && (await getState(sessionId)).state.runs[runId] === undefined) {
            throw new AgentHostError('unknown_run', `Session has no run "${runId}"`);
          }
        },
      })
      .catch((error: unknown) => {
        throw fromLogError(error);
      });
    return new Response(body, {
      status: 200,
      headers: {
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-cache, no-transform',
        'x-accel-buffering': 'no',
      },
    });
  }

  async function handle(request: Request): Promise<Response> {
    if (closed) throw new AgentHostError('unavailable', 'The host is closing');
    const chatRoute = chat?.routeOf(request);
    if (chatRoute !== undefined) return (chat as UIMessageStreamEndpoint).handle(request, chatRoute);
    const { sessionId, endpoint } = routeOf(request, basePath);
    if (endpoint === 'runs') {
      const clientId = await authorize(request, { sessionId, action: 'run' });
      const started = await startRun(sessionId, parseRunRequest(await readJsonBody(request, maxBodyBytes)), {
        clientId,
      });
      return jsonResponse(started, 202);
    }
    if (endpoint === 'events') {
      await authorize(request, { sessionId, action: 'read' });
      return streamEvents(request, sessionId);
    }
    if (endpoint === 'state') {
      await authorize(request, { sessionId, action: 'state' });
      return jsonResponse(await getState(sessionId));
    }
    await authorize(request, { sessionId, action: 'command' });
    const parsed = parseHostCommand(await readJsonBody(request, maxBodyBytes));
    if (!parsed.success) throw new AgentHostError('invalid_command', parsed.message);
    if (parsed.value.sessionId !== sessionId) {
      throw new AgentHostError('session_mismatch', 'The command names another session than the path');
    }
    await listening;
    return outcomeResponse(await commands.execute(parsed.value));
  }

  return {
    instanceId,
    async fetch(request) {
      try {
        return await handle(request);
      } catch (error) {
        const answered = fromLogError(error);
        if (!AgentHostError.isInstance(answered)) onError(error, { sessionId: '' });
        return errorResponse(answered);
      }
    },
    startRun: async (sessionId, request) => startRun(sessionId, parseRunRequest(request)),
    getState,
    async executeCommand(command) {
      const parsed = parseHostCommand(command);
      if (!parsed.success) return failed('invalid_command', parsed.message);
      await listening;
      return commands.execute(parsed.value);
    },
    async close() {
      if (closed) return;
      closed = true;
      await runs.close();
      const stopListening = await listening.catch(() => undefined);
      await stopListening?.();
      sessions.destroy();
      if (ownsLog) await log.close();
    },
  };
}
