import type { AnyActorRef, InspectionEvent, Observer } from 'xstate';
import type { AgentInspect } from './createAgentStore';

export interface SanitizeInspectionOptions {
  /**
   * Makes what the inspector is sent of an actor's context. Default: `summarizeInspectedValue`,
   * which keeps ids, statuses, numbers and short strings and gives sizes for the rest.
   */
  context?: (context: unknown, actor: AnyActorRef) => unknown;
}

/** Strings up to this length are sent as they are; longer ones as their length. */
const SHORT_STRING = 80;
/** Objects and arrays below this depth are summed up as their size. */
const MAX_DEPTH = 3;

function isActorRef(value: object): value is AnyActorRef {
  return typeof (value as { send?: unknown }).send === 'function' && 'getSnapshot' in value;
}

/**
 * A small, plain copy of a value for an inspector: statuses, ids, numbers and short strings as
 * they are, long text as `{ length }`, actors as their id, and objects below a few levels, or
 * with many keys, as `{ keys }` or `{ items }`. An AgentState of thousands of messages is a few
 * hundred bytes.
 */
export function summarizeInspectedValue(value: unknown, depth = 0): unknown {
  if (typeof value === 'string') return value.length <= SHORT_STRING ? value : { length: value.length };
  if (typeof value !== 'object' || value === null) return typeof value === 'function' ? undefined : value;
  if (isActorRef(value)) return { actor: value.id };
  if (Array.isArray(value)) {
    return depth >= MAX_DEPTH || value.length > 8
      ? { items: value.length }
      : value.map((item) => summarizeInspectedValue(item, depth + 1));
  }
  const keys = Object.keys(value);
  if (depth >= MAX_DEPTH || keys.length > 24) return { keys: keys.length };
  const summary: Record<string, unknown> = {};
  for (const key of keys) summary[key] = summarizeInspectedValue((value as Record<string, unknown>)[key], depth + 1);
  return summary;
}

function sanitizeSnapshot(snapshot: unknown, actor: AnyActorRef, context: SanitizeInspectionOptions['context']) {
  if (typeof snapshot !== 'object' || snapshot === null) return snapshot;
  const { status, value, output, error, context: actorContext } = snapshot as Record<string, unknown>;
  const sanitized: Record<string, unknown> = { status };
  if (value !== undefined) sanitized.value = value;
  if (actorContext !== undefined) {
    sanitized.context = context === undefined ? summarizeInspectedValue(actorContext) : context(actorContext, actor);
  }
  if (output !== undefined) sanitized.output = summarizeInspectedValue(output);
  if (error !== undefined) sanitized.error = error instanceof Error ? error.message : summarizeInspectedValue(error);
  return sanitized;
}

/** The actor as it is, but for `getSnapshot`, which gives the sanitised snapshot. */
function sanitizedActor(actor: AnyActorRef, context: SanitizeInspectionOptions['context']): AnyActorRef {
  return Object.create(actor, {
    getSnapshot: { value: () => sanitizeSnapshot(actor.getSnapshot(), actor, context) },
  }) as AnyActorRef;
}

/**
 * Wraps an inspector (an observer or a function, such as `createBrowserInspector().inspect`
 * from `@statelyai/inspect`) so that it is sent each actor's state and a summary of its context
 * (sizes and statuses), not whole AgentStates: an inspector copies every snapshot it is sent,
 * and a conversation's would grow with every token. Events sent to actors are summarised the
 * same way.
 *
 * @example
 * import { createBrowserInspector } from '@statelyai/inspect';
 * const { inspect } = createBrowserInspector();
 * const chat = createXChatRuntime({ provider, inspect: sanitizeInspection(inspect) });
 */
export function sanitizeInspection(
  inspect: AgentInspect,
  options: SanitizeInspectionOptions = {},
): (event: InspectionEvent) => void {
  const next =
    typeof inspect === 'function'
      ? inspect
      : (event: InspectionEvent) => (inspect as Observer<InspectionEvent>).next?.(event);
  return (event) => {
    const actor = event.actorRef as AnyActorRef;
    switch (event.type) {
      case '@xstate.snapshot':
      case '@xstate.microstep':
        next({
          ...event,
          event: summarizeInspectedValue(event.event),
          snapshot: sanitizeSnapshot(event.snapshot, actor, options.context),
        } as InspectionEvent);
        return;
      case '@xstate.actor':
        // An inspector may read the new actor's snapshot later (the Stately inspector does, when
        // idle): it reads it through a view of the actor whose snapshot is sanitised.
        next({ ...event, actorRef: sanitizedActor(actor, options.context) } as InspectionEvent);
        return;
      case '@xstate.event':
        next({ ...event, event: summarizeInspectedValue(event.event) } as InspectionEvent);
        return;
      default:
        next(event);
    }
  };
}
