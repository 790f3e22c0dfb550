import { applyStatePatch } from '../../machines/applyStatePatch';
import type { AgentEventOf } from '../../protocol/eventSchemas';
import type { UIMessageChunk } from '../../providers/ai-sdk/uiMessageChunkSchema';

/** A data part's fields without the ones an event left out. */
export function defined(record: Record<string, unknown>): Record<string, unknown> {
  const kept: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(record)) if (value !== undefined) kept[key] = value;
  return kept;
}

/** The events a `UIDataPartEncoder` shows. */
export type UIDataPartEvent = AgentEventOf<
  | 'task.created'
  | 'task.updated'
  | 'task.completed'
  | 'task.failed'
  | 'task.cancelled'
  | 'artifact.created'
  | 'artifact.updated'
  | 'artifact.completed'
  | 'artifact.failed'
  | 'state.snapshot'
  | 'state.delta'
  | 'activity.snapshot'
  | 'activity.delta'
>;

/**
 * Tasks, artifacts, activities and the shared state of a UI message stream, as `data-task`,
 * `data-artifact`, `data-activity` and `data-state` parts: each event sends the entity whole,
 * with its id as the part's, so the client replaces the part in place. A patch that does not
 * apply sends nothing (the store records it as an issue).
 *
 * @example
 * const dataParts = new UIDataPartEncoder();
 * dataParts.encode(taskCreated); // [{ type: 'data-task', id: 't1', data: { title: 'Index', status: 'running' } }]
 */
export class UIDataPartEncoder {
  private readonly tasks = new Map<string, Record<string, unknown>>();
  private readonly artifacts = new Map<string, Record<string, unknown>>();
  private readonly activities = new Map<string, { activityType: string; content: unknown }>();
  private sharedState: unknown;

  encode(event: UIDataPartEvent): UIMessageChunk[] {
    switch (event.type) {
      case 'state.snapshot':
        this.sharedState = event.payload.snapshot;
        return [{ type: 'data-state', id: 'state', data: this.sharedState }];
      case 'state.delta': {
        const patched = applyStatePatch(this.sharedState ?? {}, event.payload.patch);
        if (!patched.success) return [];
        this.sharedState = patched.state;
        return [{ type: 'data-state', id: 'state', data: this.sharedState }];
      }
      case 'activity.snapshot':
      case 'activity.delta':
        return this.activityChanged(event);
      case 'artifact.created':
      case 'artifact.updated':
      case 'artifact.completed':
      case 'artifact.failed':
        return this.artifactChanged(event);
      default:
        return this.taskChanged(event);
    }
  }

  private taskChanged(
    event: AgentEventOf<'task.created' | 'task.updated' | 'task.completed' | 'task.failed' | 'task.cancelled'>,
  ): UIMessageChunk[] {
    const { taskId } = event.payload;
    const status =
      event.type === 'task.completed'
        ? 'completed'
        : event.type === 'task.failed'
          ? 'failed'
          : event.type === 'task.cancelled'
            ? 'cancelled'
            : 'running';
    const { taskId: _taskId, ...fields } = event.payload as Record<string, unknown>;
    const task = { ...this.tasks.get(taskId), ...defined(fields), status };
    this.tasks.set(taskId, task);
    return [{ type: 'data-task', id: taskId, data: task }];
  }

  private artifactChanged(
    event: AgentEventOf<'artifact.created' | 'artifact.updated' | 'artifact.completed' | 'artifact.failed'>,
  ): UIMessageChunk[] {
    const { artifactId } = event.payload;
    const status =
      event.type === 'artifact.completed' ? 'completed' : event.type === 'artifact.failed' ? 'failed' : 'open';
    const { artifactId: _artifactId, ...fields } = event.payload as Record<string, unknown>;
    const artifact = { ...this.artifacts.get(artifactId), ...defined(fields), status };
    this.artifacts.set(artifactId, artifact);
    return [{ type: 'data-artifact', id: artifactId, data: artifact }];
  }

  private activityChanged(event: AgentEventOf<'activity.snapshot' | 'activity.delta'>): UIMessageChunk[] {
    const { activityId } = event.payload;
    const current = this.activities.get(activityId);
    let next: { activityType: string; content: unknown };
    if (event.type === 'activity.snapshot') {
      if (current !== undefined && event.payload.replace === false) return [];
      next = { activityType: event.payload.activityType, content: event.payload.content };
    } else {
      if (current === undefined) return [];
      const patched = applyStatePatch(current.content, event.payload.patch);
      if (!patched.success) return [];
      next = { activityType: event.payload.activityType ?? current.activityType, content: patched.state };
    }
    this.activities.set(activityId, next);
    return [{ type: 'data-activity', id: activityId, data: next }];
  }
}
