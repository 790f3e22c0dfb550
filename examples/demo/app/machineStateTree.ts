import type { AnyStateMachine, StateValue } from 'xstate';

/** One state node of a machine definition, with its dot path from the root (`open.running`). */
export interface MachineStateNode {
  key: string;
  path: string;
  type: 'atomic' | 'compound' | 'parallel' | 'final' | 'history';
  children: MachineStateNode[];
}

interface DefinitionNode {
  key: string;
  type: MachineStateNode['type'];
  states: Record<string, DefinitionNode>;
}

function walk(states: Record<string, DefinitionNode>, parentPath: string): MachineStateNode[] {
  return Object.values(states).map((node) => {
    const path = parentPath === '' ? node.key : `${parentPath}.${node.key}`;
    return { key: node.key, path, type: node.type, children: walk(node.states, path) };
  });
}

/**
 * The state nodes of a machine, read from its definition (`machine.root.states`), so the
 * lifecycle panel draws what the machine really has rather than a list kept by hand.
 */
export function machineStateTree(machine: AnyStateMachine): MachineStateNode[] {
  return walk(machine.root.states as Record<string, DefinitionNode>, '');
}

/** Every active node's path in a state value: `{ open: { running: 'idle' } }` gives `open`, `open.running`, `open.running.idle`. */
export function activeStatePaths(value: StateValue, parentPath = ''): string[] {
  const join = (key: string) => (parentPath === '' ? key : `${parentPath}.${key}`);
  if (typeof value === 'string') return [join(value)];
  return Object.entries(value).flatMap(([key, child]) => [
    join(key),
    ...(child === undefined ? [] : activeStatePaths(child, join(key))),
  ]);
}

/** The deepest active paths of a state value, comma-separated (one for machines without parallel states). */
export function leafStatePath(value: StateValue): string {
  const paths = activeStatePaths(value);
  return paths.filter((path) => !paths.some((other) => other.startsWith(`${path}.`))).join(',');
}

/** The path of the first node named `key`, outermost first: where an entity's status puts it when no actor is live. */
export function findStatePath(tree: readonly MachineStateNode[], key: string): string | undefined {
  const found = tree.find((node) => node.key === key);
  if (found !== undefined) return found.path;
  for (const node of tree) {
    const path = findStatePath(node.children, key);
    if (path !== undefined) return path;
  }
  return undefined;
}
