import type { ActorRefFrom, AnyActorRef } from 'xstate';
import type { AgentEvent } from '../protocol/eventSchemas';
import type { AgentProtocolIssue } from '../protocol/protocolIssue';
import type { AgentEntityKind } from './agentState';
import type { runMachine } from './runMachine';
import type { SeenEvents } from './SeenEvents';

export type RunRef = ActorRefFrom<typeof runMachine>;

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

export interface RunHandle {
  runId: string;
  sessionId: string;
  started: boolean;
  ref: RunRef | undefined;
  entities: Record<AgentEntityKind, Map<string, EntityHandle>>;
  live: Set<EntityHandle>;
  seen: SeenEvents;
  lastSequence: number;
  /** Whether `lastSequence` moved since the projection last saw it. */
  sequenceDirty: boolean;
  /** Events at or below this sequence are covered by the state the store was reset from. */
  restoredSequence: number;
}

export const ABSORBED = Symbol('absorbed');
export type Outcome = AgentProtocolIssue | typeof ABSORBED | undefined;

export function jsonCopy(value: unknown): unknown {
  try {
    const text = JSON.stringify(value);
    return text === undefined ? null : JSON.parse(text);
  } catch {
    return null;
  }
}

export function hasIdentity(value: unknown): value is { runId: string; eventId: string } {
  if (typeof value !== 'object' || value === null) return false;
  const { runId, eventId } = value as Record<string, unknown>;
  return typeof runId === 'string' && runId !== '' && typeof eventId === 'string' && eventId !== '';
}

/** A state value as a dotted path: `waiting.submitting`. */
export function stateName(snapshot: { value: unknown }): string {
  let value = snapshot.value;
  const path: string[] = [];
  while (typeof value === 'object' && value !== null) {
    const [key, child] = Object.entries(value)[0] ?? [];
    if (key === undefined) break;
    path.push(key);
    value = child;
  }
  if (typeof value === 'string') path.push(value);
  return path.join('.');
}

export function emptyEntityMaps(): Record<AgentEntityKind, Map<string, EntityHandle>> {
  return {
    message: new Map(),
    reasoning: new Map(),
    toolCall: new Map(),
    approval: new Map(),
    task: new Map(),
    artifact: new Map(),
  };
}

/** Whether a run handle may take events of this session: an unknown session ('') takes any. */
export function belongsTo(run: { sessionId: string }, sessionId: string): boolean {
  return run.sessionId === '' || run.sessionId === sessionId;
}

/**
 * Actor ids are prefixed: XState keeps children in plain objects, where an id such as
 * `__proto__` (an untrusted run id) would not be stored as a child.
 */
export function runActorId(runId: string): string {
  return `run:${runId}`;
}
