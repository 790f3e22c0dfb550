import type { AgentEntityKind, AgentEntityState } from '../agentState';
import { entityActorId } from '../runMachine';
import type { EntityHandle, RunHandle } from './handles';
import type { StoreCore } from './storeCore';

/**
 * Gives the projection an entity's record from its actor. An actor its run has let go (it
 * finished, or a waiting run no longer waits on it) is let go here too: its record stays in
 * AgentState as plain data. A waiting run whose last pending entity settled has ended.
 */
export function recordEntity(core: StoreCore, handle: EntityHandle): void {
  const ref = handle.ref;
  if (ref === undefined) return;
  core.projection.setEntity(handle.kind, ref.getSnapshot().context.entity as AgentEntityState);
  const run = handle.run;
  if (run.ref?.getSnapshot().context.live[handle.actorId] === ref && ref.getSnapshot().status === 'active') return;
  handle.ref = undefined;
  run.live.delete(handle);
  if (run.status === 'waiting' && run.ref?.getSnapshot().status === 'done') stopRun(run);
}

/** Records every live entity of a run, after the run actor changed them (at its terminal). */
export function recordLiveEntities(core: StoreCore, run: RunHandle): void {
  for (const handle of [...run.live]) recordEntity(core, handle);
}

/** The run's actor reached its final state; the session has stopped it. */
export function stopRun(run: RunHandle): void {
  run.status = 'ended';
  run.ref = undefined;
}

export function addEntityHandle(run: RunHandle, kind: AgentEntityKind, id: string, key: string): EntityHandle {
  const handle: EntityHandle = {
    kind,
    id,
    key,
    actorId: entityActorId(kind, id),
    run,
    ref: undefined,
    pendingDelta: [],
    pendingEvent: undefined,
  };
  run.entities[kind].set(id, handle);
  return handle;
}
