import type { AgentStore } from '../../machines/createAgentStore';
import { AGENT_EVENT_ADMITTED } from '../../protocol/admittedEvents';
import { checkAgentEvent } from '../../protocol/parseAgentEvent';
import { AgentTransportError } from '../../transports/AgentTransportError';
import { createSSETransport, type SSEChunk } from '../../transports/createSSETransport';
import {
  type AgentConnectionChange,
  type AgentReconnectOptions,
  backoffDelay,
  DEFAULT_RECONNECT,
  reconnectPolicy,
  sleep,
} from '../reconnect';
import {
  type AgentHostHeaders,
  createAgentHostClient,
  describeHostAnswer,
  forbiddenFrameError,
} from './agentHostClient';
import { fetchAgentHostState } from './fetchAgentHostState';

/**
 * How the follower's connection changes: the shapes of `AgentConnectionChange`, plus
 * `reset` when the store was reset to the host's `/state` (at the start, or after
 * `410 cursor_expired`). A call ends with exactly one of `closed` (the signal aborted),
 * `failed` or `unrecoverable` (the host refused the cursor, `422`).
 */
export type AgentSessionFollowChange = AgentConnectionChange | { type: 'reset'; cursor: string | null };

/** A frame the follower did not give the store. */
export interface AgentSessionFollowIssue {
  /** `session_mismatch`: an event of another session; `invalid_event`: not an AgentEvent, past `maxIssues`. */
  code: 'session_mismatch' | 'invalid_event';
  message: string;
  /** The frame's cursor, when it had one. */
  cursor: string | undefined;
}

/** The follower's issues: the latest `maxIssues`, and how many older ones were dropped. */
export interface AgentSessionFollowIssues {
  latest: readonly AgentSessionFollowIssue[];
  dropped: number;
}

export interface FollowAgentSessionOptions {
  /** Where the host is mounted: `/api/agent`, `https://agents.example.com/v1`. */
  baseURL: string | URL;
  sessionId: string;
  /** Sent on every request; a function is called per request, for a fresh token. */
  headers?: AgentHostHeaders;
  /** Default `globalThis.fetch`. */
  fetch?: typeof fetch;
  /** The store the session's events go to: `chat.runtime.store` of `useXChat`, `createXChatRuntime(...).store`. */
  store: Pick<AgentStore, 'getSnapshot' | 'dispatch' | 'reset'>;
  /** Aborting it stops following; the promise then resolves. */
  signal: AbortSignal;
  /** A cursor `onCursor` gave, to follow after: the store must hold the session up to it. */
  after?: string;
  /**
   * Backoff between reconnects (default 3 attempts, 500 ms to 5 s). The budget bounds
   * consecutive failures: a connection that delivers an event of the session starts the count
   * over (one the host accepts and ends before any event does not).
   */
  reconnect?: AgentReconnectOptions;
  /** How long the host may stay silent (it sends a heartbeat); then it reconnects. Default 60 000 ms; `0` turns it off. */
  idleTimeoutMs?: number;
  /**
   * Largest answer to `GET /state`, in bytes once decoded: read as it arrives and refused past
   * it (`AgentTransportError` `response_too_large`, which ends the follower). Default 16 MiB.
   */
  maxResponseBytes?: number;
  /** Largest event frame, in characters; see `createSSETransport`. Default 10 MiB. */
  maxFrameSize?: number;
  onConnection?: (change: AgentSessionFollowChange) => void;
  /**
   * Told of each frame the follower keeps from the store: an event of another session (never
   * applied), or a frame that is not an AgentEvent once the store already listed `maxIssues`
   * of them. `issues` holds the latest `maxIssues` of these, with a count of those dropped.
   */
  onIssue?: (issue: AgentSessionFollowIssue, issues: AgentSessionFollowIssues) => void;
  /**
   * How many invalid frames the store lists in its `issues` (later ones go to `onIssue` only),
   * and how many of its own issues the follower keeps. Default 100.
   */
  maxIssues?: number;
  /** The cursor of each event applied: keep the last one to follow `after` it later. */
  onCursor?: (cursor: string) => void;
}

/** An error of the caller's own code (the store in strict mode, a callback): it ends the follower as it is. */
class ConsumerFailure {
  constructor(readonly error: unknown) {}
}

/** What to do after an error of the host or the network. */
type Recovery = 'retry' | 'reset' | 'unrecoverable' | 'fail';

function recoveryOf(error: unknown): Recovery {
  if (!AgentTransportError.isInstance(error)) return 'fail';
  const status = error.status ?? 0;
  if (status === 410) return 'reset';
  if (error.code === 'invalid_cursor' && status === 422) return 'unrecoverable';
  if (error.code === 'http_error' || error.code === 'invalid_cursor') {
    return status === 429 || status >= 500 ? 'retry' : 'fail';
  }
  return error.code === 'network_error' || error.code === 'timeout' || error.code === 'abnormal_close'
    ? 'retry'
    : 'fail';
}

/** A refusal of the events stream, named with the host's code; 404 and the like stay `http_error` even on a resume. */
function namedRefusal(error: unknown, target: string): unknown {
  if (!AgentTransportError.isInstance(error) || error.status === undefined) return error;
  const { status, bodyExcerpt = '' } = error;
  const code = error.code === 'invalid_cursor' && status !== 410 && status !== 422 ? 'http_error' : error.code;
  return new AgentTransportError(code, describeHostAnswer('GET', target, status, bodyExcerpt), {
    status,
    bodyExcerpt,
    cause: error,
  });
}

/** The frame's value for the store: its JSON, or the text itself, which the store lists as an invalid event. */
function frameValue(chunk: SSEChunk): unknown {
  try {
    return JSON.parse(chunk.data);
  } catch {
    return chunk.data;
  }
}

/**
 * Follows every run of a session on an `agent-machines/server` host, whoever started it (this
 * client, another tab, the server's `host.startRun`), into a store, until `signal` aborts.
 * `createAgentEventProvider` follows only the runs its own client starts; this shows the
 * others' too, beside them: an event that reaches the store through both streams is applied
 * once (the store absorbs an event id it has seen, or one at or below a restored sequence).
 * Events the runtime makes itself (the closing events of a run aborted here, a tool result
 * settled here) are not the host's events for the same thing, whose own then arrive as
 * `invalid_sequence` or `terminal_run` issues.
 *
 * Where it starts: after `after` when given. Otherwise, when the store holds no run, the
 * store is reset to the host's `GET /state` and it follows after that state's cursor; when
 * it holds runs (restored from a checkpoint, or run here), it follows from the oldest event
 * the host's log retains, and what the store has is absorbed. A log trimmed past what the
 * store holds then gives events of runs the store never saw start (`missing_run` issues):
 * pass the cursor `onCursor` gave last as `after` to avoid that.
 *
 * Each frame is checked as the store checks events and dispatched: an invalid one is listed
 * in `state.issues` (in strict mode the store throws, and the follower rejects with that
 * error), up to `maxIssues` of them; later ones go to `onIssue` only. An event of another
 * session is never applied: `onIssue` hears of it (`session_mismatch`). Redirects are
 * followed only within the host's origin.
 * A dropped connection, a stall longer than `idleTimeoutMs`, a 5xx or 429, the host
 * dropping a slow reader, or the stream ending reconnects after the last cursor, with
 * backoff. A `410 cursor_expired` (the log was trimmed past the cursor) resets the store to
 * `GET /state` and follows after its cursor: what the store held that the host does not
 * know (events this client made up itself, such as a run it closed locally) is dropped.
 *
 * Resolves when `signal` aborts. Rejects with an `AgentTransportError` on what it cannot
 * get past: `invalid_cursor` (422, a cursor this session's log never gave), `http_error`
 * (401, 403, 404 and other refusals, with the status and the host's code in the message),
 * or the last retryable error once `reconnect.maxAttempts` attempts in a row failed; and
 * with the store's `AgentProtocolError` in strict mode, or `parseAgentState`'s
 * `AgentValidationError` when the host's `/state` is not an AgentState.
 *
 * @example
 * const sessionId = 'conversation-1';
 * const { messages, onRequest, chat } = useXChat({ provider, conversationKey: sessionId });
 * useEffect(() => {
 *   const controller = new AbortController();
 *   followAgentSession({ baseURL: '/api/agent', sessionId, store: chat.runtime.store, signal: controller.signal })
 *     .catch((error) => setFollowError(error));
 *   return () => controller.abort();
 * }, [chat, sessionId]);
 */
export async function followAgentSession(options: FollowAgentSessionOptions): Promise<void> {
  const { store, signal } = options;
  const client = createAgentHostClient(options);
  const policy = reconnectPolicy(options.reconnect) ?? DEFAULT_RECONNECT;
  const eventsURL = client.url('events');
  let cursor = options.after;
  let needsState = cursor === undefined && Object.keys(store.getSnapshot().runs).length === 0;
  let failures = 0;
  const maxIssues = options.maxIssues ?? 100;
  /** Invalid frames the store was given, each listed in its `issues`. */
  let invalidFrames = 0;
  let issues: AgentSessionFollowIssue[] = [];
  let droppedIssues = 0;
  /** A `connecting` was reported: one of `closed`, `failed` and `unrecoverable` is owed, once. */
  let reporting = false;

  const report = (change: AgentSessionFollowChange) => {
    if (change.type === 'connecting') reporting = true;
    if (change.type === 'closed' || change.type === 'failed' || change.type === 'unrecoverable') {
      if (!reporting) return;
      reporting = false;
    }
    try {
      options.onConnection?.(change);
    } catch (error) {
      reporting = false;
      throw new ConsumerFailure(error);
    }
  };

  /** Set when the caller's code threw inside `fetch`, where the transport would make a network error of it. */
  let consumerError: ConsumerFailure | undefined;
  const events = createSSETransport<undefined>({
    url: eventsURL,
    method: 'GET',
    // Connected as soon as the host accepts the stream: a quiet session sends no frame for a while.
    fetch: async (input, init) => {
      const response = await client.fetch(input, init);
      const accepted = (response.headers.get('content-type') ?? '').toLowerCase().startsWith('text/event-stream');
      if (response.ok && accepted) {
        try {
          report({ type: 'connected' });
        } catch (error) {
          consumerError = error as ConsumerFailure;
          response.body?.cancel().catch(() => {});
          throw error;
        }
      }
      return response;
    },
    ...(client.headers === undefined ? {} : { headers: client.headers }),
    ...(options.idleTimeoutMs === undefined ? {} : { idleTimeoutMs: options.idleTimeoutMs }),
    ...(options.maxFrameSize === undefined ? {} : { maxFrameSize: options.maxFrameSize }),
  });

  const consume = <T>(call: () => T): T => {
    try {
      return call();
    } catch (error) {
      throw new ConsumerFailure(error);
    }
  };

  const refuse = (issue: AgentSessionFollowIssue) => {
    issues.push(issue);
    if (issues.length > maxIssues) {
      droppedIssues += issues.length - maxIssues;
      issues = issues.slice(issues.length - maxIssues);
    }
    consume(() => options.onIssue?.(issue, { latest: [...issues], dropped: droppedIssues }));
  };

  /**
   * Gives the store a frame's event, checked once here; keeps other sessions' events, and
   * invalid frames past the bound, from it. Whether it was a valid event of the session.
   */
  function apply(chunk: SSEChunk): boolean {
    const value = frameValue(chunk);
    const failure = checkAgentEvent(value);
    if (failure !== undefined) {
      if (invalidFrames < maxIssues) {
        invalidFrames += 1;
        consume(() => store.dispatch(value));
        return false;
      }
      refuse({ code: 'invalid_event', message: `Not an AgentEvent: ${failure.message}`, cursor: chunk.id });
      return false;
    }
    const { sessionId } = value as { sessionId: string };
    if (sessionId !== options.sessionId) {
      refuse({
        code: 'session_mismatch',
        message: `An event of session "${sessionId}" on the stream of session "${options.sessionId}"`,
        cursor: chunk.id,
      });
      return false;
    }
    // Checked as the store would: it skips its own schema check, not its other checks.
    consume(() => store.dispatch(value, AGENT_EVENT_ADMITTED));
    return true;
  }

  async function resetFromState(start: boolean): Promise<void> {
    const answer = await fetchAgentHostState(client, signal);
    // A run this client started meanwhile is in the store: following from the log's start keeps it.
    if (start && Object.keys(store.getSnapshot().runs).length > 0) return;
    consume(() => store.reset(answer.state));
    cursor = answer.cursor ?? undefined;
    report({ type: 'reset', cursor: answer.cursor });
  }

  /** One connection, until the host ends it; it always ends with an error. */
  async function follow(): Promise<never> {
    const frames =
      cursor === undefined || events.resume === undefined
        ? events.open(undefined, signal)
        : events.resume(undefined, cursor, signal);
    try {
      for await (const chunk of frames) {
        if (chunk.event === 'forbidden') throw forbiddenFrameError(eventsURL, chunk.data);
        if (chunk.event === 'dropped') {
          const at = cursor === undefined ? 'before any event' : `after cursor "${cursor}"`;
          throw new AgentTransportError('abnormal_close', `The host dropped this reader (too slow) ${at}`);
        }
        // Frames of other names are for other clients, as an EventSource would ignore them.
        if (chunk.event !== undefined && chunk.event !== 'message') continue;
        // The budget bounds failures in a row: a connection that delivered an event starts it over.
        if (apply(chunk)) failures = 0;
        if (chunk.id === undefined) continue;
        const id = chunk.id;
        cursor = id;
        consume(() => options.onCursor?.(id));
      }
    } catch (error) {
      if (error instanceof ConsumerFailure) throw error;
      throw consumerError ?? namedRefusal(error, eventsURL);
    }
    throw new AgentTransportError('abnormal_close', `The host ended the events of session "${options.sessionId}"`);
  }

  try {
    report({ type: 'connecting', attempt: 0 });
    for (;;) {
      let failure: unknown;
      try {
        if (needsState) {
          await resetFromState(cursor === undefined);
          needsState = false;
        }
        await follow();
      } catch (error) {
        if (error instanceof ConsumerFailure) throw error;
        failure = error;
      }
      if (signal.aborted) break;
      const recovery = recoveryOf(failure);
      if (recovery === 'unrecoverable') {
        report({ type: 'unrecoverable', error: failure });
        throw failure;
      }
      if (recovery === 'fail' || failures >= policy.maxAttempts) {
        report({ type: 'failed', error: failure });
        throw failure;
      }
      if (recovery === 'reset') needsState = true;
      failures += 1;
      const delayMs = backoffDelay(failures, policy, Math.random);
      report({ type: 'reconnecting', attempt: failures, delayMs, error: failure });
      try {
        await sleep(delayMs, signal);
      } catch {
        break;
      }
      report({ type: 'connecting', attempt: failures });
    }
    report({ type: 'closed' });
  } catch (error) {
    if (!(error instanceof ConsumerFailure)) throw error;
    try {
      report({ type: 'failed', error: error.error });
    } catch {
      // The first error of the caller's code is the one rethrown.
    }
    throw error.error;
  }
}
