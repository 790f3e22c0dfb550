import { assertEvent, type EventObject } from 'xstate';
import type { AgentErrorInfo } from '../protocol/eventSchemas';
import type { AgentEntityBase } from './agentState';
import { cancelEntity, failEntity, RUN_TERMINATED_REASON, withDefined, withMeta } from './entityUpdates';

type Entity = AgentEntityBase & { status: string };
type Assigner<Record extends Entity> = (args: { context: { entity: Record }; event: EventObject }) => Record;

/** The `status -> state` transitions of a machine's `restoring` state, for each final status a record may hold. */
export function restoreFinalStates(statuses: readonly string[]) {
  return statuses.map((status) => ({ guard: { type: 'hasStatus' as const, params: { status } }, target: status }));
}

/** The final states every entity machine ends in, one per final status. */
export const FINAL_STATES = {
  completed: { type: 'final' },
  failed: { type: 'final' },
  cancelled: { type: 'final' },
} as const;

/** The assigner of a `<kind>.failed` event: the entity fails with the event's error, and takes its meta. */
export function failedBy<Record extends Entity>(type: `${string}.failed`): Assigner<Record> {
  return ({ context, event }) => {
    assertEvent(event, type);
    const failure = event as EventObject & {
      payload: { error: AgentErrorInfo };
      timestamp: number;
      meta?: { [key: string]: unknown };
    };
    return withMeta(failEntity(context.entity, failure.payload.error, failure.timestamp), failure.meta);
  };
}

/** The assigner of a `<kind>.cancelled` event: the entity is cancelled with the event's reason. */
export function cancelledBy<Record extends Entity>(type: `${string}.cancelled`): Assigner<Record> {
  return ({ context, event }) => {
    assertEvent(event, type);
    const cancellation = event as EventObject & { payload: { reason?: string }; timestamp: number };
    return cancelEntity(context.entity, cancellation.payload.reason, cancellation.timestamp);
  };
}

/** The assigner of a `<kind>.completed` event that carries a `result` (tool calls, tasks), with its meta. */
export function completedWithResult<Record extends Entity & { result?: unknown }>(
  type: `${string}.completed`,
): Assigner<Record> {
  return ({ context, event }) => {
    assertEvent(event, type);
    const completion = event as EventObject & {
      payload: { result?: unknown };
      timestamp: number;
      meta?: { [key: string]: unknown };
    };
    const completed = { status: 'completed', result: completion.payload.result, updatedAt: completion.timestamp };
    return withMeta(withDefined(context.entity, completed as Partial<Record>), completion.meta);
  };
}

/** The assigner of `store.terminate`: the store closes an entity still active when its run ends. */
export function terminated<Record extends Entity>(): Assigner<Record> {
  return ({ context, event }) => {
    assertEvent(event, 'store.terminate');
    return cancelEntity(
      context.entity,
      RUN_TERMINATED_REASON,
      (event as EventObject & { timestamp: number }).timestamp,
    );
  };
}

/** Whether a record's status is the one a `hasStatus` guard asks for. */
export function hasStatus({ context }: { context: { entity: Entity } }, params: { status: string }): boolean {
  return context.entity.status === params.status;
}
