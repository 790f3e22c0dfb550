import { type AgentEventExtra, createAgentEventFactory } from '../protocol/createAgentEventFactory';
import type { AgentEventOf, AgentEventPayloadMap, AgentEventType } from '../protocol/eventSchemas';
import type { AgentProviderContextOptions } from './AgentProvider';
import { type AgentRunClosing, AgentRunTracker } from './AgentRunTracker';

/** An event factory for one run that also tracks what is open, for providers to build on. */
export interface AgentRunEmitter {
  readonly sessionId: string;
  readonly runId: string;
  readonly tracker: AgentRunTracker;
  emit<Type extends AgentEventType>(
    type: Type,
    payload: AgentEventPayloadMap[Type],
    extra?: AgentEventExtra,
  ): AgentEventOf<Type>;
  /** Closes every open entity and ends the run, unless it has ended. */
  close(closing: AgentRunClosing): AgentEventOf<AgentEventType>[];
  getSequence(): number;
}

/**
 * The usual start of a provider's context: events with the run's ids and sequence, and
 * a tracker so `flush` and `transformError` can close what is still open (in a resumed run,
 * also what the history says it left open). In a run that continues another, `run.started`
 * names it (`continuesRunId`).
 *
 * @example
 * createContext: (options) => ({ events: createAgentRunEmitter(options) }),
 * transformError: (error, { events }) =>
 *   events.close(isAbortError(error) ? { type: 'cancelled', reason: 'aborted' } : { type: 'failed', error: toErrorInfo(error) }),
 */
export function createAgentRunEmitter(
  options: Pick<
    AgentProviderContextOptions,
    'sessionId' | 'runId' | 'initialSequence' | 'now' | 'continuation' | 'history'
  >,
): AgentRunEmitter {
  const continuesRunId = options.continuation?.runId;
  const factory = createAgentEventFactory({
    sessionId: options.sessionId,
    runId: options.runId,
    initialSequence: options.initialSequence,
    now: options.now,
  });
  const tracker = new AgentRunTracker();
  // A run resumed from a cursor (a sequence to continue after): what it left open is in the
  // history, so `close` ends those entities and the run once.
  if (options.initialSequence > 0 && options.history !== undefined) tracker.resume(options.runId, options.history);
  return {
    sessionId: options.sessionId,
    runId: options.runId,
    tracker,
    emit(type, payload, extra) {
      // A continuing run names the run it continues, whichever provider starts it.
      const event =
        type === 'run.started' && continuesRunId !== undefined
          ? factory.create(type, { ...payload, continuesRunId } as AgentEventPayloadMap[typeof type], extra)
          : factory.create(type, payload, extra);
      tracker.observe(event);
      return event;
    },
    close: (closing) => tracker.close(factory, closing) as AgentEventOf<AgentEventType>[],
    getSequence: factory.getSequence,
  };
}
