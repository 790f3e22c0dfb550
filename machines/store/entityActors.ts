import type { AnyActorRef } from 'xstate';
import type { AgentEntityKind, AgentEntityState } from '../agentState';
import type { EntitySpawn } from '../runMachine';
import { type EntityHandle, type RunHandle, runActorId } from './handles';
import type { StoreCore } from './storeCore';

/** Gives the projection an entity's record from its actor; a final entity's actor is let go. */
export function recordEntity(core: StoreCore, handle: EntityHandle): void {
  const ref = handle.ref;
  if (ref === undefined) return;
  const snapshot = ref.getSnapshot();
  core.projection.setEntity(handle.kind, snapshot.context.entity as AgentEntityState);
  // A waiting run keeps only what it waits on: an entity that is no longer pending (a
  // tool that failed, retryable or not) is done with, as a restore would find it.
  if (snapshot.status === 'done' || (handle.run.status === 'waiting' && !snapshot.hasTag('settleable'))) {
    finishEntity(core, handle);
  }
}

/** A final entity's actor is stopped; its record stays in AgentState as plain data. */
export function finishEntity(core: StoreCore, handle: EntityHandle): void {
  const run = handle.run;
  handle.ref = undefined;
  run.live.delete(handle);
  run.ref?.send({ type: 'store.stop_entity', actorId: handle.actorId });
  // A waiting run ends when the last entity it waited on has settled.
  if (run.status === 'waiting' && run.live.size === 0) {
    run.ref?.send({ type: 'store.input_settled' });
    stopRun(core, run);
  }
}

export function stopRun(core: StoreCore, run: RunHandle): void {
  run.status = 'ended';
  run.ref = undefined;
  core.session.send({ type: 'store.stop_run', actorId: runActorId(run.runId) });
}

export function addEntityHandle(run: RunHandle, kind: AgentEntityKind, id: string, key: string): EntityHandle {
  const handle: EntityHandle = {
    kind,
    id,
    key,
    actorId: `${kind}:${id}`,
    run,
    ref: undefined,
    pendingDelta: [],
    pendingEvent: undefined,
  };
  run.entities[kind].set(id, handle);
  return handle;
}

/** Spawns entity actors in one run transition, and keeps a reference to each. */
export function spawnEntities(run: RunHandle, spawns: readonly EntitySpawn[]): void {
  run.ref?.send({ type: 'store.spawn_entities', entities: spawns });
  const children = run.ref?.getSnapshot().children as Record<string, AnyActorRef> | undefined;
  for (const spawn of spawns) {
    const handle = run.entities[spawn.kind].get(spawn.entity.id);
    if (handle === undefined) continue;
    handle.ref = children?.[spawn.actorId];
    run.live.add(handle);
  }
}
