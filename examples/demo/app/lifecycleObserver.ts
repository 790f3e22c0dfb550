import type { InspectionEvent, StateValue } from 'xstate';
import { getAgentEntityKey } from '../../../protocol/getAgentEntityKey';
import { leafStatePath } from './machineStateTree';

/** What the inspector last saw of one actor. */
export interface LiveLifecycle {
  /** The machine's id: `toolCall`, `run`, `message`, ... */
  machineId: string;
  value: StateValue;
  /** The deepest active state path (`open.running.idle`). */
  statePath: string;
  /** Each state path the actor went through, oldest first, without repeats in a row. */
  visited: readonly string[];
}

/** Live lifecycles by `lifecycleKey(machineId, entityKey)`. */
export type LiveLifecycles = ReadonlyMap<string, LiveLifecycle>;

export interface LifecycleObserver {
  /** Give it to `useXChat({ inspect })`: it keeps each actor's state value, and nothing else. */
  inspect: (event: InspectionEvent) => void;
  subscribe: (listener: () => void) => () => void;
  getSnapshot: () => LiveLifecycles;
}

const VISITED_LIMIT = 24;

/** The map key of an entity's lifecycle: a run by its id, any other entity by its AgentState key. */
export function lifecycleKey(machineId: string, entityKey: string): string {
  return `${machineId}/${entityKey}`;
}

/**
 * Entity actors are named `<kind>:<entity id>` and are children of `run:<run id>`; entity ids
 * repeat across runs (the local runtime's `tool-3`), so the run takes part in the key.
 */
function keyOf(actorRef: { id?: string; _parent?: { id: string } }, machineId: string): string | undefined {
  if (actorRef.id === undefined) return undefined;
  const separator = actorRef.id.indexOf(':');
  if (separator < 0) return undefined;
  const id = actorRef.id.slice(separator + 1);
  if (machineId === 'run') return lifecycleKey(machineId, id);
  const parentId = actorRef._parent?.id;
  if (parentId === undefined || !parentId.startsWith('run:')) return undefined;
  return lifecycleKey(machineId, getAgentEntityKey(parentId.slice('run:'.length), id));
}

/** A state machine's snapshot carries its machine and value; other actors' snapshots are skipped. */
function machineSnapshotOf(snapshot: object): { machineId: string; value: StateValue } | undefined {
  if (!('machine' in snapshot) || !('value' in snapshot)) return undefined;
  const { machine, value } = snapshot as { machine?: { id?: unknown }; value: StateValue };
  return typeof machine?.id === 'string' ? { machineId: machine.id, value } : undefined;
}

/**
 * Keeps each actor's latest state value from the store's inspection events. The events are
 * read as they come (a comparison of two strings when nothing moved), but the listeners hear
 * at most once per animation frame, so the panel never slows streaming down. A stopped
 * actor's entry stays: a final state is still shown once the store lets its actor go.
 */
export function createLifecycleObserver(): LifecycleObserver {
  const current = new Map<string, LiveLifecycle>();
  let snapshot: LiveLifecycles = new Map();
  let scheduled = false;
  const listeners = new Set<() => void>();

  const publish = () => {
    scheduled = false;
    snapshot = new Map(current);
    for (const listener of listeners) listener();
  };

  return {
    inspect(event) {
      if (event.type !== '@xstate.snapshot') return;
      const machineSnapshot = machineSnapshotOf(event.snapshot);
      if (machineSnapshot === undefined) return;
      const { machineId, value } = machineSnapshot;
      // Inspection hands over the actor itself, which has an id and, when spawned, a parent.
      const key = keyOf(event.actorRef as { id?: string; _parent?: { id: string } }, machineId);
      if (key === undefined) return;
      const statePath = leafStatePath(value);
      const previous = current.get(key);
      if (previous?.statePath === statePath) return;
      const visited = [...(previous?.visited ?? []), statePath].slice(-VISITED_LIMIT);
      current.set(key, { machineId, value, statePath, visited });
      if (scheduled) return;
      scheduled = true;
      requestAnimationFrame(publish);
    },
    subscribe(listener) {
      listeners.add(listener);
      return () => void listeners.delete(listener);
    },
    getSnapshot: () => snapshot,
  };
}
