import type { AgentEvent, AgentEventPayloadMap } from '../../protocol/eventSchemas';
import type { AgentRunEmitter } from '../createAgentRunEmitter';
import type { LocalAgentChunk } from './localAgentChunks';

/** Copies the optional fields that are set, so no payload carries an explicit `undefined`. */
function withDefined<Payload extends object>(payload: Payload, optional: Partial<Payload>): Payload {
  for (const [field, value] of Object.entries(optional)) {
    if (value !== undefined) (payload as Record<string, unknown>)[field] = value;
  }
  return payload;
}

function metaOf(chunk: { meta?: Record<string, unknown> }): { meta: Record<string, unknown> } | undefined {
  return chunk.meta === undefined ? undefined : { meta: chunk.meta };
}

/**
 * The events of one local runtime chunk, made with the run's emitter.
 *
 * @example
 * mapLocalAgentChunk({ type: 'text.delta', id: 'text-0', delta: 'Hi' }, events); // [message.delta]
 */
export function mapLocalAgentChunk(chunk: LocalAgentChunk, events: AgentRunEmitter): AgentEvent[] {
  switch (chunk.type) {
    case 'reasoning.start':
      return [
        events.emit(
          'reasoning.started',
          chunk.redacted ? { reasoningId: chunk.id, redacted: true } : { reasoningId: chunk.id },
        ),
      ];
    case 'reasoning.delta':
      return [events.emit('reasoning.delta', { reasoningId: chunk.id, delta: chunk.delta })];
    case 'reasoning.end':
      return [events.emit('reasoning.completed', { reasoningId: chunk.id })];
    case 'text.start':
      return [events.emit('message.started', { messageId: chunk.id, role: 'assistant' })];
    case 'text.delta':
      return [events.emit('message.delta', { messageId: chunk.id, delta: chunk.delta })];
    case 'text.end':
      return [events.emit('message.completed', { messageId: chunk.id })];
    case 'tool.start':
      return [
        events.emit(
          'tool.requested',
          withDefined<AgentEventPayloadMap['tool.requested']>(
            { toolCallId: chunk.id, name: chunk.name },
            { attempt: chunk.attempt, retryOf: chunk.retryOf },
          ),
        ),
      ];
    case 'tool.args':
      return [events.emit('tool.arguments_delta', { toolCallId: chunk.id, delta: chunk.delta })];
    case 'tool.args_end':
      return [events.emit('tool.arguments_completed', { toolCallId: chunk.id })];
    case 'tool.running':
      return [events.emit('tool.running', { toolCallId: chunk.id })];
    case 'tool.result':
      return [
        events.emit(
          'tool.completed',
          withDefined<AgentEventPayloadMap['tool.completed']>({ toolCallId: chunk.id }, { result: chunk.result }),
          metaOf(chunk),
        ),
      ];
    case 'tool.error':
      return [events.emit('tool.failed', { toolCallId: chunk.id, error: chunk.error }, metaOf(chunk))];
    case 'tool.cancelled':
      return [events.emit('tool.cancelled', { toolCallId: chunk.id, reason: chunk.reason })];
    case 'approval.request':
      return [
        events.emit(
          'approval.requested',
          withDefined<AgentEventPayloadMap['approval.requested']>(
            { approvalId: chunk.id, description: chunk.description },
            {
              risk: chunk.risk,
              toolCallId: chunk.toolCallId,
              data: chunk.data,
              editable: chunk.editable,
              version: chunk.version,
            },
          ),
        ),
      ];
    case 'approval.resolved':
      return [
        events.emit(
          'approval.resolved',
          withDefined<AgentEventPayloadMap['approval.resolved']>(
            { approvalId: chunk.id, decision: chunk.decision },
            { data: chunk.data },
          ),
          metaOf(chunk),
        ),
      ];
    case 'task.start':
      return [events.emit('task.created', { taskId: chunk.id, title: chunk.title, progress: 0 })];
    case 'task.progress':
      return [events.emit('task.updated', { taskId: chunk.id, progress: chunk.progress })];
    case 'task.end':
      return [events.emit('task.completed', { taskId: chunk.id })];
    case 'artifact.start':
      return [
        events.emit(
          'artifact.created',
          withDefined<AgentEventPayloadMap['artifact.created']>(
            { artifactId: chunk.id, mediaType: chunk.mediaType },
            { title: chunk.title, content: chunk.content },
          ),
        ),
      ];
    case 'artifact.version':
      return [
        events.emit('artifact.updated', { artifactId: chunk.id, version: chunk.version, content: chunk.content }),
      ];
    case 'artifact.end':
      return [events.emit('artifact.completed', { artifactId: chunk.id })];
    case 'error':
      return events.close({ type: 'failed', error: chunk.error });
    case 'cancelled':
      return events.close({ type: 'cancelled', reason: chunk.reason });
    case 'done':
      return [
        events.emit(
          'run.completed',
          withDefined<AgentEventPayloadMap['run.completed']>(
            {},
            {
              usage: chunk.usage,
              pendingToolCallIds: chunk.pendingToolCallIds,
              pendingApprovalIds: chunk.pendingApprovalIds,
            },
          ),
        ),
      ];
  }
}
