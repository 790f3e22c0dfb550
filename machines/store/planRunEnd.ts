import type { AnyActorRef } from 'xstate';
import type { AgentEntityKind } from '../../protocol/agentEntityKinds';
import type { AgentEventOf } from '../../protocol/eventSchemas';
import type { AgentProtocolIssue } from '../../protocol/protocolIssue';
import type { AgentEntityState } from '../agentState';
import type { EntityHandle, RunHandle } from './handles';
import { createIssue } from './storeCore';

export type RunTerminalEvent = AgentEventOf<'run.completed' | 'run.failed' | 'run.cancelled'>;

/** What ending a run does to its live entities, and what it reports. */
export interface RunEndPlan {
  /** Entities the run ends waiting on: they stay live. */
  settle: EntityHandle[];
  /** Entities still active that the terminal does not list: closed as `run_terminated`. */
  terminate: EntityHandle[];
  /** Listed ids that cannot be left pending, and every terminated entity the runtime could have closed itself. */
  problems: AgentProtocolIssue[];
}

/**
 * Whether the runtime had an event to close this entity before its terminal. An approval
 * can only be resolved: no event cancels one, so a run that fails or is cancelled (a Stop
 * included) while an approval waits ends it as the store does, and that is no issue. A run
 * that completes could have resolved it or listed it as pending, so there it is one.
 */
function couldBeClosedBefore(kind: AgentEntityKind, event: RunTerminalEvent): boolean {
  return kind !== 'approval' || event.type === 'run.completed';
}

/**
 * The end-of-run policy, decided before anything changes: a `run.completed` may list tool
 * calls and approvals it leaves to the application (`pendingToolCallIds`,
 * `pendingApprovalIds`); those that can wait (their machine says `settleable`, or a tool
 * still streaming its arguments) are settled, any other listed id is a problem, and every
 * other active entity is terminated and reported (but an approval at a failed or cancelled
 * run: no event could have closed it). Reads the entity actors, changes nothing.
 *
 * @param statusOf the recorded status of an entity whose actor is gone.
 */
export function planRunEnd(
  run: RunHandle,
  event: RunTerminalEvent,
  statusOf: (kind: AgentEntityKind, key: string) => string | undefined,
): RunEndPlan {
  const pending: Partial<Record<AgentEntityKind, ReadonlySet<string>>> =
    event.type === 'run.completed'
      ? { toolCall: new Set(event.payload.pendingToolCallIds), approval: new Set(event.payload.pendingApprovalIds) }
      : {};
  const problems: AgentProtocolIssue[] = [];
  for (const kind of ['toolCall', 'approval'] as const) {
    for (const entityId of pending[kind] ?? []) {
      const handle = run.entities[kind].get(entityId);
      const snapshot = handle?.ref?.getSnapshot();
      if (snapshot?.hasTag('settleable') || snapshot?.hasTag('acceptsDelta')) continue;
      if (handle === undefined) {
        const message = `Run "${run.runId}" lists unknown ${kind} "${entityId}" as pending`;
        problems.push(createIssue('missing_entity', message, event, { entityId }));
        continue;
      }
      const state = statusOf(kind, handle.key);
      const message = `${kind} "${entityId}" is ${state} and cannot be left pending`;
      problems.push(createIssue('invalid_transition', message, event, { entityId, state }));
    }
  }
  const settle: EntityHandle[] = [];
  const terminate: EntityHandle[] = [];
  for (const handle of run.live) {
    const snapshot = (handle.ref as AnyActorRef).getSnapshot();
    if (!snapshot.hasTag('active')) continue;
    if (pending[handle.kind]?.has(handle.id)) {
      settle.push(handle);
      continue;
    }
    terminate.push(handle);
    if (!couldBeClosedBefore(handle.kind, event)) continue;
    const state = (snapshot.context.entity as AgentEntityState).status;
    const message = `${event.type} arrived while ${handle.kind} "${handle.id}" was ${state}; it was cancelled`;
    problems.push(createIssue('active_entities_at_terminal', message, event, { entityId: handle.id, state }));
  }
  return { settle, terminate, problems };
}
