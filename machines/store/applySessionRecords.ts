import type { AgentEventOf } from '../../protocol/eventSchemas';
import { getAgentEntityKey } from '../../protocol/getAgentEntityKey';
import type { AgentExtensionRecord } from '../agentState';
import { applyStatePatch } from '../applyStatePatch';
import { withDefined } from '../entityUpdates';
import { createIssue } from '../protocolIssues';
import type { RunHandle } from './handles';
import { APPLIED, type EventOutcome, refuse, type StoreCore } from './storeCore';

/** `state.snapshot` replaces the session's shared state; `state.delta` patches it, within the patch limits. */
export function applySharedState(core: StoreCore, event: AgentEventOf<'state.snapshot' | 'state.delta'>): EventOutcome {
  if (event.type === 'state.snapshot') {
    core.projection.setShared(event.sessionId, event.payload.snapshot);
    return APPLIED;
  }
  const result = applyStatePatch(core.projection.getShared(event.sessionId), event.payload.patch, core.patchLimits);
  if (!result.success) {
    return refuse(createIssue('invalid_patch', `state.delta was not applied: ${result.reason}`, event), event, true);
  }
  core.projection.setShared(event.sessionId, result.state);
  return APPLIED;
}

/** An extension event, kept in its run's list in arrival order. */
export function applyExtension(core: StoreCore, run: RunHandle, event: AgentEventOf<'extension.emitted'>) {
  const record = withDefined<AgentExtensionRecord>(
    { eventId: event.eventId, name: event.payload.name, timestamp: event.timestamp },
    { data: event.payload.data },
  );
  core.projection.addExtension(run.runId, record);
  return APPLIED;
}

/**
 * `activity.snapshot` sets an activity's content (`replace: false` leaves an existing one
 * alone, as AG-UI says); `activity.delta` patches it, within the patch limits.
 */
export function applyActivity(
  core: StoreCore,
  run: RunHandle,
  event: AgentEventOf<'activity.snapshot' | 'activity.delta'>,
): EventOutcome {
  const { activityId } = event.payload;
  const key = getAgentEntityKey(run.runId, activityId);
  const existing = core.projection.getActivity(key);
  if (event.type === 'activity.snapshot') {
    if (existing !== undefined && event.payload.replace === false) return APPLIED;
    core.projection.setActivity({
      id: activityId,
      key,
      runId: run.runId,
      sessionId: run.sessionId,
      activityType: event.payload.activityType,
      content: event.payload.content,
      createdAt: existing?.createdAt ?? event.timestamp,
      updatedAt: event.timestamp,
    });
    return APPLIED;
  }
  if (existing === undefined) {
    const message = `activity.delta names activity "${activityId}", which run "${run.runId}" never sent`;
    return refuse(createIssue('missing_entity', message, event, { entityId: activityId }), event, true);
  }
  const result = applyStatePatch(existing.content, event.payload.patch, core.patchLimits);
  if (!result.success) {
    const message = `activity.delta was not applied: ${result.reason}`;
    return refuse(createIssue('invalid_patch', message, event, { entityId: activityId }), event, true);
  }
  core.projection.setActivity({
    ...existing,
    activityType: event.payload.activityType ?? existing.activityType,
    content: result.state,
    updatedAt: event.timestamp,
  });
  return APPLIED;
}
