import { Empty, Typography } from 'antd';
import { memo, useSyncExternalStore } from 'react';
import type { AnyStateMachine } from 'xstate';
import type { AgentState } from '../../../machines/agentState';
import { approvalMachine } from '../../../machines/approvalMachine';
import { artifactMachine } from '../../../machines/artifactMachine';
import { messageMachine } from '../../../machines/messageMachine';
import { reasoningMachine } from '../../../machines/reasoningMachine';
import { agentRunMachine } from '../../../machines/runMachine';
import { taskMachine } from '../../../machines/taskMachine';
import { toolCallMachine } from '../../../machines/toolCallMachine';
import { commandLaneMachine } from '../../../runtime/commandLaneMachine';
import { connectionMachine } from '../../../runtime/connectionMachine';
import { type LifecycleObserver, type LiveActorStatus, type LiveLifecycles, lifecycleKey } from './lifecycleObserver';
import { findStatePath, type MachineStateNode, machineStateTree } from './machineStateTree';

/** What a row needs of an entity: runs and lanes are keyed by run id, the others by their AgentState key. */
interface LifecycleEntity {
  key: string;
  label: string;
  /** Where the entity's AgentState status puts it when no actor of it was seen; the runtime's actors have none. */
  status?: string;
}

interface MachineSection {
  machine: AnyStateMachine;
  title: string;
  /** Newest first: the store's entities from AgentState, the runtime's actors from what the inspector saw. */
  entities: (agentState: AgentState, live: LiveLifecycles) => LifecycleEntity[];
}

function entitiesOf<Entity extends { status: string }>(
  records: Record<string, Entity>,
  describe: (entity: Entity) => { key: string; label: string },
): LifecycleEntity[] {
  // Newest first, as the other panels list them.
  return Object.values(records)
    .reverse()
    .map((entity) => ({ status: entity.status, ...describe(entity) }));
}

/** The actors of one runtime machine the inspector saw, newest first: they have no AgentState record. */
function liveEntitiesOf(live: LiveLifecycles, machineId: string, label: (entityKey: string) => string) {
  const entities: LifecycleEntity[] = [];
  for (const lifecycle of live.values()) {
    if (lifecycle.machineId === machineId)
      entities.push({ key: lifecycle.entityKey, label: label(lifecycle.entityKey) });
  }
  return entities.reverse();
}

// The runtime's actors first, then each run, then the entities of the runs.
const SECTIONS: MachineSection[] = [
  {
    machine: connectionMachine,
    title: 'Connection',
    entities: (_, live) => liveEntitiesOf(live, connectionMachine.id, () => 'conversation'),
  },
  {
    machine: commandLaneMachine,
    title: 'Command lanes',
    entities: (_, live) => liveEntitiesOf(live, commandLaneMachine.id, (runId) => runId.slice(0, 8)),
  },
  {
    machine: agentRunMachine,
    title: 'Runs',
    entities: (state) => entitiesOf(state.runs, (run) => ({ key: run.id, label: run.id.slice(0, 8) })),
  },
  {
    machine: toolCallMachine,
    title: 'Tool calls',
    entities: (state) => entitiesOf(state.toolCalls, (call) => ({ key: call.key, label: call.name })),
  },
  {
    machine: approvalMachine,
    title: 'Approvals',
    entities: (state) => entitiesOf(state.approvals, (approval) => ({ key: approval.key, label: approval.id })),
  },
  {
    machine: messageMachine,
    title: 'Messages',
    entities: (state) => entitiesOf(state.messages, (message) => ({ key: message.key, label: message.role })),
  },
  {
    machine: reasoningMachine,
    title: 'Reasoning',
    entities: (state) => entitiesOf(state.reasoning, (reasoning) => ({ key: reasoning.key, label: reasoning.id })),
  },
  {
    machine: taskMachine,
    title: 'Tasks',
    entities: (state) => entitiesOf(state.tasks, (task) => ({ key: task.key, label: task.title ?? task.id })),
  },
  {
    machine: artifactMachine,
    title: 'Artifacts',
    entities: (state) =>
      entitiesOf(state.artifacts, (artifact) => ({ key: artifact.key, label: artifact.title ?? artifact.id })),
  },
];

// Read once: the definitions do not change while the page runs.
const TREES = new Map(SECTIONS.map(({ machine }) => [machine.id, machineStateTree(machine)]));
const NO_VISITS: readonly string[] = [];
// The newest few of each machine: enough to watch the live ones without a page-long panel.
const ROWS_PER_MACHINE = 5;

/** A leaf path and its ancestors: `open.running.idle` gives `open`, `open.running`, `open.running.idle`. */
function withAncestors(paths: readonly string[]): Set<string> {
  return new Set(
    paths.flatMap((path) => {
      const parts = path.split('.');
      return parts.map((_, index) => parts.slice(0, index + 1).join('.'));
    }),
  );
}

interface StateNodeViewProps {
  node: MachineStateNode;
  active: Set<string>;
  visited: Set<string>;
}

function StateNodeView({ node, active, visited }: StateNodeViewProps) {
  const isActive = active.has(node.path);
  const className = [
    node.children.length === 0 ? 'lifecycle-state' : 'lifecycle-group',
    node.type === 'final' ? 'lifecycle-final' : '',
    isActive ? 'lifecycle-active' : visited.has(node.path) ? 'lifecycle-visited' : '',
  ].join(' ');
  return (
    <span className={className} data-testid="lifecycle-state" data-path={node.path} data-active={isActive}>
      {node.children.length === 0 ? (
        node.key
      ) : (
        <>
          <span className="lifecycle-group-label">{node.key}</span>
          {node.children.map((child) => (
            <StateNodeView key={child.key} node={child} active={active} visited={visited} />
          ))}
        </>
      )}
    </span>
  );
}

interface LifecycleRowProps {
  machineId: string;
  entityKey: string;
  label: string;
  /** The deepest active path(s), comma-separated; undefined when nothing says where the entity is. */
  statePath: string | undefined;
  /** `live`: the inspector's last value of the actor; `agentState`: no actor seen, the status says. */
  source: 'live' | 'agentState';
  /** The actor's status when it was seen. */
  actorStatus: LiveActorStatus | undefined;
  visited: readonly string[];
}

const LifecycleRow = memo(function LifecycleRow(props: LifecycleRowProps) {
  const { machineId, entityKey, label, statePath, source, actorStatus, visited } = props;
  const active = withAncestors(statePath === undefined ? [] : statePath.split(','));
  const visitedPaths = withAncestors(visited);
  return (
    <div
      className="lifecycle-row"
      data-testid="lifecycle"
      data-machine={machineId}
      data-entity-key={entityKey}
      data-state={statePath ?? ''}
      data-source={source}
      data-actor-status={actorStatus ?? ''}
      data-visited={visited.join(' ')}
    >
      <Typography.Text className="lifecycle-label" code title={entityKey}>
        {label}
      </Typography.Text>
      {(TREES.get(machineId) ?? []).map((node) => (
        <StateNodeView key={node.key} node={node} active={active} visited={visitedPaths} />
      ))}
      {actorStatus === 'stopped' ? <span className="lifecycle-note">actor stopped</span> : null}
    </div>
  );
});

export interface LifecyclePanelProps {
  agentState: AgentState;
  lifecycles: LifecycleObserver;
}

/**
 * Each entity's machine, and the runtime's connection and command lanes, drawn from their
 * definitions, with the state each actor is in highlighted (from the inspection events) and
 * the states it went through shaded; a lane's two parallel regions are both highlighted.
 * Once an actor is let go, its last state stays; an entity whose actor this page never saw
 * (restored final, say) is placed by its AgentState status.
 */
export function LifecyclePanel({ agentState, lifecycles }: LifecyclePanelProps) {
  const live = useSyncExternalStore(lifecycles.subscribe, lifecycles.getSnapshot);
  const sections = SECTIONS.map((section) => ({ section, entities: section.entities(agentState, live) })).filter(
    ({ entities }) => entities.length > 0,
  );
  if (sections.length === 0) return <Empty image={Empty.PRESENTED_IMAGE_SIMPLE} description="No entities yet" />;
  return (
    <div data-testid="lifecycle-panel" style={{ maxHeight: 'max(560px, calc(100vh - 200px))', overflowY: 'auto' }}>
      {sections.map(({ section, entities }) => {
        const machineId = section.machine.id;
        const tree = TREES.get(machineId) ?? [];
        return (
          <div key={machineId} data-testid="lifecycle-machine" data-machine={machineId} style={{ marginBottom: 8 }}>
            <Typography.Text strong>{section.title}</Typography.Text>{' '}
            <Typography.Text type="secondary">{machineId} machine</Typography.Text>
            {entities.slice(0, ROWS_PER_MACHINE).map((entity) => {
              const seen = live.get(lifecycleKey(machineId, entity.key));
              return (
                <LifecycleRow
                  key={entity.key}
                  machineId={machineId}
                  entityKey={entity.key}
                  label={entity.label}
                  statePath={
                    seen?.statePath ?? (entity.status === undefined ? undefined : findStatePath(tree, entity.status))
                  }
                  source={seen === undefined ? 'agentState' : 'live'}
                  actorStatus={seen?.status}
                  visited={seen?.visited ?? NO_VISITS}
                />
              );
            })}
            {entities.length > ROWS_PER_MACHINE ? (
              <Typography.Text type="secondary" style={{ fontSize: 12 }}>
                {entities.length - ROWS_PER_MACHINE} earlier not shown
              </Typography.Text>
            ) : null}
          </div>
        );
      })}
    </div>
  );
}

/** The panel's styles: states as chips, compound states as boxes around their children. */
export const LIFECYCLE_STYLES = [
  '.lifecycle-row{display:flex;flex-wrap:wrap;align-items:center;gap:4px;padding:4px 0;border-top:1px dashed #eee}',
  '.lifecycle-label{margin-right:4px}',
  '.lifecycle-state,.lifecycle-group{display:inline-flex;flex-wrap:wrap;align-items:center;gap:3px;font-size:11px;line-height:16px;border:1px solid #d9d9d9;border-radius:10px;padding:0 6px;color:#8c8c8c;background:#fff}',
  '.lifecycle-group{border-radius:6px;padding:2px 4px;border-style:dashed}',
  '.lifecycle-group-label{font-style:italic;margin-right:2px}',
  '.lifecycle-final{border-width:3px;border-style:double}',
  '.lifecycle-visited{color:#1677ff;background:#f0f7ff;border-color:#bcd8ff}',
  '.lifecycle-state.lifecycle-active{color:#fff;background:#1677ff;border-color:#1677ff;font-weight:600}',
  '.lifecycle-group.lifecycle-active{border-color:#1677ff;border-style:solid;color:#1677ff}',
  '.lifecycle-note{font-size:11px;color:#8c8c8c;font-style:italic}',
].join('');
