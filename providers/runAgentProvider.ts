import type { AgentState } from '../machines/agentState';
import { AGENT_EVENT_ADMITTED, type AgentEventAdmission } from '../protocol/admittedEvents';
import { AGENT_EVENT_PROTOCOL, AGENT_EVENT_PROTOCOL_VERSION } from '../protocol/constants';
import { createAgentEventFactory } from '../protocol/createAgentEventFactory';
import type { AgentEvent, AgentEventType } from '../protocol/eventSchemas';
import { AGENT_PROTOCOL_ISSUE_CODES, type AgentProtocolIssue } from '../protocol/protocolIssue';
import { randomId } from '../protocol/randomId';
import { AgentTransportError, isAbortError } from '../transports/AgentTransportError';
import type { AgentProvider, AgentRunContinuation, AnyAgentProvider } from './AgentProvider';
import { AgentProviderError } from './AgentProviderError';
import type { AgentRunClosing } from './AgentRunTracker';
import { DeliveredCursors } from './DeliveredCursors';
import { EventGate } from './EventGate';
import {
  type AgentConnectionChange,
  type AgentReconnectOptions,
  backoffDelay,
  reconnectPolicy,
  sleep as sleepWithTimer,
} from './reconnect';
import { ConsumerFailure, DroppedStream, isConnectionLost, isUnrecoverable, StreamFailure } from './runFailures';
import { toAgentErrorInfo } from './toAgentErrorInfo';
import { ABORTED, closeIterator, untilAborted } from './untilAborted';

export type { AgentConnectionChange, AgentReconnectOptions } from './reconnect';

export interface RunAgentProviderOptions<Input, Request, Chunk, Context> {
  provider: AgentProvider<Input, Request, Chunk, Context>;
  input: Input;
  sessionId: string;
  /** Default: a random id. */
  runId?: string;
  /** One signal for user abort and unmount: the run ends `cancelled`, a backoff wait included. */
  signal?: AbortSignal;
  /**
   * Receives every validated event, in order; what it throws is rethrown unchanged. Its
   * second argument is the runner's token that the event was checked, which
   * `store.dispatch` takes so it does not check the event again. It may return the
   * `AgentProtocolIssue` it recorded for an event it refused, as `store.dispatch` does in
   * record mode: the result then lists it in `refused` (anything else it returns is ignored).
   */
  onEvent: (event: AgentEvent, admission: AgentEventAdmission) => unknown;
  /** Called with a chunk's cursor once all of that chunk's events were dispatched; never with an empty one. */
  onCursor?: (cursor: string) => void;
  /** Continue a run after a dropped connection, from a cursor, after its last sequence. */
  resume?: { cursor: string; lastSequence: number };
  /** The conversation so far (the session's AgentState before this run), for the request's messages. */
  history?: AgentState;
  /** This run continues one that ended waiting for input; see `AgentRunContinuation`. */
  continuation?: AgentRunContinuation;
  /**
   * Reconnecting a stream that broke with an error the provider's `classifyError` calls
   * retryable. Default `{ maxAttempts: 3, initialDelay: 500, maxDelay: 5000 }`;
   * `false` turns it off. See `AgentReconnectOptions` for the backoff.
   */
  reconnect?: false | AgentReconnectOptions;
  /** Told how the stream's connection changes; what it throws is rethrown unchanged. */
  onConnection?: (change: AgentConnectionChange) => void;
  /** The backoff's jitter, a number in [0, 1). Default `Math.random`. */
  random?: () => number;
  /** Waits between reconnect attempts, rejecting as soon as `signal` aborts. Default a timer. */
  sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
  now?: () => number;
}

/**
 * How a call to `runAgentProvider` ended. `status` is how the run ended (`completed`,
 * `failed`, `cancelled`), except that a run that completed while the consumer refused some
 * of its events (`onEvent` returned their issues: a store in record mode) is `refused`: what
 * AgentState shows of it is not all the provider said. `refused` lists those issues, in
 * order, whatever the status; it is absent when nothing was refused.
 *
 * @example
 * const result = await runAgentProvider({ ..., onEvent: store.dispatch });
 * if (result.status === 'refused') console.warn(result.refused?.map((issue) => issue.message));
 */
export interface AgentRunResult {
  runId: string;
  status: 'completed' | 'refused' | 'failed' | 'cancelled';
  /** The issues of the events of this run the consumer refused, when there were any. */
  refused?: AgentProtocolIssue[];
  /** The transport or runtime error a failed run ended with. */
  error?: unknown;
  /**
   * The runs the stream carried after this one, in order, from a provider that declares
   * `followOnRuns` (AG-UI: a RUN_STARTED after RUN_FINISHED). Missing when there were none.
   */
  followOnRuns?: AgentRunResult[];
}

function checkProvider(provider: AnyAgentProvider, resume: boolean): void {
  const { name, version } = provider.protocol ?? {};
  if (name !== AGENT_EVENT_PROTOCOL || version !== AGENT_EVENT_PROTOCOL_VERSION) {
    throw new AgentProviderError(
      'unsupported_protocol',
      provider.id,
      `speaks ${String(name)} ${String(version)}; this runner supports ${AGENT_EVENT_PROTOCOL} ${AGENT_EVENT_PROTOCOL_VERSION}`,
    );
  }
  const kind = provider.transport.kind;
  if (!provider.capabilities.transports.includes(kind)) {
    throw new AgentProviderError(
      'undeclared_transport',
      provider.id,
      `uses a "${kind}" transport, which its capabilities do not declare`,
    );
  }
  if (resume && (provider.capabilities.resumable !== true || provider.transport.resume === undefined)) {
    throw new AgentProviderError(
      'resume_unsupported',
      provider.id,
      'cannot resume a run: it is not resumable or its transport has no resume',
    );
  }
}

/**
 * The result of each run the gate followed, the error on the last when it failed; later runs
 * as `followOnRuns`. A run completed with refused events is `refused`.
 */
function resultOf(
  gate: EventGate,
  refused: ReadonlyMap<string, AgentProtocolIssue[]>,
  error?: unknown,
): AgentRunResult {
  const runs = [...gate.endedRuns, { runId: gate.runId, tracker: gate.tracker }];
  const results = runs.map(({ runId, tracker }): AgentRunResult => {
    const status = statusOf(tracker.terminalType);
    const issues = refused.get(runId);
    if (issues === undefined) return { runId, status };
    return { runId, status: status === 'completed' ? 'refused' : status, refused: issues };
  });
  const last = results[results.length - 1] as AgentRunResult;
  if (error !== undefined && last.status === 'failed') last.error = error;
  const [first, ...followOnRuns] = results as [AgentRunResult, ...AgentRunResult[]];
  return followOnRuns.length === 0 ? first : { ...first, followOnRuns };
}

const ISSUE_CODES: ReadonlySet<unknown> = new Set(AGENT_PROTOCOL_ISSUE_CODES);

/** Whether what `onEvent` returned is the issue of a refused event. */
function isRefusal(value: unknown): value is AgentProtocolIssue {
  if (typeof value !== 'object' || value === null) return false;
  const { code, message } = value as { code?: unknown; message?: unknown };
  return ISSUE_CODES.has(code) && typeof message === 'string';
}

function statusOf(type: AgentEventType | undefined): 'completed' | 'failed' | 'cancelled' {
  if (type === 'run.completed') return 'completed';
  if (type === 'run.cancelled') return 'cancelled';
  return 'failed';
}

/**
 * Runs one request through a provider: start events, the transport's chunks mapped to
 * events, then flush. Every event is validated before `onEvent` sees it. An abort ends
 * the run `cancelled`, a transport or runtime error ends it `failed` (both through the
 * provider's `transformError`, and the runner closes whatever the provider left open);
 * an error thrown by `onEvent` is rethrown unchanged; a provider that breaks the
 * contract gets its run failed and an `AgentProviderError`.
 *
 * A stream that breaks with an error the provider classifies as retryable is reconnected
 * in the same run (same context, so the mapping goes on), with backoff (`reconnect`):
 * - with `transport.resume` from the last cursor, when the provider is `resumable` and a
 *   chunk with a cursor (or `resume`) gave one;
 * - with `transport.open` again, only when no chunk at all arrived yet (and the run was not
 *   resumed): the request is sent again, nothing of its answer was applied.
 * Otherwise, or once the budget is spent, the error goes to `transformError`, once. Aborts,
 * contract errors and consumer errors never reconnect.
 *
 * A resumed stream (`resume`, or a reconnection) may send again what was delivered: a
 * chunk whose cursor was delivered in this call is skipped (and, when the cursors are
 * decimal integers, one not past the cursor resumed from), and until the first new event,
 * events at or below the last sequence are absorbed. A first new event that skips
 * sequences (`resume_gap`) or a cursor the transport refuses (`invalid_cursor`) cannot
 * continue the run: the call rejects with that `AgentProviderError`, `onConnection` hears
 * `unrecoverable`, and no `run.failed` is made up: the run is as the last event left it.
 *
 * A stream dropped mid-answer that cannot be continued is `unrecoverable` the same way (seed
 * 003 §11.1, §21.1), rejecting with the transport's error: its connection was lost
 * (`AgentTransportError` `network_error`, `abnormal_close` or `timeout`) after a chunk
 * arrived, and the provider cannot resume it (not `resumable`, or no cursor yet). What the
 * server answered, an unreadable frame, a contract error or an abort is not a drop; nor is a
 * resumable stream whose budget is spent, which goes to `transformError`.
 *
 * @example
 * const store = createAgentStore();
 * const controller = new AbortController();
 * const result = await runAgentProvider({
 *   provider,
 *   input: { prompt: 'Summarize this report' },
 *   sessionId: 'chat-1',
 *   signal: controller.signal,
 *   onEvent: store.dispatch,
 *   onConnection: (change) => setConnection(change.type),
 * });
 * result.status; // 'completed' | 'refused' | 'failed' | 'cancelled'
 */
export async function runAgentProvider<Input, Request, Chunk, Context>(
  options: RunAgentProviderOptions<Input, Request, Chunk, Context>,
): Promise<AgentRunResult> {
  const { provider, sessionId, onEvent, resume } = options;
  checkProvider(provider, resume !== undefined);
  const runId = options.runId ?? randomId();
  const now = options.now ?? Date.now;
  const policy = reconnectPolicy(options.reconnect);
  const random = options.random ?? Math.random;
  const sleep = options.sleep ?? sleepWithTimer;
  const { transport } = provider;
  const resumable = provider.capabilities.resumable === true && transport.resume !== undefined;
  const controller = new AbortController();
  const abortFromCaller = () => controller.abort(options.signal?.reason);
  if (options.signal?.aborted) controller.abort(options.signal.reason);
  else options.signal?.addEventListener('abort', abortFromCaller, { once: true });

  const initialSequence = resume?.lastSequence ?? 0;
  const gate = new EventGate(provider, sessionId, runId, initialSequence, (reason, event, code) => {
    throw new AgentProviderError(code, provider.id, reason, event);
  });
  if (resume !== undefined) gate.tracker.resume(runId, options.history);
  /** The issues of the events the consumer refused, by run. */
  const refused = new Map<string, AgentProtocolIssue[]>();
  /** Hands one admitted event to the consumer, noting whether it refused it. */
  const consume = (event: AgentEvent) => {
    let answer: unknown;
    try {
      // With the token, a store given this event skips checking it again.
      answer = onEvent(event, AGENT_EVENT_ADMITTED);
    } catch (error) {
      throw new ConsumerFailure(error);
    }
    if (answer === undefined || !isRefusal(answer)) return;
    const issues = refused.get(event.runId);
    if (issues === undefined) refused.set(event.runId, [answer]);
    else issues.push(answer);
  };
  const deliver = (events: readonly AgentEvent[]) => {
    for (const value of events) {
      const event = gate.admitOrAbsorb(value);
      if (event !== undefined) consume(event);
    }
  };
  /**
   * Ends the run with the runner's own events when the provider left it open. They are the
   * runner's, not the provider's: its declared event types do not gate them.
   */
  const closeOpen = (closing: AgentRunClosing) => {
    const factory = createAgentEventFactory({ sessionId, runId: gate.runId, initialSequence: gate.lastSequence, now });
    for (const event of gate.tracker.close(factory, closing)) consume(gate.admitOwn(event));
  };
  const aborted = () => controller.signal.aborted;
  const abortError = () =>
    new AgentTransportError('aborted', 'The run was aborted', { cause: controller.signal.reason });

  /** Set by the first `connecting`: one of `closed`, `failed` or `unrecoverable` then ends the call. */
  let connectionOpen = false;
  const report = (change: AgentConnectionChange) => {
    if (change.type === 'connecting') connectionOpen = true;
    if (!options.onConnection) return;
    try {
      options.onConnection(change);
    } catch (error) {
      connectionOpen = false;
      throw new ConsumerFailure(error);
    }
  };
  const reportEnd = (change: AgentConnectionChange) => {
    if (!connectionOpen) return;
    connectionOpen = false;
    report(change);
  };

  /** Chunks already delivered, skipped when a resumed stream sends them again. */
  const cursors = resumable ? new DeliveredCursors() : undefined;
  let lastCursor = resume?.cursor;
  /** Whether any connection delivered a chunk. */
  let received = false;
  /** Reconnect attempts since a connection last delivered a chunk. */
  let failures = 0;

  /** One connection: open or resume, then its chunks until it ends; its own errors are `StreamFailure`s. */
  const stream = async (request: Request, context: Context, attempt: number) => {
    const from = attempt === 0 ? resume?.cursor : resumable ? lastCursor : undefined;
    if (attempt > 0 || from !== undefined) gate.expectRepeats();
    cursors?.resumeFrom(from);
    report({ type: 'connecting', attempt });
    let iterator: AsyncIterator<Chunk>;
    try {
      const chunks =
        from !== undefined && transport.resume
          ? transport.resume(request, from, controller.signal)
          : transport.open(request, controller.signal);
      iterator = chunks[Symbol.asyncIterator]();
    } catch (error) {
      throw new StreamFailure(error);
    }
    let connected = false;
    /** The chunks until the stream ends; after an abort, whatever it yields is dropped. */
    const pump = async () => {
      for (;;) {
        let step: IteratorResult<Chunk>;
        try {
          step = await iterator.next();
        } catch (error) {
          throw new StreamFailure(error);
        }
        if (step.done) return;
        if (aborted()) throw abortError();
        if (!connected) {
          connected = true;
          received = true;
          // A connection that delivers starts the budget over.
          failures = 0;
          report({ type: 'connected' });
        }
        const chunk = step.value;
        // An empty cursor is no cursor (seed 003 §13.2: only a non-empty one reaches `onCursor`).
        const cursor = transport.getCursor?.(chunk) || undefined;
        if (cursor !== undefined && cursors?.isRepeat(cursor)) continue;
        deliver(provider.transformChunk(chunk, context));
        if (cursor === undefined) continue;
        cursors?.add(cursor);
        lastCursor = cursor;
        if (options.onCursor) {
          try {
            options.onCursor(cursor);
          } catch (error) {
            throw new ConsumerFailure(error);
          }
        }
      }
    };
    try {
      await untilAborted(pump(), controller.signal);
    } catch (error) {
      if (error === ABORTED) {
        // A transport that does not answer its signal must not hold the run: it is left to
        // end by itself.
        iterator.return?.().catch(() => undefined);
        throw abortError();
      }
      if (!(error instanceof StreamFailure)) await closeIterator(iterator);
      throw error;
    }
  };

  /** The wait before the next attempt, when `error` may be followed by one; undefined when it may not. */
  const nextAttempt = (error: unknown, context: Context): number | undefined => {
    if (policy === undefined || failures >= policy.maxAttempts || isAbortError(error)) return undefined;
    const canContinue = (resumable && lastCursor !== undefined) || (!received && resume === undefined);
    if (!canContinue || provider.classifyError?.(error, context)?.retryable !== true) return undefined;
    failures += 1;
    return backoffDelay(failures, policy, random);
  };

  try {
    const context = provider.createContext({
      sessionId,
      runId,
      initialSequence,
      now,
      signal: controller.signal,
      history: options.history,
      continuation: options.continuation,
    });
    try {
      if (resume === undefined) deliver(provider.start(options.input, context));
      const request = provider.prepareRequest(options.input, context);
      for (let attempt = 0; ; ) {
        try {
          await stream(request, context, attempt);
          break;
        } catch (caught) {
          if (!(caught instanceof StreamFailure)) throw caught;
          const error = caught.error;
          if (aborted()) throw error;
          if (AgentTransportError.isInstance(error) && error.code === 'invalid_cursor') {
            throw new AgentProviderError(
              'invalid_cursor',
              provider.id,
              `cannot resume the run: the transport refused its cursor (${error.message})`,
              undefined,
              { cause: error },
            );
          }
          const delayMs = nextAttempt(error, context);
          if (delayMs === undefined) {
            const lost = isConnectionLost(error);
            if (lost && received && !(resumable && lastCursor !== undefined)) throw new DroppedStream(error);
            throw error;
          }
          attempt = failures;
          report({ type: 'reconnecting', attempt, delayMs, error });
          await sleep(delayMs, controller.signal);
        }
      }
      if (aborted()) throw abortError();
      deliver(provider.flush(context));
      if (!gate.tracker.hasEnded) {
        closeOpen({
          type: 'failed',
          error: { message: 'The provider ended the stream without ending the run', code: 'missing_run_terminal' },
        });
      }
      reportEnd({ type: 'closed' });
      return resultOf(gate, refused);
    } catch (error) {
      if (error instanceof ConsumerFailure || error instanceof DroppedStream || AgentProviderError.isInstance(error)) {
        throw error;
      }
      const cause = aborted() ? abortError() : error;
      deliver(provider.transformError(cause, context));
      if (!gate.tracker.hasEnded) {
        closeOpen(
          aborted() ? { type: 'cancelled', reason: 'aborted' } : { type: 'failed', error: toAgentErrorInfo(cause) },
        );
      }
      reportEnd(aborted() ? { type: 'closed' } : { type: 'failed', error: cause });
      return resultOf(gate, refused, cause);
    }
  } catch (error) {
    const stopped = aborted();
    if (error instanceof ConsumerFailure) {
      controller.abort();
      try {
        reportEnd({ type: 'closed' });
      } catch {
        // The consumer's first error is the one rethrown.
      }
      throw error.error;
    }
    controller.abort();
    try {
      if (isUnrecoverable(error)) {
        reportEnd({ type: 'unrecoverable', error: error instanceof DroppedStream ? error.error : error });
      } else {
        if (gate.tracker.hasStarted && !gate.tracker.hasEnded) {
          const message = AgentProviderError.isInstance(error) ? error.message : toAgentErrorInfo(error).message;
          // Stopped by the caller, the run is cancelled whatever went wrong while it closed.
          closeOpen(
            stopped
              ? { type: 'cancelled', reason: 'aborted' }
              : { type: 'failed', error: { message, code: 'provider_error' } },
          );
        }
        reportEnd({ type: 'failed', error });
      }
    } catch (closing) {
      if (closing instanceof ConsumerFailure) throw closing.error;
      throw closing;
    }
    throw error instanceof DroppedStream ? error.error : error;
  } finally {
    options.signal?.removeEventListener('abort', abortFromCaller);
    controller.abort();
  }
}
