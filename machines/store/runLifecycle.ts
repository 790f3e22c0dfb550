import type { AgentEvent, AgentEventOf } from '../../protocol/eventSchemas';
import type { AgentProtocolIssue } from '../../protocol/protocolIssue';
import type { AgentRunState } from '../agentState';
import type { RunTerminalEvent } from '../runMachine';
import { recordLiveEntities, stopRun } from './entityActors';
import { type RunHandle, type RunRef, runActorId } from './handles';
import { APPLIED, type EventOutcome, refuse, type StoreCore } from './storeCore';

/** Sends an event to a run actor and collects the issues it raised for it. */
export function sendToRun(core: StoreCore, ref: RunRef, event: AgentEvent): AgentProtocolIssue[] {
  core.raised.length = 0;
  ref.send(event);
  return core.raised.length === 0 ? [] : core.raised.splice(0);
}

/** Listens to a run actor's issues, for `sendToRun`. */
export function hearIssues(core: StoreCore, ref: RunRef): RunRef {
  ref.on('issue', ({ issue }) => core.raised.push(issue));
  return ref;
}

/** Starts a run: its actor under the session (which makes its record), its session's `updatedAt`. */
export function startRun(core: StoreCore, event: AgentEventOf<'run.started'>, existing: RunHandle | undefined) {
  const actorId = runActorId(event.runId);
  if (existing !== undefined && existing.status !== 'unknown') {
    // The run's actor refuses a second start; an ended run's is gone, and refused the same way.
    const issue = existing.ref === undefined ? undefined : sendToRun(core, existing.ref, event)[0];
    return refuse(
      issue ?? {
        code: 'duplicate_entity',
        message: `Run "${event.runId}" has already started`,
        event,
        runId: event.runId,
      },
      event,
      true,
    );
  }
  const run = existing ?? core.runs.getOrCreate(event.runId);
  run.status = 'running';
  run.sessionId = event.sessionId;
  const input = {
    sessionId: event.sessionId,
    runId: event.runId,
    protocolMode: core.strict ? 'strict' : 'record',
  } as const;
  core.session.send({ type: 'store.spawn_runs', runs: [{ actorId, input }] });
  const ref = hearIssues(core, core.session.getSnapshot().children[actorId] as RunRef);
  run.ref = ref;
  ref.send(event);
  const record = ref.getSnapshot().context.run as AgentRunState;
  if (record.continuesRunId !== undefined) run.continues = core.runs.get(record.continuesRunId);
  touchSession(core, event, undefined);
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
 * Ends a run: its actor applies the end-of-run policy (entities it listed as pending stay
 * live while it waits for input, other active ones are cancelled as `run_terminated` and
 * reported). In strict mode the run actor refuses such a terminal instead.
 */
export function endRun(core: StoreCore, run: RunHandle, event: RunTerminalEvent): EventOutcome {
  const ref = run.ref as RunRef;
  for (const handle of run.live) core.deltas.flushEntity(handle);
  const before = ref.getSnapshot();
  const issues = sendToRun(core, ref, event);
  if (ref.getSnapshot() === before) return { kind: 'refused', issue: issues[0] as AgentProtocolIssue };
  core.projection.setRun(ref.getSnapshot().context.run as AgentRunState);
  recordLiveEntities(core, run);
  if (ref.getSnapshot().status === 'done') stopRun(run);
  else run.status = 'waiting';
  return { kind: 'applied', issues };
}
