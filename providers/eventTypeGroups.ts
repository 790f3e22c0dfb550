import { type AgentEntityKind, agentEntityEventTypes } from '../protocol/agentEntityKinds';
import type { AgentEventType } from '../protocol/eventSchemas';

const entityGroup = (kind: AgentEntityKind): readonly AgentEventType[] => agentEntityEventTypes(kind);
const toolCall = entityGroup('toolCall');

/**
 * The event types of each family, for providers to compose their `capabilities.eventTypes`
 * from. The entity families come from the entity-kind table, in lifecycle order; `tool` is
 * the former name of `toolCall`, kept so existing callers work.
 */
export const AGENT_EVENT_TYPE_GROUPS = {
  run: ['run.started', 'run.completed', 'run.failed', 'run.cancelled'],
  message: entityGroup('message'),
  reasoning: entityGroup('reasoning'),
  toolCall,
  tool: toolCall,
  approval: entityGroup('approval'),
  task: entityGroup('task'),
  artifact: entityGroup('artifact'),
  state: ['state.snapshot', 'state.delta'],
  activity: ['activity.snapshot', 'activity.delta'],
  extension: ['extension.emitted'],
} as const satisfies Record<string, readonly AgentEventType[]>;

/** A family of event types, by name: a key of `AGENT_EVENT_TYPE_GROUPS`. */
export type AgentEventTypeGroup = keyof typeof AGENT_EVENT_TYPE_GROUPS;

/**
 * The event types of the given families, less the ones listed in `except`.
 *
 * @example
 * eventTypesOf(['run', 'message', 'toolCall'], { except: ['tool.running'] })
 */
export function eventTypesOf(
  families: readonly AgentEventTypeGroup[],
  options: { except?: readonly AgentEventType[] } = {},
): AgentEventType[] {
  const excluded = new Set<AgentEventType>(options.except ?? []);
  return families
    .flatMap((family) => AGENT_EVENT_TYPE_GROUPS[family] as readonly AgentEventType[])
    .filter((type) => !excluded.has(type));
}
