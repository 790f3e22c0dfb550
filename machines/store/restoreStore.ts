import { createActor, type InspectionEvent } from 'xstate';
import { AGENT_ENTITY_CONTAINERS, type AgentEntityState, type AgentRunState, type AgentState } from '../agentState';
import { AgentStateProjection } from '../agentStateProjection';
import { isFinalEntityStatus } from '../entityEvents';
import { isPendingEntity, isWaitingForInput } from '../pendingInput';
import type { EntitySpawn } from '../runMachine';
import { sessionMachine } from '../sessionMachine';
import { addEntityHandle, spawnEntities } from './entityActors';
import { hasIdentity, type RunHandle, type RunRef, runActorId } from './handles';
import { type RegistryRestorePoint, RunRegistry } from './RunRegistry';
import type { SessionRef } from './storeCore';

export interface RestoredStore {
  projection: AgentStateProjection;
  session: SessionRef;
  runs: RunRegistry;
}

/**
 * Rebuilds the actors from an AgentState (already validated): a run actor for each running
 * run and each run waiting for input, spawned in one transition, and an entity actor for
 * each entity still open, spawned in bulk per run. Sequences become restore points (events
 * at or below them are treated as applied), and the ids of refused events come back from
 * their issues, so a redelivery is absorbed as in a full replay.
 *
 * @param previous what a rolled-back strict batch takes back from the registry before it.
 */
export function restoreStore(
  state: AgentState,
  inspect: ((event: InspectionEvent) => void) | undefined,
  previous?: RegistryRestorePoint,
): RestoredStore {
  const session: SessionRef = createActor(sessionMachine, inspect ? { inspect } : {});
  session.start();
  const runs = new RunRegistry();
  const live: Array<{ actorId: string; run: AgentRunState }> = [];
  for (const run of Object.values(state.runs)) {
    const handle = runs.getOrCreate(run.id);
    handle.sessionId = run.sessionId;
    handle.status = run.status === 'running' ? 'running' : isWaitingForInput(state, run) ? 'waiting' : 'ended';
    if (handle.status !== 'ended') live.push({ actorId: runActorId(run.id), run });
  }
  for (const run of Object.values(state.runs)) {
    if (run.continuesRunId !== undefined) (runs.get(run.id) as RunHandle).continues = runs.get(run.continuesRunId);
  }
  for (const [runId, sequence] of Object.entries(state.lastSequenceByRun)) {
    const handle = runs.getOrCreate(runId);
    handle.lastSequence = sequence;
    handle.restoredSequence = previous?.restoredSequences.get(runId) ?? sequence;
  }
  for (const handle of runs.values()) handle.seen = previous?.seenByRun.get(handle.runId) ?? handle.seen;
  for (const { event } of state.issues) {
    if (hasIdentity(event)) runs.getOrCreate(event.runId).seen.add(event.eventId);
  }
  if (live.length > 0) session.send({ type: 'store.spawn_runs', runs: live });
  const children = session.getSnapshot().children as Record<string, RunRef>;
  for (const run of runs.values()) if (run.status !== 'ended') run.ref = children[runActorId(run.runId)];
  const spawnsByRun = new Map<RunHandle, EntitySpawn[]>();
  // In arrival order, so live entities are closed in the order a full replay closes them.
  for (const { kind, key } of state.order) {
    const entity = (state[AGENT_ENTITY_CONTAINERS[kind]] as Record<string, AgentEntityState>)[key] as AgentEntityState;
    const run = runs.get(entity.runId) as RunHandle;
    const handle = addEntityHandle(run, kind, entity.id, entity.key);
    if (run.ref === undefined || isFinalEntityStatus(kind, entity)) continue;
    if (run.status === 'waiting' && !isPendingEntity(state.runs[run.runId] as AgentRunState, kind, entity)) continue;
    let spawns = spawnsByRun.get(run);
    if (spawns === undefined) {
      spawns = [];
      spawnsByRun.set(run, spawns);
    }
    spawns.push({ kind, actorId: handle.actorId, entity } as EntitySpawn);
  }
  for (const [run, spawns] of spawnsByRun) spawnEntities(run, spawns);
  return { projection: new AgentStateProjection(state), session, runs };
}
