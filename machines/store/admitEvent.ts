import { AGENT_ENTITY_EVENT_ROUTES } from '../../protocol/agentEntityKinds';
import type { AgentEvent } from '../../protocol/eventSchemas';
import { checkAgentEvent } from '../../protocol/parseAgentEvent';
import { createIssue, hasIdentity } from '../protocolIssues';
import { belongsTo, describeInvalidEvent, type RunHandle } from './handles';
import { ABSORBED, type EventOutcome, refuse, type StoreCore } from './storeCore';

/** An event the store will route: valid, new, in order, of its run's session, to a run that takes it. */
export interface AdmittedEvent {
  kind: 'admitted';
  event: AgentEvent;
  /** Undefined only for the `run.started` or `session.started` of a run not heard of yet. */
  run: RunHandle | undefined;
}

/**
 * The checks every event passes before it is routed, as one decision: absorbed (a
 * redelivery, or an event a restored checkpoint already covers), refused (what is wrong,
 * and whether its id is remembered and its sequence counted), or admitted. An event
 * `runAgentProvider` has already validated (`admitted`) skips the schema check.
 */
export function admitEvent(core: StoreCore, input: unknown, admitted = false): EventOutcome | AdmittedEvent {
  const run = hasIdentity(input) ? core.runs.get(input.runId) : undefined;
  if (run?.seen.has((input as AgentEvent).eventId)) return ABSORBED;
  const failure = admitted ? undefined : checkAgentEvent(input);
  if (failure !== undefined) {
    const issue = createIssue('invalid_event', `Invalid event: ${failure.message}`, describeInvalidEvent(input));
    // Remembered by id (under a run not known yet, if need be), so a redelivery is absorbed.
    return hasIdentity(input) ? refuse(issue, input, false) : { kind: 'refused', issue };
  }
  const event = input as AgentEvent;
  if (run !== undefined && event.sequence <= run.lastSequence) {
    if (event.sequence <= run.restoredSequence) return ABSORBED;
    const message = `Sequence ${event.sequence} of run "${event.runId}" is not greater than ${run.lastSequence}`;
    return refuse(createIssue('invalid_sequence', message, event), event, false);
  }
  if (run !== undefined && !belongsTo(run, event.sessionId)) {
    // Remembered without moving the run's sequence: the event is not the run's.
    const message = `Run "${event.runId}" belongs to session "${run.sessionId}", not "${event.sessionId}"`;
    return refuse(createIssue('session_mismatch', message, event), event, false);
  }
  if (event.type === 'run.started' || event.type === 'session.started') return { kind: 'admitted', event, run };
  if (run === undefined || run.status === 'unknown') {
    const message = `${event.type} belongs to run "${event.runId}", which has not started`;
    return refuse(createIssue('missing_run', message, event), event, false);
  }
  if (run.status === 'running' || (run.status === 'waiting' && isPendingInput(run, event))) {
    return { kind: 'admitted', event, run };
  }
  const status = core.projection.getRun(run.runId)?.status;
  const waiting = run.status === 'waiting';
  const message = `${event.type} arrived after run "${event.runId}" ${status}${waiting ? ', waiting only for the tool calls and approvals it listed' : ''}`;
  return refuse(
    createIssue('terminal_run', message, event, { state: waiting ? 'waiting_for_input' : status }),
    event,
    true,
  );
}

/** Whether an event of a waiting run addresses one of the entities it waits on. */
function isPendingInput(run: RunHandle, event: AgentEvent): boolean {
  const route = AGENT_ENTITY_EVENT_ROUTES.get(event.type);
  if (route === undefined || route.role === 'start') return false;
  const handle = run.entities[route.kind].get((event.payload as Record<string, string>)[route.idField] as string);
  return handle !== undefined && run.live.has(handle);
}
