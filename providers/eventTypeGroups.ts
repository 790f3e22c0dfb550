import type { AgentEventType } from '../protocol/eventSchemas';

/** The event types of each family, for providers to compose their `capabilities.eventTypes` from. */
export const AGENT_EVENT_TYPE_GROUPS = {
  run: ['run.started', 'run.completed', 'run.failed', 'run.cancelled'],
  message: ['message.started', 'message.delta', 'message.completed', 'message.failed', 'message.cancelled'],
  reasoning: ['reasoning.started', 'reasoning.delta', 'reasoning.completed', 'reasoning.failed', 'reasoning.cancelled'],
  tool: [
    'tool.requested',
    'tool.arguments_delta',
    'tool.arguments_completed',
    'tool.running',
    'tool.completed',
    'tool.failed',
    'tool.cancelled',
  ],
  approval: ['approval.requested', 'approval.resolved'],
  task: ['task.created', 'task.updated', 'task.completed', 'task.failed', 'task.cancelled'],
  artifact: ['artifact.created', 'artifact.updated', 'artifact.completed', 'artifact.failed'],
  state: ['state.snapshot', 'state.delta'],
} as const satisfies Record<string, readonly AgentEventType[]>;

/**
 * The event types of the given families, less the ones listed in `except`.
 *
 * @example
 * eventTypesOf(['run', 'message', 'tool'], { except: ['tool.running'] })
 */
export function eventTypesOf(
  families: ReadonlyArray<keyof typeof AGENT_EVENT_TYPE_GROUPS>,
  options: { except?: readonly AgentEventType[] } = {},
): AgentEventType[] {
  const excluded = new Set<AgentEventType>(options.except ?? []);
  return families
    .flatMap((family) => AGENT_EVENT_TYPE_GROUPS[family] as readonly AgentEventType[])
    .filter((type) => !excluded.has(type));
}
