// A checkpoint coordinator wired to a bench run as createXChatRuntime wires it: `batch` on
// every store notification, `cursor` on every cursor, `terminal` once the run's terminal
// event is dispatched, the checkpoint built by the runtime's own `buildConversationCheckpoint`,
// saved to memory storage with the default throttle.
import { createAgentCheckpointCoordinator } from '../checkpoint/createAgentCheckpointCoordinator';
import { createMemoryAgentCheckpointStorage } from '../checkpoint/createMemoryAgentCheckpointStorage';
import type { AgentStore } from '../machines/createAgentStore';
import type { AnyAgentProvider } from '../providers/AgentProvider';
import { CommandBook } from '../runtime/commandBook';
import { buildConversationCheckpoint } from '../runtime/conversationCheckpoint';
import type { RuntimeRun } from '../runtime/runtimeCore';

export interface CheckpointedRun {
  onCursor(cursor: string): void;
  /**
   * Called once the run's stream ended: schedules the terminal save, waits for it, stops the
   * coordinator and says what it did. The runtime's command runner schedules it right after
   * dispatching the terminal event, which is the stream's last; it looks at every event's type
   * for that with or without a checkpoint, so that look is not part of the coordinator's cost.
   */
  finish(): Promise<{ saves: number; cursors: number }>;
}

/** Subscribes a coordinator to `store` for one run, before the run starts. */
export function checkpointedRun(options: {
  store: AgentStore;
  sessionId: string;
  runId: string;
  provider: AnyAgentProvider;
  input: unknown;
}): CheckpointedRun {
  const { store, sessionId, runId } = options;
  const memory = createMemoryAgentCheckpointStorage();
  let saves = 0;
  let cursors = 0;
  let failure: unknown;
  const storage: typeof memory = {
    ...memory,
    save(checkpoint) {
      saves += 1;
      return memory.save(checkpoint);
    },
  };
  const run: RuntimeRun = {
    provider: options.provider,
    input: options.input,
    controller: new AbortController(),
    closedByCommand: false,
    autoDepth: 0,
    cursor: undefined,
  };
  const core = {
    sessionId,
    now: Date.now,
    store,
    runs: new Map([[runId, run]]),
    book: new CommandBook(Date.now),
  };
  const coordinator = createAgentCheckpointCoordinator({
    storage,
    sessionId,
    build: () => buildConversationCheckpoint(core),
    onError: (error) => {
      failure ??= error;
    },
  });
  const unsubscribe = store.subscribe(() => coordinator.schedule('batch'));
  return {
    onCursor(cursor) {
      cursors += 1;
      run.cursor = cursor;
      coordinator.schedule('cursor');
    },
    async finish() {
      coordinator.schedule('terminal');
      await coordinator.flush();
      coordinator.stop();
      unsubscribe();
      // A save that failed or was skipped would make the row measure less than the runtime does.
      if (failure !== undefined) throw failure;
      return { saves, cursors };
    },
  };
}
