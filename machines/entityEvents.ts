import type { AgentEvent, AgentEventOf } from '../protocol/eventSchemas';
import type {
  AgentApprovalState,
  AgentArtifactState,
  AgentEntityBase,
  AgentEntityKind,
  AgentEntityState,
  AgentEntityStateMap,
  AgentMessageState,
  AgentTaskState,
  AgentToolCallState,
} from './agentState';
import { withDefined } from './entityUpdates';

interface EntityRoute {
  kind: AgentEntityKind;
  /** The payload field that names the entity. */
  idField: 'messageId' | 'reasoningId' | 'toolCallId' | 'approvalId' | 'taskId' | 'artifactId';
  role: 'start' | 'delta' | 'update';
}

function routes(
  kind: AgentEntityKind,
  idField: EntityRoute['idField'],
  start: string,
  deltas: string[],
  updates: string[],
) {
  const table: Array<[string, EntityRoute]> = [[start, { kind, idField, role: 'start' }]];
  for (const type of deltas) table.push([type, { kind, idField, role: 'delta' }]);
  for (const type of updates) table.push([type, { kind, idField, role: 'update' }]);
  return table;
}

/** Which entity each entity event addresses, and whether it starts it, streams into it or updates it. */
export const ENTITY_EVENT_ROUTES: ReadonlyMap<string, EntityRoute> = new Map([
  ...routes(
    'message',
    'messageId',
    'message.started',
    ['message.delta'],
    ['message.completed', 'message.failed', 'message.cancelled'],
  ),
  ...routes(
    'reasoning',
    'reasoningId',
    'reasoning.started',
    ['reasoning.delta'],
    ['reasoning.completed', 'reasoning.failed', 'reasoning.cancelled'],
  ),
  ...routes(
    'toolCall',
    'toolCallId',
    'tool.requested',
    ['tool.arguments_delta'],
    ['tool.arguments_completed', 'tool.running', 'tool.completed', 'tool.failed', 'tool.cancelled'],
  ),
  ...routes('approval', 'approvalId', 'approval.requested', [], ['approval.resolved']),
  ...routes('task', 'taskId', 'task.created', [], ['task.updated', 'task.completed', 'task.failed', 'task.cancelled']),
  ...routes(
    'artifact',
    'artifactId',
    'artifact.created',
    [],
    ['artifact.updated', 'artifact.completed', 'artifact.failed'],
  ),
]);

export type EntityStartEvent = AgentEventOf<
  | 'message.started'
  | 'reasoning.started'
  | 'tool.requested'
  | 'approval.requested'
  | 'task.created'
  | 'artifact.created'
>;

/** The entity id an entity event names. */
export function getEventEntityId(event: AgentEvent, route: EntityRoute): string {
  return (event.payload as Record<string, string>)[route.idField] as string;
}

/** The first record of an entity, from the event that starts it. */
export function createEntityRecord(event: EntityStartEvent, key: string): AgentEntityStateMap[AgentEntityKind] {
  const time = event.timestamp;
  const base: Omit<AgentEntityBase, 'id'> = {
    key,
    runId: event.runId,
    sessionId: event.sessionId,
    createdAt: time,
    updatedAt: time,
  };
  if (event.parentId !== undefined) base.parentId = event.parentId;
  if (event.meta !== undefined) base.meta = event.meta;
  switch (event.type) {
    case 'message.started': {
      const { messageId, role, content, name, toolCallId } = event.payload;
      return withDefined<AgentMessageState>(
        { ...base, id: messageId, role, content: content ?? '', status: 'streaming' as const },
        { name, toolCallId },
      );
    }
    case 'reasoning.started': {
      const { reasoningId, redacted, content } = event.payload;
      return { ...base, id: reasoningId, redacted: redacted ?? false, content: content ?? '', status: 'streaming' };
    }
    case 'tool.requested': {
      const { toolCallId, name, attempt, retryOf, messageId } = event.payload;
      return withDefined<AgentToolCallState>(
        {
          ...base,
          id: toolCallId,
          name,
          arguments: event.payload.arguments ?? '',
          status: 'streaming_arguments' as const,
          attempt: attempt ?? 1,
        },
        { retryOf, messageId },
      );
    }
    case 'approval.requested': {
      const { approvalId, toolCallId, description, risk, data, editable, expiresAt, version } = event.payload;
      return withDefined<AgentApprovalState>(
        { ...base, id: approvalId, status: 'waiting' as const },
        { toolCallId, description, risk, data, editable, expiresAt, version },
      );
    }
    case 'task.created': {
      const { taskId, title, description, parentTaskId, progress, data } = event.payload;
      return withDefined<AgentTaskState>(
        { ...base, id: taskId, status: 'running' as const },
        { title, description, parentTaskId, progress, data },
      );
    }
    case 'artifact.created': {
      const { artifactId, mediaType, title, name, content, uri, data, version } = event.payload;
      return withDefined<AgentArtifactState>(
        { ...base, id: artifactId, status: 'open' as const, version: version ?? 1 },
        { mediaType, title, name, content, uri, data },
      );
    }
  }
}

/** Whether an entity's machine is final in this record's status: such entities get no actor on restore. */
export function isFinalEntityStatus(kind: AgentEntityKind, entity: AgentEntityState): boolean {
  const finalStatuses = ENTITY_FINAL_STATUSES[kind];
  return (
    finalStatuses.includes(entity.status) &&
    !(kind === 'toolCall' && entity.status === 'failed' && entity.error?.retryable === true)
  );
}

/** The statuses in which each entity machine is final (a test holds this to the machines). */
const ENTITY_FINAL_STATUSES: Record<AgentEntityKind, readonly string[]> = {
  message: ['completed', 'failed', 'cancelled'],
  reasoning: ['completed', 'failed', 'cancelled'],
  toolCall: ['completed', 'failed', 'cancelled'],
  approval: ['resolved', 'cancelled'],
  task: ['completed', 'failed', 'cancelled'],
  artifact: ['completed', 'failed', 'cancelled'],
};

/** The statuses in which an entity still takes events from its run (a test holds this to the machines' `active` tag). */
const ENTITY_ACTIVE_STATUSES: Record<AgentEntityKind, readonly string[]> = {
  message: ['streaming'],
  reasoning: ['streaming'],
  toolCall: ['streaming_arguments', 'awaiting_execution', 'running'],
  approval: ['waiting'],
  task: ['running'],
  artifact: ['open'],
};

/** Whether an entity is active in this record's status: it must be closed before its run ends. */
export function isActiveEntityStatus(kind: AgentEntityKind, entity: AgentEntityState): boolean {
  return ENTITY_ACTIVE_STATUSES[kind].includes(entity.status);
}
