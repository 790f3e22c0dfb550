import type { AgentState } from '../machines/agentState';
import { AGENT_EVENT_ADMITTED, type AgentEventAdmission } from '../protocol/admittedEvents';
import { AGENT_EVENT_PROTOCOL, AGENT_EVENT_PROTOCOL_VERSION } from '../protocol/constants';
import { createAgentEventFactory } from '../protocol/createAgentEventFactory';
import type { AgentEvent, AgentEventType } from '../protocol/eventSchemas';
import { randomId } from '../protocol/randomId';
import { AgentTransportError } from '../transports/AgentTransportError';
import type { AgentProvider, AgentRunContinuation, AnyAgentProvider } from './AgentProvider';
import { AgentProviderError } from './AgentProviderError';
import type { AgentRunClosing } from './AgentRunTracker';
import { EventGate } from './EventGate';
import { toAgentErrorInfo } from './toAgentErrorInfo';

export interface RunAgentProviderOptions<Input, Request, Chunk, Context> {
  provider: AgentProvider<Input, Request, Chunk, Context>;
  input: Input;
  sessionId: string;
  /** Default: a random id. */
  runId?: string;
  /** One signal for user abort and unmount: the run ends `cancelled`. */
  signal?: AbortSignal;
  /** Receives every validated event, in order; what it throws is rethrown unchanged. */
  /**
   * Receives every validated event. Its second argument is the runner's token that the
   * event was checked, which `store.dispatch` takes so it does not check the event again.
   */
  onEvent: (event: AgentEvent, admission: AgentEventAdmission) => void;
  /** Called with a chunk's cursor once all of that chunk's events were dispatched. */
  onCursor?: (cursor: string) => void;
  /** Continue a run after a dropped connection, from a cursor, after its last sequence. */
  resume?: { cursor: string; lastSequence: number };
  /** The conversation so far (the session's AgentState before this run), for the request's messages. */
  history?: AgentState;
  /** This run continues one that ended waiting for input; see `AgentRunContinuation`. */
  continuation?: AgentRunContinuation;
  now?: () => number;
}

export interface AgentRunResult {
  runId: string;
  status: 'completed' | 'failed' | 'cancelled';
  /** The transport or runtime error a failed run ended with. */
  error?: unknown;
}

/** Marks an error thrown by `onEvent`, so it is rethrown as it is and never transformed. */
class ConsumerFailure {
  constructor(readonly error: unknown) {}
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

function statusOf(type: AgentEventType | undefined): AgentRunResult['status'] {
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
 * @example
 * const store = createAgentStore();
 * const controller = new AbortController();
 * const result = await runAgentProvider({
 *   provider,
 *   input: { prompt: 'Summarize this report' },
 *   sessionId: 'chat-1',
 *   signal: controller.signal,
 *   onEvent: store.dispatch,
 * });
 * result.status; // 'completed' | 'failed' | 'cancelled'
 */
export async function runAgentProvider<Input, Request, Chunk, Context>(
  options: RunAgentProviderOptions<Input, Request, Chunk, Context>,
): Promise<AgentRunResult> {
  const { provider, sessionId, onEvent } = options;
  checkProvider(provider, options.resume !== undefined);
  const runId = options.runId ?? randomId();
  const now = options.now ?? Date.now;
  const controller = new AbortController();
  const abortFromCaller = () => controller.abort(options.signal?.reason);
  if (options.signal?.aborted) controller.abort(options.signal.reason);
  else options.signal?.addEventListener('abort', abortFromCaller, { once: true });

  const initialSequence = options.resume?.lastSequence ?? 0;
  const gate = new EventGate(provider, sessionId, runId, initialSequence, (reason, event) => {
    throw new AgentProviderError('invalid_event', provider.id, reason, event);
  });
  const deliver = (events: readonly AgentEvent[]) => {
    for (const value of events) {
      const event = gate.admit(value);
      try {
        // With the token, a store given this event skips checking it again.
        onEvent(event, AGENT_EVENT_ADMITTED);
      } catch (error) {
        throw new ConsumerFailure(error);
      }
    }
  };
  /** Ends the run with the runner's own events when the provider left it open. */
  const closeOpen = (closing: AgentRunClosing) => {
    const factory = createAgentEventFactory({ sessionId, runId, initialSequence: gate.lastSequence, now });
    deliver(gate.tracker.close(factory, closing));
  };
  const aborted = () => controller.signal.aborted;
  const abortError = () =>
    new AgentTransportError('aborted', 'The run was aborted', { cause: controller.signal.reason });

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
      if (options.resume === undefined) deliver(provider.start(options.input, context));
      const request = provider.prepareRequest(options.input, context);
      const { transport } = provider;
      const stream =
        options.resume !== undefined && transport.resume
          ? transport.resume(request, options.resume.cursor, controller.signal)
          : transport.open(request, controller.signal);
      for await (const chunk of stream) {
        if (aborted()) throw abortError();
        deliver(provider.transformChunk(chunk, context));
        const cursor = transport.getCursor?.(chunk);
        if (cursor !== undefined && options.onCursor) {
          try {
            options.onCursor(cursor);
          } catch (error) {
            throw new ConsumerFailure(error);
          }
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
      return { runId, status: statusOf(gate.tracker.terminalType) };
    } catch (error) {
      if (error instanceof ConsumerFailure || AgentProviderError.isInstance(error)) throw error;
      const cause = aborted() ? abortError() : error;
      deliver(provider.transformError(cause, context));
      if (!gate.tracker.hasEnded) {
        closeOpen(
          aborted() ? { type: 'cancelled', reason: 'aborted' } : { type: 'failed', error: toAgentErrorInfo(cause) },
        );
      }
      const status = statusOf(gate.tracker.terminalType);
      return status === 'failed' ? { runId, status, error: cause } : { runId, status };
    }
  } catch (error) {
    if (error instanceof ConsumerFailure) throw error.error;
    controller.abort();
    if (gate.tracker.hasStarted && !gate.tracker.hasEnded) {
      const message = AgentProviderError.isInstance(error) ? error.message : toAgentErrorInfo(error).message;
      try {
        closeOpen({ type: 'failed', error: { message, code: 'provider_error' } });
      } catch (closing) {
        if (closing instanceof ConsumerFailure) throw closing.error;
        throw closing;
      }
    }
    throw error;
  } finally {
    options.signal?.removeEventListener('abort', abortFromCaller);
    controller.abort();
  }
}
