import type { AgentCheckpoint, AgentCheckpointStorage } from '../checkpoint/AgentCheckpoint';
import { AGENT_CHECKPOINT_SCHEMA_VERSION } from '../checkpoint/AgentCheckpoint';
import { AgentCheckpointError, describeCheckpointKey } from '../checkpoint/AgentCheckpointError';
import {
  type AgentCheckpointCoordinator,
  type AgentCheckpointCoordinatorOptions,
  createAgentCheckpointCoordinator,
} from '../checkpoint/createAgentCheckpointCoordinator';
import { loadAgentCheckpoint } from '../checkpoint/loadAgentCheckpoint';
import type { ParseAgentCheckpointOptions } from '../checkpoint/parseAgentCheckpoint';
import type { AgentState } from '../machines/agentState';
import { getOwn } from '../machines/agentStateProjection';
import { isWaitingForInput } from '../machines/pendingInput';
import { AGENT_COMMAND_PROTOCOL_VERSION, AGENT_EVENT_PROTOCOL_VERSION } from '../protocol/constants';
import { AgentCommandError } from '../providers/AgentCommandError';
import type { AnyAgentProvider } from '../providers/AgentProvider';
import { isContinuedInState, isReadyToContinue } from './agentLoop';
import type { ConnectionMachineEvent } from './connectionMachine';
import type { RuntimeCore } from './runtimeCore';

export interface ConversationCheckpointOptions {
  storage: AgentCheckpointStorage;
  /** Turns a checkpoint of an older schema version into the current one. */
  migrate?: ParseAgentCheckpointOptions['migrate'];
}

/** A run the restore found running: resumed from its cursor when its provider can. */
export interface RestoredRun {
  runId: string;
  input: unknown;
  cursor: string;
  lastSequence: number;
}

/**
 * The checkpoint of a conversation as it stands: its AgentState, the input of each run
 * still running or waiting for input, the cursor of each running run, the commands still
 * submitting. Only the original input is kept, never a request built from it.
 */
export function buildConversationCheckpoint(
  core: Pick<RuntimeCore, 'sessionId' | 'now' | 'store' | 'runs' | 'book'>,
): AgentCheckpoint {
  const state = core.store.getSnapshot();
  const inputByRun: Record<string, unknown> = {};
  const cursorByRun: Record<string, string> = {};
  for (const [runId, run] of core.runs) {
    const record = getOwn(state.runs, runId);
    if (record === undefined) continue;
    const running = record.status === 'running';
    if (!running && !isWaitingForInput(state, record)) continue;
    if (run.input !== undefined) inputByRun[runId] = run.input;
    if (running && run.cursor !== undefined) cursorByRun[runId] = run.cursor;
  }
  return {
    schemaVersion: AGENT_CHECKPOINT_SCHEMA_VERSION,
    eventProtocolVersion: AGENT_EVENT_PROTOCOL_VERSION,
    commandProtocolVersion: AGENT_COMMAND_PROTOCOL_VERSION,
    sessionId: core.sessionId,
    state,
    inputByRun,
    cursorByRun,
    pendingCommands: core.book.submittingCommands(),
    savedAt: core.now(),
  };
}

/**
 * Restores a conversation from its checkpoint, in the seed's order (003 §12.4): read and
 * validate it (an invalid one is never given to the store: the connection is `failed` and
 * the error is kept), reset the store from it, take back each run's input and cursor, record
 * the commands that were submitting as failed (never sent again by themselves), then say
 * which running runs can be resumed from their cursors and which cannot. Resolves with the
 * runs to resume; the caller starts them once the connection knows. A run that had every
 * input it waited for and that no run in the checkpoint continues (the page closed before the
 * continuation's start was saved, or nothing continued it) is not continued here (that would
 * ask the model again by itself): it is reported as `incomplete_checkpoint`, and
 * `agentActions.continueRun` continues it.
 */
export async function restoreConversation(
  core: RuntimeCore,
  options: ConversationCheckpointOptions,
  connection: { send(event: ConnectionMachineEvent): void },
  canResume: (runId: string) => boolean,
): Promise<{ resume: RestoredRun[]; error?: unknown }> {
  connection.send({ type: 'restore.started' });
  let checkpoint: AgentCheckpoint | undefined;
  try {
    checkpoint = await loadAgentCheckpoint(
      options.storage,
      core.sessionId,
      options.migrate === undefined ? {} : { migrate: options.migrate },
    );
  } catch (error) {
    connection.send({ type: 'restore.failed', error });
    return { resume: [], error };
  }
  if (checkpoint === undefined) {
    connection.send({ type: 'restore.done', resuming: 0, stranded: 0 });
    return { resume: [] };
  }
  core.store.reset(checkpoint.state);
  const state = core.store.getSnapshot();
  const provider = core.providerOf('');
  for (const [runId, input] of Object.entries(checkpoint.inputByRun)) {
    core.runs.set(runId, {
      provider,
      input,
      controller: undefined,
      closedByCommand: false,
      autoDepth: 0,
      cursor: getOwn(checkpoint.cursorByRun, runId),
    });
  }
  core.book.restoreUnanswered(
    checkpoint.pendingCommands,
    new AgentCommandError(
      'interrupted',
      'The conversation was restored before the runtime answered this command; it is not sent again by itself. Send the same intent again to retry it with its idempotency key.',
      { retryable: true },
    ),
  );
  const resume: RestoredRun[] = [];
  let stranded = 0;
  for (const run of Object.values(state.runs)) {
    if (run.status !== 'running' || run.sessionId !== core.sessionId) continue;
    const cursor = getOwn(checkpoint.cursorByRun, run.id);
    const known = core.runs.get(run.id);
    if (cursor === undefined || known === undefined || !canResume(run.id)) {
      stranded += 1;
      core.strandedRuns.add(run.id);
      continue;
    }
    resume.push({ runId: run.id, input: known.input, cursor, lastSequence: state.lastSequenceByRun[run.id] ?? 0 });
  }
  connection.send({ type: 'restore.done', resuming: resume.length, stranded });
  core.schedule();
  const notContinued = findNotContinued(state, core.sessionId);
  return notContinued === undefined ? { resume } : { resume, error: notContinued };
}

/** The runs that had every input they waited for and that no run continues, as an error naming the first. */
function findNotContinued(state: AgentState, sessionId: string): AgentCheckpointError | undefined {
  const runIds = Object.values(state.runs)
    .filter(
      (run) =>
        run.sessionId === sessionId &&
        isReadyToContinue(state, run.id, undefined) &&
        !isContinuedInState(state, run.id),
    )
    .map((run) => run.id);
  const [runId] = runIds;
  if (runId === undefined) return undefined;
  const more = runIds.length > 1 ? ` (and ${runIds.length - 1} more)` : '';
  return new AgentCheckpointError(
    'incomplete_checkpoint',
    `Run ${describeCheckpointKey(runId)}${more} had every input it waited for, but no run continuing it was saved (the page may have closed before the continuation was): continue it with agentActions.continueRun`,
    { runId, path: `state.runs.${runId}` },
  );
}

/**
 * Restores the conversation (`restoreConversation`) and then resumes each running run it
 * can from its cursor, once the conversation's actor is `ready`. A restore that fails, or a
 * resumed stream that breaks off, is the conversation's last error.
 */
export function restoreAndResume(
  core: RuntimeCore,
  options: ConversationCheckpointOptions,
  stream: (
    input: unknown,
    provider: AnyAgentProvider,
    continuation: undefined,
    autoDepth: number,
    restored: RestoredRun,
  ) => Promise<unknown>,
  failed: (error: unknown) => void,
): Promise<void> {
  const { status } = core;
  const canResume = (runId: string) => {
    const provider = core.providerOf(runId);
    return provider.capabilities.resumable === true && provider.transport.resume !== undefined;
  };
  return restoreConversation(core, options, core, canResume)
    .then(({ resume, error }) => {
      if (status.destroyed) return;
      core.send({ type: 'restore.settled' });
      if (error !== undefined) {
        status.error = error;
        if (AgentCheckpointError.isInstance(error)) status.checkpointError = error;
      }
      core.schedule();
      for (const run of resume) stream(run.input, core.providerOf(run.runId), undefined, 0, run).catch(failed);
    })
    .catch((error: unknown) => {
      // Destroyed while restoring, the store it was filling is gone: there is nothing to restore into.
      if (!status.destroyed) throw error;
    });
}

/** The conversation's checkpoint saver, when it has a storage: a save's failure is the view's `checkpointError`. */
export function createConversationSaver(
  core: RuntimeCore,
  storage: AgentCheckpointStorage | undefined,
  timing: Pick<AgentCheckpointCoordinatorOptions, 'throttleMs' | 'saveTimeoutMs'> | undefined,
): AgentCheckpointCoordinator | undefined {
  if (storage === undefined) return undefined;
  return createAgentCheckpointCoordinator({
    storage,
    sessionId: core.sessionId,
    build: () => buildConversationCheckpoint(core),
    ...timing,
    onError: (error) => {
      core.status.checkpointError = error;
      core.schedule();
    },
  });
}
