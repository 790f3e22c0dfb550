import { createAgentEventFactory } from '../../protocol/createAgentEventFactory';

/** An event factory with readable ids (`r1-e3`) and a clock that ticks once per event. */
export function runEvents(runId: string, sessionId = 's1', initialSequence = 0) {
  let clock = 1_000;
  return createAgentEventFactory({
    sessionId,
    runId,
    initialSequence,
    now: () => clock++,
    createEventId: (sequence) => `${runId}-e${sequence}`,
  });
}
