import { createActor } from 'xstate';
import type { AgentState } from '../../machines/agentState';
import { sessionMachine } from '../../machines/sessionMachine';
import { type RestoreOptions, restoreStore as restoreStoreOn } from '../../machines/store/restoreStore';

/** Restores a state under a session actor of its own, as a new store does. */
export function restoreStore(state: AgentState, options?: RestoreOptions) {
  const session = createActor(sessionMachine).start();
  return { session, ...restoreStoreOn(session, state, options) };
}
