// Mermaid state diagrams drawn from the machines' own definitions, so the pictures in
// docs/machines cannot drift from the code: `npm run diagrams` writes them and
// tests/diagrams.test.ts fails while the committed ones differ.
import type { AnyStateMachine, AnyStateNode, AnyTransitionDefinition } from 'xstate';
import { approvalMachine } from '../machines/approvalMachine';
import { artifactMachine } from '../machines/artifactMachine';
import { messageMachine } from '../machines/messageMachine';
import { reasoningMachine } from '../machines/reasoningMachine';
import { agentRunMachine } from '../machines/runMachine';
import { sessionMachine } from '../machines/sessionMachine';
import { taskMachine } from '../machines/taskMachine';
import { toolCallMachine } from '../machines/toolCallMachine';
import { commandLaneMachine } from '../runtime/commandLaneMachine';
import { connectionMachine } from '../runtime/connectionMachine';
import { xChatRuntimeMachine } from '../runtime/xChatRuntimeMachine';

/** A machine to draw, with the file that defines it (repository-relative). */
export interface MachineDiagramSource {
  machine: AnyStateMachine;
  source: string;
}

/** Every machine of the library, in the order the index lists them. */
export const MACHINE_DIAGRAM_SOURCES: readonly MachineDiagramSource[] = [
  { machine: sessionMachine, source: 'machines/sessionMachine.ts' },
  { machine: agentRunMachine, source: 'machines/runMachine.ts' },
  { machine: messageMachine, source: 'machines/messageMachine.ts' },
  { machine: reasoningMachine, source: 'machines/reasoningMachine.ts' },
  { machine: toolCallMachine, source: 'machines/toolCallMachine.ts' },
  { machine: approvalMachine, source: 'machines/approvalMachine.ts' },
  { machine: taskMachine, source: 'machines/taskMachine.ts' },
  { machine: artifactMachine, source: 'machines/artifactMachine.ts' },
  { machine: commandLaneMachine, source: 'runtime/commandLaneMachine.ts' },
  { machine: connectionMachine, source: 'runtime/connectionMachine.ts' },
  { machine: xChatRuntimeMachine, source: 'runtime/xChatRuntimeMachine.ts' },
];

/** Where the generated files go, relative to the repository. */
export const DIAGRAMS_DIRECTORY = 'docs/machines';

// Words Mermaid's state-diagram lexer takes as keywords at the start of a line (`default`
// even as a prefix), so a state named after one would not parse as a state.
const RESERVED_ID = /^(default|state|note|class|classdef|scale|direction|hide|end|acctitle|accdescr|statediagram)/i;

/** A Mermaid state id: no hyphen, colon, space or brace (the lexer's ID), and no dot (it ends up in DOM ids). */
function toMermaidId(name: string): string {
  const id = name.replace(/[^A-Za-z0-9_]/g, '_');
  return RESERVED_ID.test(id) ? `_${id}` : id;
}

/** Text after ` : `, which Mermaid reads up to the next colon, semicolon or line end. */
function toLabel(text: string): string {
  return text.replace(/[:;#%\n]/g, ' ').trim();
}

function describeGuard(guard: unknown): string {
  if (typeof guard === 'string') return guard;
  if (typeof guard === 'function') {
    const combinator = guard as { guards?: unknown[]; stateValue?: unknown };
    if (Array.isArray(combinator.guards)) {
      const parts = combinator.guards.map((part) => {
        const text = describeGuard(part);
        return text.includes(' ') ? `(${text})` : text;
      });
      return guard.name === 'not' ? `not ${parts[0]}` : parts.join(` ${guard.name} `);
    }
    if (combinator.stateValue !== undefined) return `in(${JSON.stringify(combinator.stateValue)})`;
    // An inline function has no name a reader could look up: the property it was written as.
    return guard.name === '' || guard.name === 'guard' ? 'inline' : guard.name;
  }
  if (typeof guard === 'object' && guard !== null && 'type' in guard) {
    const { type, params } = guard as { type: string; params?: unknown };
    if (params === undefined) return type;
    if (typeof params !== 'object' || params === null) return `${type}(…)`;
    const values = Object.entries(params).map(([key, value]) =>
      value !== null && typeof value === 'object' ? key : String(value),
    );
    return `${type}(${values.join(', ')})`;
  }
  return 'guard';
}

function describeEvent(transition: AnyTransitionDefinition, invokedBy: Map<string, string>): string {
  const type = transition.eventType;
  if (type === '') return 'always';
  for (const [prefix, name] of [
    ['xstate.done.actor.', 'onDone'],
    ['xstate.error.actor.', 'onError'],
    ['xstate.snapshot.', 'onSnapshot'],
  ] as const) {
    if (type.startsWith(prefix)) return `${name}(${invokedBy.get(type.slice(prefix.length)) ?? 'actor'})`;
  }
  if (type.startsWith('xstate.done.state.')) return 'onDone';
  const delay = (transition as { delay?: unknown }).delay;
  if (type.startsWith('xstate.after.') && delay !== undefined) return `after ${String(delay)}`;
  return type;
}

function descendants(node: AnyStateNode): AnyStateNode[] {
  return Object.values(node.states as Record<string, AnyStateNode>).flatMap((child) => [child, ...descendants(child)]);
}

function children(node: AnyStateNode): AnyStateNode[] {
  return Object.values(node.states as Record<string, AnyStateNode>);
}

function transitionsOf(node: AnyStateNode): AnyTransitionDefinition[] {
  return [...(node.always ?? []), ...[...node.transitions.values()].flat()];
}

function ancestors(node: AnyStateNode): AnyStateNode[] {
  const chain: AnyStateNode[] = [];
  for (let current: AnyStateNode | undefined = node; current; current = current.parent) chain.push(current);
  return chain;
}

/**
 * The state whose block draws an arrow: the nearest state holding both ends (an arrow from a
 * composite into itself is drawn outside it), never a parallel state, whose block is split
 * into regions; `undefined` is the top of the diagram.
 */
function blockOf(source: AnyStateNode, target: AnyStateNode): AnyStateNode | undefined {
  const targetChain = new Set(ancestors(target));
  let block = ancestors(source).find((node) => targetChain.has(node));
  if (block === source || block === target) block = block?.parent;
  while (block?.type === 'parallel') block = block.parent;
  return block;
}

/**
 * The Mermaid `stateDiagram-v2` text of a machine, drawn from its definition: `[*] -->` the
 * initial state, compound states as `state X { ... }`, parallel regions separated by `--`,
 * one arrow per transition target labelled with its event (`always` for eventless ones,
 * `onDone(actor)`/`onError(actor)` for invoked actors) and `[guard]` when guarded, a
 * targetless transition as an arrow to itself, final states `--> [*]`, tags and invoked
 * actors as state descriptions. States keep their key as id unless two share it; then
 * the id is the path (`open_running_idle`) and the key the label. The root becomes a state
 * named after the machine when it is parallel, has no states or has transitions of its own.
 * States and events follow the definition's order, so the text is the same on every run.
 *
 * @example
 * toMermaidStateDiagram(setup({}).createMachine({ id: 'door', initial: 'closed', states: {
 *   closed: { on: { open: 'opened' } }, opened: { type: 'final' } } }));
 * // stateDiagram-v2\n  [*] --> closed\n  closed\n  opened\n  closed --> opened : open\n  opened --> [*]\n
 */
export function toMermaidStateDiagram(machine: AnyStateMachine): string {
  const root = machine.root as AnyStateNode;
  const nodes = descendants(root);
  const transitions = [root, ...nodes].flatMap(transitionsOf);
  const drawsRoot =
    root.type === 'parallel' ||
    nodes.length === 0 ||
    transitionsOf(root).length > 0 ||
    transitions.some((transition) => transition.target?.includes(root));

  const ids = new Map<AnyStateNode, string>();
  const taken = new Set<string>();
  const claim = (node: AnyStateNode, name: string) => {
    let id = name;
    for (let suffix = 2; taken.has(id); suffix += 1) id = `${name}_${suffix}`;
    taken.add(id);
    ids.set(node, id);
  };
  if (drawsRoot) claim(root, toMermaidId(machine.id));
  const keyCounts = new Map<string, number>();
  for (const node of nodes) keyCounts.set(node.key, (keyCounts.get(node.key) ?? 0) + 1);
  for (const node of nodes) {
    claim(node, toMermaidId(keyCounts.get(node.key) === 1 ? node.key : node.path.join('_')));
  }
  const idOf = (node: AnyStateNode) => ids.get(node) as string;

  const invokedBy = new Map<string, string>();
  for (const node of [root, ...nodes]) {
    for (const { id, src } of node.invoke) {
      // Inline logic is registered under a generated `xstate.invoke.<n>.<state>` key.
      invokedBy.set(id, typeof src === 'string' && !src.startsWith('xstate.invoke.') ? src : 'inline');
    }
  }

  // Each arrow goes in the block of the state that holds both its ends.
  const arrows = new Map<AnyStateNode | undefined, string[]>();
  for (const transition of transitions) {
    const source = transition.source as AnyStateNode;
    const guard = transition.guard === undefined ? '' : ` [${describeGuard(transition.guard)}]`;
    const label = toLabel(`${describeEvent(transition, invokedBy)}${guard}`);
    for (const target of (transition.target as AnyStateNode[] | undefined) ?? [source]) {
      const block = blockOf(source, target);
      arrows.set(block, [...(arrows.get(block) ?? []), `${idOf(source)} --> ${idOf(target)} : ${label}`]);
    }
  }

  const declare = (node: AnyStateNode): string[] => {
    const id = idOf(node);
    const notes: string[] = [];
    if (node.tags.length > 0) notes.push(`tags ${node.tags.join(', ')}`);
    const actors = node.invoke.map((invocation: { id: string }) => invokedBy.get(invocation.id));
    if (actors.length > 0) notes.push(`invokes ${actors.join(', ')}`);
    const descriptions = notes.map((note) => `${id} : ${toLabel(note)}`);
    const isChildless = children(node).length === 0;
    const label = node === root ? machine.id : node.key;
    if (!isChildless) {
      return [`state ${id} {`, ...block(node).map((line) => `  ${line}`), '}', ...descriptions];
    }
    if (label !== id) return [`state "${label.replace(/"/g, "'")}" as ${id}`, ...descriptions];
    return descriptions.length > 0 ? descriptions : [id];
  };

  function block(node: AnyStateNode): string[] {
    const lines: string[] = [];
    if (node.type === 'compound') {
      for (const initial of node.initial.target as AnyStateNode[]) lines.push(`[*] --> ${idOf(initial)}`);
    }
    children(node).forEach((child, index) => {
      if (node.type === 'parallel' && index > 0) lines.push('--');
      lines.push(...declare(child));
    });
    lines.push(...(arrows.get(node) ?? []));
    for (const child of children(node)) if (child.type === 'final') lines.push(`${idOf(child)} --> [*]`);
    return lines;
  }

  // Without a drawn root every arrow lies inside it: its block is the top of the diagram.
  const top = drawsRoot ? [`[*] --> ${idOf(root)}`, ...declare(root), ...(arrows.get(undefined) ?? [])] : block(root);
  return ['stateDiagram-v2', ...top.map((line) => `  ${line}`), ''].join('\n');
}

/** The actors a machine spawns or invokes, linked to their own diagrams when they have one. */
function describeChildren(machine: AnyStateMachine, sources: readonly MachineDiagramSource[]): string[] {
  const actors = Object.entries((machine.implementations.actors ?? {}) as Record<string, { id?: unknown }>);
  if (actors.length === 0) return [];
  const drawn = new Set(sources.map((entry) => entry.machine.id));
  const names = actors.map(([name, logic]) =>
    typeof logic.id === 'string' && drawn.has(logic.id) ? `[\`${name}\`](${logic.id}.md)` : `\`${name}\``,
  );
  return [`Its children (the actors it spawns or invokes): ${names.join(', ')}.`, ''];
}

/** The Markdown file of one machine: its id, where it comes from, its children, and its diagram. */
export function toDiagramDocument(
  { machine, source }: MachineDiagramSource,
  sources: readonly MachineDiagramSource[] = MACHINE_DIAGRAM_SOURCES,
): string {
  return [
    `# ${machine.id}`,
    '',
    `Generated by \`npm run diagrams\` from the definition of \`${machine.id}\` in [\`${source}\`](../../${source}).`,
    'Do not edit it by hand: change the machine and run `npm run diagrams` again (`tests/diagrams.test.ts`',
    'fails while this file and the machine disagree).',
    '',
    ...describeChildren(machine, sources),
    '```mermaid',
    toMermaidStateDiagram(machine).trimEnd(),
    '```',
    '',
  ].join('\n');
}

/** The index of the generated diagrams, one line per machine. */
export function toDiagramIndex(sources: readonly MachineDiagramSource[]): string {
  return [
    '# Machine diagrams',
    '',
    'The lifecycle of each agent-machines machine as a Mermaid state diagram, generated by `npm run diagrams`',
    'from the machine definitions (`npm run diagrams -- --check` lists the files that are out of date).',
    '',
    ...sources.map(({ machine, source }) => `- [${machine.id}](${machine.id}.md): \`${source}\``),
    '',
  ].join('\n');
}

/** Every generated file, by repository-relative path, in a stable order. */
export function machineDiagramFiles(sources: readonly MachineDiagramSource[] = MACHINE_DIAGRAM_SOURCES) {
  const files = new Map<string, string>();
  for (const entry of sources) {
    files.set(`${DIAGRAMS_DIRECTORY}/${entry.machine.id}.md`, toDiagramDocument(entry, sources));
  }
  files.set(`${DIAGRAMS_DIRECTORY}/README.md`, toDiagramIndex(sources));
  return files;
}
