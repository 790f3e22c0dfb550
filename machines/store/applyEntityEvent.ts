import { AGENT_ENTITY_EVENT_ROUTES } from '../../protocol/agentEntityKinds';
import type { AgentEvent } from '../../protocol/eventSchemas';
import { getAgentEntityKey } from '../../protocol/getAgentEntityKey';
import type { AgentEntityKind, AgentEntityState } from '../agentState';
import { createEntityRecord, type EntityStartEvent } from '../entityEvents';
import { addEntityHandle, recordEntity, spawnEntities } from './entityActors';
import type { EntityHandle, RunHandle } from './handles';
import { APPLIED, createIssue, type EventOutcome, refuse, type StoreCore } from './storeCore';

/**
 * Routes an entity event to its entity by run-scoped id: a start event spawns the entity's
 * actor, any other goes to the live actor, whose machine accepts or refuses it. Pending
 * deltas of that entity reach its machine first.
 */
export function applyEntityEvent(core: StoreCore, run: RunHandle, event: AgentEvent): EventOutcome {
  const route = AGENT_ENTITY_EVENT_ROUTES.get(event.type);
  if (route === undefined) throw new TypeError(`${event.type} is not an entity event`);
  const entityId = (event.payload as Record<string, string>)[route.idField] as string;
  const own = run.entities[route.kind].get(entityId);
  if (route.role === 'start') {
    if (own !== undefined) {
      const message = `${route.kind} "${entityId}" already exists in run "${run.runId}"`;
      return refuse(createIssue('duplicate_entity', message, event, { entityId }), event, true);
    }
    const key = getAgentEntityKey(run.runId, entityId);
    const handle = addEntityHandle(run, route.kind, entityId, key);
    const entity = createEntityRecord(event as EntityStartEvent, key);
    core.projection.addEntity(route.kind, entity);
    spawnEntities(run, [{ kind: route.kind, actorId: handle.actorId, entity }]);
    if (event.type === 'tool.requested' && event.payload.retryOf !== undefined) {
      markRetried(core, run, event.payload.retryOf, entityId, event.timestamp);
    }
    return APPLIED;
  }
  const existing = own ?? awaitedByContinuedRun(run, route.kind, entityId);
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
  const before = ref.getSnapshot();
  ref.send(event);
  if (ref.getSnapshot() === before) {
    const state = (before.context.entity as AgentEntityState).status;
    const message = `${event.type} refused by ${route.kind} "${entityId}" in state ${state}`;
    return refuse(createIssue('invalid_transition', message, event, { entityId, state }), event, true);
  }
  recordEntity(core, existing);
  return APPLIED;
}

/** A retry arrived: the failed call it retries records it, and takes no other retry. */
function markRetried(core: StoreCore, run: RunHandle, retryOf: string, toolCallId: string, timestamp: number): void {
  const original = run.entities.toolCall.get(retryOf);
  const ref = original?.ref;
  if (original === undefined || ref === undefined) return;
  const before = ref.getSnapshot();
  ref.send({ type: 'store.retried', toolCallId, timestamp });
  if (ref.getSnapshot() !== before) recordEntity(core, original);
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
