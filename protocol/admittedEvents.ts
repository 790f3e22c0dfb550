/**
 * The runner's word that it has already validated an event (shape, run ownership, declared
 * type, sequence). `runAgentProvider` passes it as `onEvent`'s second argument, so
 * `onEvent: store.dispatch` hands it to the store, which then skips its own schema check;
 * an event dispatched without it (from anywhere else) is checked in full. A token, not a
 * set of event objects: marking every streamed event in a WeakSet cost more than the
 * check it saved.
 */
export const AGENT_EVENT_ADMITTED: unique symbol = Symbol('agent-machines.eventAdmitted');

/** The type of the runner's token. */
export type AgentEventAdmission = typeof AGENT_EVENT_ADMITTED;
