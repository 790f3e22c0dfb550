import type { AgentState } from './agentState';
import { type AgentStoreOptions, createAgentStore } from './createAgentStore';

/**
 * The AgentState a sequence of events reduces to, through a fresh store.
 *
 * @example
 * const state = replayAgentEvents(recordedEvents);
 * expect(state.issues).toEqual([]);
 */
export function replayAgentEvents(
  events: readonly unknown[],
  options: Omit<AgentStoreOptions, 'inspect'> = {},
): AgentState {
  const store = createAgentStore(options);
  try {
    store.batch(events);
    return store.getSnapshot();
  } finally {
    store.destroy();
  }
}
