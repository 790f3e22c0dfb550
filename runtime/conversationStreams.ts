import type { AgentRunContinuation, AnyAgentProvider } from '../providers/AgentProvider';
import {
  type AgentConnectionChange,
  type AgentRunResult,
  type RunAgentProviderOptions,
  runAgentProvider,
} from '../providers/runAgentProvider';
import type { RestoredRun } from './conversationCheckpoint';
import type { RuntimeCore, RuntimeRun } from './runtimeCore';

/** Opens one stream of the conversation: a new run, a continuation, or a restored run resumed from its cursor. */
export type OpenStream = (
  input: unknown,
  provider: AnyAgentProvider,
  continuation: AgentRunContinuation | undefined,
  autoDepth: number,
  restored?: RestoredRun,
) => Promise<AgentRunResult>;

export interface ConversationStreamOptions {
  reconnect: RunAgentProviderOptions<unknown, unknown, unknown, unknown>['reconnect'] | undefined;
  /** Where a stream's events go: the command runner, which settles commands by them. */
  dispatch: NonNullable<RunAgentProviderOptions<unknown, unknown, unknown, unknown>['onEvent']>;
  /** Checks that a provider speaks the protocol before a run starts with it. */
  checkProvider(provider: unknown): void;
  randomId(): string;
}

/**
 * What the runner says of one stream, for the connection machine; `resume`: a restored run
 * resumed from its cursor. A run whose stream cannot go on (dropped mid-answer, a gap) stays
 * as its last event left it, with nobody to end it: it joins the stranded runs.
 */
function connectionEvents(core: RuntimeCore, resume: boolean, runId: string) {
  return (change: AgentConnectionChange) => {
    switch (change.type) {
      case 'connecting':
        // The first attempt opens the stream; later ones are the runner's reconnects.
        if (change.attempt === 0) core.send({ type: 'stream.connecting', resume });
        return;
      case 'connected':
        core.send({ type: 'stream.connected' });
        return;
      case 'reconnecting':
        core.send({ type: 'stream.reconnecting', attempt: change.attempt, error: change.error });
        return;
      case 'unrecoverable':
        core.status.error = change.error;
        core.strandedRuns.add(runId);
        core.send({ type: 'stream.unrecoverable', error: change.error });
        return;
      case 'failed':
        core.status.error = change.error;
        core.send({ type: 'stream.failed', error: change.error });
        return;
      case 'closed':
        core.send({ type: 'stream.closed' });
        return;
    }
  };
}

/** The streams of a conversation, each through `runAgentProvider` with the conversation so far. */
export function createConversationStreams(core: RuntimeCore, options: ConversationStreamOptions): OpenStream {
  return async (input, provider, continuation, autoDepth, restored) => {
    options.checkProvider(provider);
    const runId = restored?.runId ?? options.randomId();
    const controller = new AbortController();
    const run: RuntimeRun = {
      provider,
      input,
      controller,
      closedByCommand: false,
      autoDepth,
      cursor: restored?.cursor,
    };
    core.runs.set(runId, run);
    core.schedule();
    try {
      return await runAgentProvider({
        provider,
        input,
        sessionId: core.sessionId,
        runId,
        signal: controller.signal,
        history: core.store.getSnapshot(),
        ...(continuation === undefined ? {} : { continuation }),
        ...(restored === undefined ? {} : { resume: { cursor: restored.cursor, lastSequence: restored.lastSequence } }),
        ...(options.reconnect === undefined ? {} : { reconnect: options.reconnect }),
        onEvent: (event, admission) => {
          // After a confirmed cancel the stream is closed here: its closing events are not news.
          if (!run.closedByCommand && !core.status.disposed) return options.dispatch(event, admission);
          return undefined;
        },
        onCursor: (cursor) => {
          run.cursor = cursor;
          core.checkpoint('cursor');
        },
        onConnection: connectionEvents(core, restored !== undefined, runId),
        now: core.now,
      });
    } finally {
      run.controller = undefined;
      core.schedule();
    }
  };
}
