import type { AgentCommand } from '../protocol/commandSchemas';
import type { AgentMessageContent } from '../protocol/contentSchemas';
import type { AgentErrorInfo } from '../protocol/eventSchemas';
import type { AgentEntityBase } from './agentState';

/** Sent by the store to every entity still active when its run ends. */
export interface StoreTerminateEvent {
  type: 'store.terminate';
  timestamp: number;
}

/**
 * Sent by the store when the command a run or an entity was submitting has been settled. A run
 * hands it to the entity `command` addresses; without `command`, or for `run.cancel`, it is
 * the run's own.
 */
export interface StoreCommandSettledEvent {
  type: 'store.command_settled';
  command?: AgentCommand | undefined;
}

/** The reason recorded on entities closed because their run ended while they were active. */
export const RUN_TERMINATED_REASON = 'run_terminated';

/** Fields to set, where `undefined` means "leave it as it is". */
export type DefinedPatch<Value> = { [Key in keyof Value]?: Value[Key] | undefined };

/** Copies the defined fields of `patch` onto a copy of `base`: records never hold `undefined`. */
export function withDefined<Value extends object>(base: Value, patch: DefinedPatch<Value>): Value {
  const next = { ...base };
  for (const key in patch) {
    if (patch[key] !== undefined) next[key] = patch[key] as Value[typeof key];
  }
  return next;
}

export function failEntity<Entity extends AgentEntityBase & { status: string }>(
  entity: Entity,
  error: AgentErrorInfo,
  timestamp: number,
): Entity {
  return { ...entity, status: 'failed', error, updatedAt: timestamp };
}

export function cancelEntity<Entity extends AgentEntityBase & { status: string }>(
  entity: Entity,
  reason: string | undefined,
  timestamp: number,
): Entity {
  return withDefined(entity, { status: 'cancelled', reason, updatedAt: timestamp } as DefinedPatch<Entity>);
}

/**
 * Adds an event's meta to an entity's, merging one level deep so that
 * `{ openai: { model } }` and `{ openai: { finishReason } }` keep both fields.
 */
export function withMeta<Entity extends { meta?: Record<string, unknown> }>(
  entity: Entity,
  meta: Record<string, unknown> | undefined,
): Entity {
  if (meta === undefined) return entity;
  const merged: Record<string, unknown> = { ...entity.meta };
  for (const [key, value] of Object.entries(meta)) {
    const previous = merged[key];
    const both = typeof previous === 'object' && previous !== null && typeof value === 'object' && value !== null;
    merged[key] = both && !Array.isArray(previous) && !Array.isArray(value) ? { ...previous, ...value } : value;
  }
  return { ...entity, meta: merged };
}

/** Appends streamed text; structured content grows its last text part or gains one. */
export function appendContent(content: AgentMessageContent, delta: string): AgentMessageContent {
  if (typeof content === 'string') return content + delta;
  const last = content[content.length - 1];
  if (last?.type === 'text' && 'text' in last) {
    return [...content.slice(0, -1), { type: 'text', text: last.text + delta }];
  }
  return [...content, { type: 'text', text: delta }];
}
