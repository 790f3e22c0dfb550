import type { ActorRefFrom, AnyActorRef } from 'xstate';
import { AGENT_ENTITY_KINDS } from '../../protocol/agentEntityKinds';
import type { AgentEvent } from '../../protocol/eventSchemas';
import { checkPlainJson } from '../../protocol/plainJson';
import type { AgentEntityKind } from '../agentState';
import type { agentRunMachine } from '../runMachine';
import type { SeenEvents } from '../SeenEvents';

export type RunRef = ActorRefFrom<typeof agentRunMachine>;

export interface EntityHandle {
  kind: AgentEntityKind;
  id: string;
  key: string;
  actorId: string;
  run: RunHandle;
  /** The live actor; undefined once the entity is final (its record stays in AgentState). */
  ref: AnyActorRef | undefined;
  /** Streamed deltas not yet given to the machine, and the last event that carried one. */
  pendingDelta: string[];
  pendingEvent: AgentEvent | undefined;
}

/**
 * Where a run stands for the store: `unknown` (only ids of refused events are remembered;
 * its session is not known yet, `sessionId` is ''), `running`, `waiting` (completed, with
 * tool calls or approvals left to the application still live), `ended`.
 */
export type RunHandleStatus = 'unknown' | 'running' | 'waiting' | 'ended';

export interface RunHandle {
  runId: string;
  sessionId: string;
  status: RunHandleStatus;
  /** The run actor, while the run is running or waiting. */
  ref: RunRef | undefined;
  entities: Record<AgentEntityKind, Map<string, EntityHandle>>;
  live: Set<EntityHandle>;
  seen: SeenEvents;
  lastSequence: number;
  /** Whether `lastSequence` moved since the projection last saw it. */
  sequenceDirty: boolean;
  /** Events at or below this sequence are covered by the state the store was reset from. */
  restoredSequence: number;
  /**
   * The run this one continues (`continuesRunId`): while that run waits, this run's events
   * that name an entity it waits on (and this run never started) settle that entity.
   */
  continues?: RunHandle | undefined;
}

/**
 * What an issue keeps of an invalid event: a JSON copy when the value is plain JSON, else
 * its identity fields (so a redelivery is still recognised after a restore), never a value
 * that would make AgentState stop being plain JSON.
 */
export function describeInvalidEvent(value: unknown): unknown {
  if (checkPlainJson(value) === undefined) return JSON.parse(JSON.stringify(value) ?? 'null');
  if (typeof value !== 'object' || value === null) return null;
  const summary: Record<string, unknown> = {};
  try {
    for (const field of ['type', 'eventId', 'sessionId', 'runId', 'sequence', 'timestamp'] as const) {
      const fieldValue = (value as Record<string, unknown>)[field];
      if (typeof fieldValue === 'string' || (typeof fieldValue === 'number' && Number.isFinite(fieldValue))) {
        summary[field] = fieldValue;
      }
    }
  } catch {
    // A getter that throws: keep what was read.
  }
  return summary;
}

/** One map of entity handles per kind of the entity-kind table. */
export function emptyEntityMaps(): Record<AgentEntityKind, Map<string, EntityHandle>> {
  return Object.fromEntries(AGENT_ENTITY_KINDS.map((kind) => [kind, new Map()])) as Record<
    AgentEntityKind,
    Map<string, EntityHandle>
  >;
}

/** Whether a run handle may take events of this session: a run not started yet takes any. */
export function belongsTo(run: { status: RunHandleStatus; sessionId: string }, sessionId: string): boolean {
  return run.status === 'unknown' || run.sessionId === sessionId;
}

/**
 * Actor ids are prefixed: XState keeps children in plain objects, where an id such as
 * `__proto__` (an untrusted run id) would not be stored as a child.
 */
export function runActorId(runId: string): string {
  return `run:${runId}`;
}
