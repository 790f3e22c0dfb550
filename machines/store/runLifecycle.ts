import type { AgentEvent, AgentEventOf } from '../../protocol/eventSchemas';
import type { AgentEntityState, AgentRunState } from '../agentState';
import { recordEntity, stopRun } from './entityActors';
import { type RunHandle, type RunRef, runActorId } from './handles';
import { planRunEnd, type RunTerminalEvent } from './planRunEnd';
import { APPLIED, createIssue, type EventOutcome, refuse, type StoreCore } from './storeCore';

/** Starts a run: its record, its actor under the session, its session's `updatedAt`. A second start is refused. */
export function startRun(core: StoreCore, event: AgentEventOf<'run.started'>, existing: RunHandle | undefined) {
  if (existing !== undefined && existing.status !== 'unknown') {
    return refuse(createIssue('duplicate_entity', `Run "${event.runId}" has already started`, event), event, true);
  }
  const run = existing ?? core.runs.getOrCreate(event.runId);
  run.status = 'running';
  run.sessionId = event.sessionId;
  const time = event.timestamp;
  const record: AgentRunState = {
    id: event.runId,
    sessionId: event.sessionId,
    status: 'running',
    startedAt: time,
    updatedAt: time,
  };
  if (event.payload.input !== undefined) record.input = event.payload.input;
  if (event.payload.title !== undefined) record.title = event.payload.title;
  if (event.payload.continuesRunId !== undefined) {
    record.continuesRunId = event.payload.continuesRunId;
    run.continues = core.runs.get(event.payload.continuesRunId);
  }
  if (event.meta !== undefined) record.meta = event.meta;
  touchSession(core, event, undefined);
  core.session.send({ type: 'store.spawn_runs', runs: [{ actorId: runActorId(event.runId), run: record }] });
  run.ref = core.session.getSnapshot().children[runActorId(event.runId)] as RunRef | undefined;
  core.projection.setRun(record);
  return APPLIED;
}

/** `session.started` names no run's session; it updates the session's record. */
export function startSession(core: StoreCore, event: AgentEventOf<'session.started'>): EventOutcome {
  core.runs.getOrCreate(event.runId);
  touchSession(core, event, event.payload);
  return APPLIED;
}

function touchSession(
  core: StoreCore,
  event: AgentEvent,
  fields: { title?: string | undefined; data?: unknown } | undefined,
) {
  const current = core.projection.getSession(event.sessionId);
  const time = event.timestamp;
  const next = current ? { ...current, updatedAt: time } : { id: event.sessionId, createdAt: time, updatedAt: time };
  if (fields?.title !== undefined) next.title = fields.title;
  if (fields?.data !== undefined) next.data = fields.data;
  core.projection.setSession(next);
}

/**
 * Ends a run as `planRunEnd` decides: listed entities stay live under a run that waits for
 * input, other active ones are cancelled (`run_terminated`) and reported, and the run actor
 * is stopped unless it waits. In strict mode the first problem refuses the event instead.
 */
export function endRun(core: StoreCore, run: RunHandle, event: RunTerminalEvent): EventOutcome {
  const runRef = run.ref as RunRef;
  for (const handle of run.live) core.deltas.flushEntity(handle);
  const plan = planRunEnd(run, event, (kind, key) => core.projection.getEntity(kind, key)?.status);
  if (core.strict && plan.problems[0] !== undefined) return { kind: 'refused', issue: plan.problems[0] };
  for (const handle of plan.settle) {
    if (handle.ref?.getSnapshot().hasTag('acceptsDelta')) {
      handle.ref.send({ type: 'store.settle_pending', timestamp: event.timestamp });
    }
  }
  for (const handle of plan.terminate) handle.ref?.send({ type: 'store.terminate', timestamp: event.timestamp });
  runRef.send(event);
  core.projection.setRun(runRef.getSnapshot().context.run);
  // Everything but the entities the run waits on is stopped; those stay live, so the
  // application's tool results and decisions can still settle them.
  const waiting = runRef.getSnapshot().hasTag('waiting');
  for (const handle of [...run.live]) {
    if (waiting && plan.settle.includes(handle) && handle.ref?.getSnapshot().status === 'active') {
      recordEntity(core, handle);
      continue;
    }
    const ref = handle.ref;
    if (ref !== undefined) core.projection.setEntity(handle.kind, ref.getSnapshot().context.entity as AgentEntityState);
    handle.ref = undefined;
    run.live.delete(handle);
    if (waiting) runRef.send({ type: 'store.stop_entity', actorId: handle.actorId });
  }
  if (waiting && run.live.size > 0) run.status = 'waiting';
  else {
    if (waiting) runRef.send({ type: 'store.input_settled' });
    stopRun(core, run);
  }
  return { kind: 'applied', issues: plan.problems };
}
