import type { AgentEvent } from './eventSchemas';

/**
 * Events `runAgentProvider` has already validated (shape, run ownership, declared type,
 * sequence), by identity. The store checks an event once: one it finds here skips its
 * validation; one from anywhere else (a direct `store.dispatch`) is checked in full. A
 * WeakSet, so an event is forgotten with the event.
 */
const admitted = new WeakSet<object>();

/** Records that the runner has validated this event object. */
export function markAgentEventAdmitted(event: AgentEvent): void {
  admitted.add(event);
}

/** Whether this exact object was validated by the runner. */
export function isAdmittedAgentEvent(value: unknown): value is AgentEvent {
  return typeof value === 'object' && value !== null && admitted.has(value);
}
