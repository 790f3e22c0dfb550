import type { AgentEventType } from './eventSchemas';

/** The entity kinds of the protocol: one name each, used by the store, the machines and the providers. */
export type AgentEntityKind = 'message' | 'reasoning' | 'toolCall' | 'approval' | 'task' | 'artifact';

/** Everything the library knows of one entity kind, in one place. */
export interface AgentEntityKindInfo {
  /** The payload field that names the entity. */
  idField: 'messageId' | 'reasoningId' | 'toolCallId' | 'approvalId' | 'taskId' | 'artifactId';
  /** The AgentState container that holds its records. */
  container: 'messages' | 'reasoning' | 'toolCalls' | 'approvals' | 'tasks' | 'artifacts';
  /** The event that starts it. */
  start: AgentEventType;
  /** The streamed delta event, if the kind streams. */
  delta: AgentEventType | undefined;
  /** Events that change it without ending it. */
  updates: readonly AgentEventType[];
  /** Events that end it. */
  terminals: readonly AgentEventType[];
  /** Record statuses in which it still takes events (its machine's `active` tag). */
  activeStatuses: readonly string[];
  /** Record statuses in which its machine is final (a retryable failed tool call is not: it takes `tool.retry`). */
  finalStatuses: readonly string[];
}

/**
 * The entity-kind table. The store's routes, the delta check, the empty AgentState, the
 * run tracker's open/close bookkeeping and the providers' event-type groups are derived
 * from it; tests hold the machines to its statuses.
 */
export const AGENT_ENTITY_KIND_TABLE = {
  message: {
    idField: 'messageId',
    container: 'messages',
    start: 'message.started',
    delta: 'message.delta',
    updates: [],
    terminals: ['message.completed', 'message.failed', 'message.cancelled'],
    activeStatuses: ['streaming'],
    finalStatuses: ['completed', 'failed', 'cancelled'],
  },
  reasoning: {
    idField: 'reasoningId',
    container: 'reasoning',
    start: 'reasoning.started',
    delta: 'reasoning.delta',
    updates: [],
    terminals: ['reasoning.completed', 'reasoning.failed', 'reasoning.cancelled'],
    activeStatuses: ['streaming'],
    finalStatuses: ['completed', 'failed', 'cancelled'],
  },
  toolCall: {
    idField: 'toolCallId',
    container: 'toolCalls',
    start: 'tool.requested',
    delta: 'tool.arguments_delta',
    updates: ['tool.arguments_completed', 'tool.running'],
    terminals: ['tool.completed', 'tool.failed', 'tool.cancelled'],
    activeStatuses: ['streaming_arguments', 'awaiting_execution', 'running'],
    finalStatuses: ['completed', 'failed', 'cancelled'],
  },
  approval: {
    idField: 'approvalId',
    container: 'approvals',
    start: 'approval.requested',
    delta: undefined,
    updates: [],
    terminals: ['approval.resolved'],
    activeStatuses: ['waiting'],
    finalStatuses: ['resolved', 'cancelled'],
  },
  task: {
    idField: 'taskId',
    container: 'tasks',
    start: 'task.created',
    delta: undefined,
    updates: ['task.updated'],
    terminals: ['task.completed', 'task.failed', 'task.cancelled'],
    activeStatuses: ['running'],
    finalStatuses: ['completed', 'failed', 'cancelled'],
  },
  artifact: {
    idField: 'artifactId',
    container: 'artifacts',
    start: 'artifact.created',
    delta: undefined,
    updates: ['artifact.updated'],
    terminals: ['artifact.completed', 'artifact.failed'],
    activeStatuses: ['open'],
    finalStatuses: ['completed', 'failed', 'cancelled'],
  },
} as const satisfies Record<AgentEntityKind, AgentEntityKindInfo>;

/** Every entity kind, in table order. */
export const AGENT_ENTITY_KINDS = Object.keys(AGENT_ENTITY_KIND_TABLE) as AgentEntityKind[];

/** The role an entity event plays for its entity. */
export type AgentEntityEventRole = 'start' | 'delta' | 'update' | 'terminal';

/** Which entity an entity event addresses, and what it does to it. */
export interface AgentEntityEventRoute {
  kind: AgentEntityKind;
  idField: AgentEntityKindInfo['idField'];
  role: AgentEntityEventRole;
}

/** Every entity event type, routed to its kind and role; derived from the table. */
export const AGENT_ENTITY_EVENT_ROUTES: ReadonlyMap<AgentEventType, AgentEntityEventRoute> = new Map(
  AGENT_ENTITY_KINDS.flatMap((kind) => {
    const info: AgentEntityKindInfo = AGENT_ENTITY_KIND_TABLE[kind];
    const route = (role: AgentEntityEventRole) => ({ kind, idField: info.idField, role });
    return [
      [info.start, route('start')],
      ...(info.delta === undefined ? [] : [[info.delta, route('delta')] as const]),
      ...info.updates.map((type) => [type, route('update')] as const),
      ...info.terminals.map((type) => [type, route('terminal')] as const),
    ] as Array<readonly [AgentEventType, AgentEntityEventRoute]>;
  }),
);

/** The event types of an entity kind, in lifecycle order. */
export function agentEntityEventTypes(kind: AgentEntityKind): AgentEventType[] {
  const info: AgentEntityKindInfo = AGENT_ENTITY_KIND_TABLE[kind];
  return [info.start, ...(info.delta === undefined ? [] : [info.delta]), ...info.updates, ...info.terminals];
}
