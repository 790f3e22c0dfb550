import { AGENT_ENTITY_EVENT_ROUTES } from '../../protocol/agentEntityKinds';
import type { AgentEvent } from '../../protocol/eventSchemas';
import { getAgentEntityKey } from '../../protocol/getAgentEntityKey';
import type { AgentEntityKind, AgentEntityState } from '../agentState';
import { createIssue } from '../protocolIssues';
import { addEntityHandle, recordEntity } from './entityActors';
import type { EntityHandle, RunHandle, RunRef } from './handles';
import { sendToRun } from './runLifecycle';
import { APPLIED, type EventOutcome, refuse, type StoreCore } from './storeCore';

/**
 * Routes an entity event by run-scoped id. A start event goes to the run actor, which spawns
 * the entity's actor (or refuses a second start). Any other event of a running run goes
 * straight to the live entity actor (the run's own forwarding, without its cost per event),
 * whose machine accepts or refuses it; pending deltas of that entity reach it first. An event
 * for an entity a waiting run waits on goes through that run, which lets the entity go when
 * it no longer waits.
 */
export function applyEntityEvent(core: StoreCore, run: RunHandle, event: AgentEvent): EventOutcome {
  const route = AGENT_ENTITY_EVENT_ROUTES.get(event.type);
  if (route === undefined) throw new TypeError(`${event.type} is not an entity event`);
  const entityId = (event.payload as Record<string, string>)[route.idField] as string;
  if (route.role === 'start') return startEntity(core, run, route.kind, entityId, event);
  const existing = run.entities[route.kind].get(entityId) ?? awaitedByContinuedRun(run, route.kind, entityId);
  if (existing === undefined) {
    const message = `${event.type} names ${route.kind} "${entityId}", which run "${run.runId}" never started`;
    return refuse(createIssue('missing_entity', message, event, { entityId }), event, true);
  }
  const ref = existing.ref;
  if (ref === undefined) {
    const state = core.projection.getEntity(route.kind, existing.key)?.status;
    const message = `${event.type} refused: ${route.kind} "${entityId}" is ${state} and accepts no more events`;
    return refuse(createIssue('invalid_transition', message, event, { entityId, state }), event, true);
  }
  core.deltas.flushEntity(existing);
  if (existing.run.status === 'waiting') {
    const issue = sendToRun(core, existing.run.ref as RunRef, event)[0];
    if (issue !== undefined) return refuse(issue, event, true);
  } else {
    const before = ref.getSnapshot();
    ref.send(event);
    if (ref.getSnapshot() === before) {
      const state = (before.context.entity as AgentEntityState).status;
      const message = `${event.type} refused by ${route.kind} "${entityId}" in state ${state}`;
      return refuse(createIssue('invalid_transition', message, event, { entityId, state }), event, true);
    }
  }
  recordEntity(core, existing);
  return APPLIED;
}

/** The run actor spawns the entity (or refuses a second start); the store keeps a handle on it. */
function startEntity(core: StoreCore, run: RunHandle, kind: AgentEntityKind, entityId: string, event: AgentEvent) {
  const runRef = run.ref as RunRef;
  const issue = sendToRun(core, runRef, event)[0];
  if (issue !== undefined) return refuse(issue, event, true);
  const handle = addEntityHandle(run, kind, entityId, getAgentEntityKey(run.runId, entityId));
  handle.ref = runRef.getSnapshot().context.live[handle.actorId];
  run.live.add(handle);
  core.projection.addEntity(kind, handle.ref?.getSnapshot().context.entity as AgentEntityState);
  if (event.type === 'tool.requested' && event.payload.retryOf !== undefined) {
    // The run marked the call this one retries.
    const original = run.entities.toolCall.get(event.payload.retryOf);
    if (original !== undefined) recordEntity(core, original);
  }
  return APPLIED;
}

/**
 * An entity the run this one continues still waits on: a resumed run's answer to an
 * approval, or the result of a tool call it left pending, settles that entity in its own
 * run (whose record it stays).
 */
function awaitedByContinuedRun(run: RunHandle, kind: AgentEntityKind, entityId: string): EntityHandle | undefined {
  const continued = run.continues;
  if (continued?.status !== 'waiting') return undefined;
  const handle = continued.entities[kind].get(entityId);
  return handle !== undefined && continued.live.has(handle) ? handle : undefined;
}
