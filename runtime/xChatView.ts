import { selectMessages } from '../machines/selectors';
import type { AgentConnectionState } from './connectionMachine';
import type { RuntimeCore } from './runtimeCore';
import type { XChatSnapshot } from './xChatSnapshot';

/**
 * The view of a conversation, selected from what its actors and runs hold: a new object only
 * when something in it changed, so a reader compares by identity. `messages` is selected
 * again only when AgentState changed.
 */
export function createXChatView(
  core: Pick<RuntimeCore, 'store' | 'runs' | 'book' | 'status' | 'strandedRuns'>,
  connectionState: () => AgentConnectionState,
): () => XChatSnapshot {
  let view: XChatSnapshot | undefined;
  /** `strandedRuns` as the view shows it, made again only when a run joins it. */
  let strandedRunIds: readonly string[] = [];
  return () => {
    const { store, runs, book, status, strandedRuns } = core;
    const agentState = store.getSnapshot();
    // In flight from the call until the run has ended. Not "a run is running" in AgentState:
    // a run whose events a strict store refused stays running there, with nobody streaming it.
    let isRequesting = status.waiting > 0 && !status.destroyed;
    if (!status.destroyed) for (const run of runs.values()) if (run.controller !== undefined) isRequesting = true;
    if (strandedRunIds.length !== strandedRuns.size) strandedRunIds = [...strandedRuns];
    const connection = connectionState();
    if (
      view?.agentState !== agentState ||
      view.isRequesting !== isRequesting ||
      view.commandStates !== book.states ||
      view.latestCommandByAction !== book.latestByAction ||
      view.error !== status.error ||
      view.connectionState !== connection ||
      view.checkpointError !== status.checkpointError ||
      view.strandedRunIds !== strandedRunIds
    ) {
      view = {
        agentState,
        messages: view?.agentState === agentState ? view.messages : selectMessages(agentState),
        isRequesting,
        commandStates: book.states,
        latestCommandByAction: book.latestByAction,
        error: status.error,
        connectionState: connection,
        checkpointError: status.checkpointError,
        strandedRunIds,
      };
    }
    return view;
  };
}
