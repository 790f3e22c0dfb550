import type { InspectionEvent, StateValue } from 'xstate';
import { getAgentEntityKey } from '../../../protocol/getAgentEntityKey';
import { commandLaneMachine } from '../../../runtime/commandLaneMachine';
import { connectionMachine } from '../../../runtime/connectionMachine';
import { leafStatePath } from './machineStateTree';

/** An actor's snapshot status: `done` in a final state, `stopped` once its parent let it go. */
export type LiveActorStatus = 'active' | 'done' | 'error' | 'stopped';

/** What the inspector last saw of one actor. */
export interface LiveLifecycle {
  /** The machine's id: `toolCall`, `run`, `connection`, `commandLane`, ... */
  machineId: string;
  /** A run's or a lane's run id, another entity's AgentState key, `connection` for the connection. */
  entityKey: string;
  value: StateValue;
  /** The deepest active state path (`open.running.idle`), comma-separated for parallel regions. */
  statePath: string;
  status: LiveActorStatus;
  /** Each state path the actor went through, oldest first, without repeats in a row. */
  visited: readonly string[];
}

/** Live lifecycles by `lifecycleKey(machineId, entityKey)`, in the order the inspector first saw them. */
export type LiveLifecycles = ReadonlyMap<string, LiveLifecycle>;

export interface LifecycleObserver {
  /** Give it to `useXChat({ inspect })`: it keeps each actor's state value, and nothing else. */
  inspect: (event: InspectionEvent) => void;
  subscribe: (listener: () => void) => () => void;
  getSnapshot: () => LiveLifecycles;
}

const VISITED_LIMIT = 24;
const CONNECTION = connectionMachine.id;
const COMMAND_LANE = commandLaneMachine.id;
const LANE_PREFIX = 'lane:';
const RUN_PREFIX = 'run:';

/** The map key of an entity's lifecycle: a run by its id, any other entity by its AgentState key. */
export function lifecycleKey(machineId: string, entityKey: string): string {
  return `${machineId}/${entityKey}`;
}

/**
 * The entity an actor stands for. The runtime's children are `connection` and
 * `lane:<run id>`; the store's entity actors are named `<kind>:<entity id>` and are children
 * of `run:<run id>`. Entity ids repeat across runs (the local runtime's `tool-3`), so the run
 * takes part in their key. Any other actor (the runtime and the store themselves) is skipped.
 */
function entityKeyOf(actorRef: { id?: string; _parent?: { id: string } }, machineId: string): string | undefined {
  const actorId = actorRef.id;
  if (actorId === undefined) return undefined;
  if (machineId === CONNECTION) return actorId === CONNECTION ? CONNECTION : undefined;
  if (machineId === COMMAND_LANE)
    return actorId.startsWith(LANE_PREFIX) ? actorId.slice(LANE_PREFIX.length) : undefined;
  const separator = actorId.indexOf(':');
  if (separator < 0) return undefined;
  const id = actorId.slice(separator + 1);
  if (machineId === 'run') return id;
  const parentId = actorRef._parent?.id;
  if (parentId === undefined || !parentId.startsWith(RUN_PREFIX)) return undefined;
  return getAgentEntityKey(parentId.slice(RUN_PREFIX.length), id);
}

interface MachineSnapshot {
  machineId: string;
  value: StateValue;
  status: LiveActorStatus;
}

/** A state machine's snapshot carries its machine and value; other actors' snapshots are skipped. */
function machineSnapshotOf(snapshot: object): MachineSnapshot | undefined {
  if (!('machine' in snapshot) || !('value' in snapshot)) return undefined;
  const { machine, value, status } = snapshot as {
    machine?: { id?: unknown };
    value: StateValue;
    status: LiveActorStatus;
  };
  return typeof machine?.id === 'string' ? { machineId: machine.id, value, status } : undefined;
}

/**
 * Keeps each actor's latest state value from the inspection events of the runtime and its
 * store. The events are read as they come, cheaply: the runtime's own actor, which takes each
 * flush of the view, is dropped on its id, and an actor that did not move costs two string
 * comparisons. The listeners hear at most once per animation frame, so the panel never slows
 * streaming down. A stopped actor's entry stays, marked `stopped`: a lane's last state is
 * still shown once its run has finished, and a final state once the store lets its actor go.
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
      const { machineId, value, status } = machineSnapshot;
      // Inspection hands over the actor itself, which has an id and, when spawned, a parent.
      const entityKey = entityKeyOf(event.actorRef as { id?: string; _parent?: { id: string } }, machineId);
      if (entityKey === undefined) return;
      const key = lifecycleKey(machineId, entityKey);
      const statePath = leafStatePath(value);
      const previous = current.get(key);
      if (previous?.statePath === statePath && previous.status === status) return;
      const visited =
        previous?.statePath === statePath
          ? previous.visited
          : [...(previous?.visited ?? []), statePath].slice(-VISITED_LIMIT);
      current.set(key, { machineId, entityKey, value, statePath, status, visited });
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
