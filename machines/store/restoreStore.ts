import type { AgentProtocolIssue } from '../../protocol/protocolIssue';
import { AGENT_ENTITY_CONTAINERS, type AgentEntityState, type AgentRunState, type AgentState } from '../agentState';
import { AgentStateProjection } from '../agentStateProjection';
import { isFinalEntityStatus } from '../entityEvents';
import { isPendingEntity, isWaitingForInput } from '../pendingInput';
import { hasIdentity } from '../protocolIssues';
import type { EntitySpawn } from '../runMachine';
import { addEntityHandle } from './entityActors';
import { type RunHandle, type RunRef, runActorId } from './handles';
import { type RegistryRestorePoint, RunRegistry } from './RunRegistry';
import type { SessionRef } from './storeCore';

export interface RestoredStore {
  projection: AgentStateProjection;
  runs: RunRegistry;
}

export interface RestoreOptions {
  /** Where the run actors' issues are collected (`sendToRun`). */
  raised?: AgentProtocolIssue[];
  strict?: boolean;
  /** What a rolled-back strict batch takes back from the registry before it. */
  previous?: RegistryRestorePoint | undefined;
}

/**
 * Rebuilds the actors from an AgentState (already validated) under the session actor, whose
 * run actors it stops first: a run actor for each running run and each run waiting for
 * input, spawned in one transition with an entity actor for each of its entities still open. Sequences become restore points (events
 * at or below them are treated as applied), and the ids of refused events come back from
 * their issues, so a redelivery is absorbed as in a full replay.
 *
 */
export function restoreStore(session: SessionRef, state: AgentState, options: RestoreOptions = {}): RestoredStore {
  const { raised = [], strict = false, previous } = options;
  session.send({ type: 'store.reset' });
  const runs = new RunRegistry();
  for (const run of Object.values(state.runs)) {
    const handle = runs.getOrCreate(run.id);
    handle.sessionId = run.sessionId;
    handle.status = run.status === 'running' ? 'running' : isWaitingForInput(state, run) ? 'waiting' : 'ended';
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
  const inputs = new Map<RunHandle, { live: EntitySpawn[]; finished: Record<string, AgentEntityState> }>();
  for (const run of runs.values()) {
    if (run.status === 'running' || run.status === 'waiting') inputs.set(run, { live: [], finished: {} });
  }
  // In arrival order, so live entities are closed in the order a full replay closes them.
  for (const { kind, key } of state.order) {
    const entity = (state[AGENT_ENTITY_CONTAINERS[kind]] as Record<string, AgentEntityState>)[key] as AgentEntityState;
    const run = runs.get(entity.runId) as RunHandle;
    const handle = addEntityHandle(run, kind, entity.id, entity.key);
    const input = inputs.get(run);
    if (input === undefined) continue;
    const open =
      !isFinalEntityStatus(kind, entity) &&
      (run.status !== 'waiting' || isPendingEntity(state.runs[run.runId] as AgentRunState, kind, entity));
    if (open) {
      input.live.push({ kind, actorId: handle.actorId, entity } as EntitySpawn);
      run.live.add(handle);
    } else input.finished[handle.actorId] = entity;
  }
  if (inputs.size > 0) {
    const protocolMode = strict ? 'strict' : 'record';
    session.send({
      type: 'store.spawn_runs',
      runs: [...inputs].map(([run, { live, finished }]) => ({
        actorId: runActorId(run.runId),
        input: {
          sessionId: run.sessionId,
          runId: run.runId,
          run: state.runs[run.runId],
          protocolMode,
          entities: live,
          finished,
        },
      })),
    });
  }
  const children = session.getSnapshot().children as Record<string, RunRef>;
  for (const run of inputs.keys()) {
    const ref = children[runActorId(run.runId)] as RunRef;
    ref.on('issue', ({ issue }) => raised.push(issue));
    run.ref = ref;
    const live = ref.getSnapshot().context.live;
    for (const handle of run.live) handle.ref = live[handle.actorId];
  }
  return { projection: new AgentStateProjection(state), runs };
}
