import { AGENT_ENTITY_KIND_TABLE } from '../protocol/agentEntityKinds';
import type { AgentEventOf } from '../protocol/eventSchemas';
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

/** The event that starts an entity, of any kind (from the entity-kind table). */
export type EntityStartEvent = AgentEventOf<(typeof AGENT_ENTITY_KIND_TABLE)[AgentEntityKind]['start']>;

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
  const finalStatuses: readonly string[] = AGENT_ENTITY_KIND_TABLE[kind].finalStatuses;
  return (
    finalStatuses.includes(entity.status) &&
    !(
      kind === 'toolCall' &&
      entity.status === 'failed' &&
      entity.error?.retryable === true &&
      (entity as AgentToolCallState).retriedBy === undefined
    )
  );
}

/** Whether an entity is active in this record's status: it must be closed before its run ends. */
export function isActiveEntityStatus(kind: AgentEntityKind, entity: AgentEntityState): boolean {
  const activeStatuses: readonly string[] = AGENT_ENTITY_KIND_TABLE[kind].activeStatuses;
  return activeStatuses.includes(entity.status);
}
