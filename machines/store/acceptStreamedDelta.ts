import { AGENT_ENTITY_KIND_TABLE } from '../../protocol/agentEntityKinds';
import type { AgentEvent } from '../../protocol/eventSchemas';
import { checkStreamedDelta, deltaEntityField } from '../../protocol/parseAgentEvent';
import type { StoreCore } from './storeCore';

const { message, reasoning } = AGENT_ENTITY_KIND_TABLE;

/**
 * The path most events take: a valid delta (checked here, or by the runner that admitted
 * it) for a live entity that accepts deltas, in
 * order, in a running run of its session. It joins the entity's pending text; the machine
 * gets the coalesced delta before anything reads or touches that entity. Anything else
 * returns false and takes the general path, which says what is wrong.
 */
export function acceptStreamedDelta(core: StoreCore, input: unknown, admitted: boolean): boolean {
  // An event the runner admitted was checked there: only its kind is needed here.
  const field = admitted ? deltaEntityField((input as AgentEvent).type) : checkStreamedDelta(input);
  if (field === undefined) return false;
  const event = input as AgentEvent & { payload: Record<string, string> };
  const run = core.runs.get(event.runId);
  if (run?.status !== 'running' || event.sequence <= run.lastSequence || run.sessionId !== event.sessionId) {
    return false;
  }
  const kind = field === message.idField ? 'message' : field === reasoning.idField ? 'reasoning' : 'toolCall';
  const handle = run.entities[kind].get(event.payload[field] as string);
  if (handle?.ref === undefined) return false;
  if (handle.pendingEvent === undefined && !handle.ref.getSnapshot().hasTag('acceptsDelta')) return false;
  // Last, because it records the id: a repeat returns false and the general path absorbs it.
  if (!run.seen.tryAdd(event.eventId)) return false;
  core.deltas.push(handle, event, event.payload.delta as string);
  core.runs.rememberAdded(run, event.eventId, event.sequence);
  return true;
}
