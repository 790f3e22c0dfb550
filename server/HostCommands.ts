import type { AgentCommand } from '../protocol/commandSchemas';
import type { AgentCommandOutcome, AgentEventLog } from './AgentEventLog';
import { failed } from './AgentHostError';
import { stableJson } from './hostRequests';
import { HOST_LOST, type OrphanReaper } from './OrphanReaper';
import type { RunningRuns } from './RunningRuns';
import type { SessionStates } from './SessionStates';
import type { WaitingRunAnswers } from './WaitingRunAnswers';
import { endedWaiting, isAnswerCommand } from './waitingRuns';

export interface HostCommandsOptions {
  log: AgentEventLog;
  sessions: SessionStates;
  runs: RunningRuns;
  reaper: OrphanReaper;
  /** Answers to runs that ended waiting for input, which any instance takes. */
  waiting: WaitingRunAnswers;
  instanceId: string;
  leaseMs: number;
  /** How long a command waits for the instance that runs its run. */
  timeoutMs: number;
  /** How long a command's outcome is kept under its key. */
  recordMs: number;
  now: () => number;
}

const hex = (bytes: ArrayBuffer) =>
  Array.from(new Uint8Array(bytes), (byte) => byte.toString(16).padStart(2, '0')).join('');

/**
 * What makes two commands with one idempotency key the same command: a SHA-256 of the command
 * (its type, run and payload), so a record holds 64 characters whatever the payload's size.
 */
export async function fingerprintOf(command: AgentCommand): Promise<string> {
  const text = stableJson({ type: command.type, runId: command.runId, payload: command.payload });
  return `sha256:${hex(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(text)))}`;
}

/**
 * A host's commands: each executed once per idempotency key across instances, by the
 * instance that runs its run (signalled through the log when that is another one), with
 * the first outcome kept under the key for everyone who sends it again. The answers to a run
 * that ended waiting for input are no running run's: the instance that gets them takes them
 * (`WaitingRunAnswers`).
 */
export class HostCommands {
  constructor(private readonly options: HostCommandsOptions) {}

  async execute(command: AgentCommand): Promise<AgentCommandOutcome> {
    const { log, timeoutMs, leaseMs } = this.options;
    const { sessionId, idempotencyKey } = command;
    // A command for a run the session never had stores nothing: its key is claimed only for
    // a run that exists, so keys cannot be piled up for made-up runs (or sessions).
    const unknown = await this.unknownRun(command);
    if (unknown !== undefined) return unknown;
    const fingerprint = await fingerprintOf(command);
    // Pending only while a first request can still be executing it: an instance that died
    // with the key claimed does not keep it from being tried again.
    const existing = await log.claimCommand(sessionId, idempotencyKey, fingerprint, timeoutMs + leaseMs);
    if (existing !== undefined) {
      if (existing.fingerprint !== fingerprint) {
        return failed('idempotency_conflict', `The key "${idempotencyKey}" was used for a different command`);
      }
      const record =
        existing.status === 'settled' ? existing : await log.awaitCommand(sessionId, idempotencyKey, { timeoutMs });
      if (record?.status === 'settled') return record.outcome;
      return failed('timeout', `The first request with the key "${idempotencyKey}" has not finished`);
    }
    const { outcome, settled } = await this.route(command);
    return settled ? outcome : this.record(command, outcome);
  }

  /** A command for a run this instance runs, checked against its provider and the session's machines first. */
  async executeHere(command: AgentCommand): Promise<AgentCommandOutcome> {
    const { runs, sessions, timeoutMs } = this.options;
    // Its lease taken, a run may still be writing its client's tool results before it starts.
    await runs.started(command.sessionId, command.runId, timeoutMs);
    if (!runs.has(command.sessionId, command.runId)) {
      return failed('run_ended', `Run "${command.runId}" is not running`);
    }
    if (!runs.takes(command)) {
      return failed('unsupported_capability', `The provider of run "${command.runId}" does not take ${command.type}`);
    }
    if (command.type !== 'run.cancel' && !(await sessions.can(command.sessionId, command))) {
      return failed('invalid_command', `The ${command.type} command does not apply to the run's state now`);
    }
    return runs.executeCommand(command);
  }

  /**
   * Keeps a command's outcome under its key, unless one is kept already (then that one
   * stands and is returned). A timeout is no outcome: the key stays pending until the
   * instance running the run settles it, or the pending record expires and a retry tries again.
   */
  async record(command: AgentCommand, outcome: AgentCommandOutcome): Promise<AgentCommandOutcome> {
    if (outcome.status === 'failed' && outcome.error.code === 'timeout') return outcome;
    const settled = { fingerprint: await fingerprintOf(command), outcome };
    return this.options.log.settleCommand(command.sessionId, command.idempotencyKey, settled, this.options.recordMs);
  }

  /** `unknown_run` when the session has no such run (no lease was ever taken for it, and the log has none of it). */
  private async unknownRun(command: AgentCommand): Promise<AgentCommandOutcome | undefined> {
    const { log, sessions } = this.options;
    const { sessionId, runId } = command;
    const unknown = failed('unknown_run', `Session has no run "${runId}"`);
    if ((await log.runOwner(sessionId, runId)).state !== 'unowned') return undefined;
    // A session the log holds nothing of has no runs: asked before its state is built, so a
    // made-up session id costs this instance no cached state either.
    const empty = (await log.lastCursor(sessionId)) === undefined && (await log.loadSnapshot(sessionId)) === undefined;
    if (empty) return unknown;
    if ((await sessions.sync(sessionId)).state.runs[runId] !== undefined) return undefined;
    return unknown;
  }

  /** Executes a command where its run runs; `settled` when the run's instance already recorded the outcome. */
  private async route(command: AgentCommand): Promise<{ outcome: AgentCommandOutcome; settled: boolean }> {
    const { log, sessions, reaper, waiting, instanceId } = this.options;
    const { sessionId, runId } = command;
    const gone = () => failed('run_unavailable', `The instance running run "${runId}" is gone`);
    if (isAnswerCommand(command)) {
      // A run that ended waiting for input is no instance's: its answers are taken here.
      const ended = (await sessions.sync(sessionId)).state.runs[runId];
      if (ended !== undefined && endedWaiting(ended)) return { outcome: await waiting.answer(command), settled: false };
    }
    const owner = await log.runOwner(sessionId, runId);
    if (owner.state === 'owned' && owner.owner === instanceId) {
      return { outcome: await this.executeHere(command), settled: false };
    }
    if (owner.state === 'owned') return this.forward(command, owner.owner);
    const { state } = await sessions.sync(sessionId);
    const run = state.runs[runId];
    if (run === undefined) return { outcome: failed('unknown_run', `Session has no run "${runId}"`), settled: false };
    if (owner.state === 'unowned' && run.status === 'running') {
      await reaper.reap(sessionId, runId);
      return { outcome: gone(), settled: false };
    }
    if (run.error?.code === HOST_LOST) return { outcome: gone(), settled: false };
    return { outcome: failed('run_ended', `Run "${runId}" has ended (${run.status})`), settled: false };
  }

  /** Signals the command to the instance that runs its run and waits for the outcome it records. */
  private async forward(
    command: AgentCommand,
    owner: string,
  ): Promise<{ outcome: AgentCommandOutcome; settled: boolean }> {
    const { log, reaper, leaseMs, timeoutMs, now } = this.options;
    const { sessionId, runId } = command;
    await log.signal(owner, { type: 'command', command });
    // Waits in steps of half a lease, so an instance that dies meanwhile is noticed then.
    const deadline = now() + timeoutMs;
    for (;;) {
      const step = Math.max(1, Math.min(leaseMs / 2, deadline - now()));
      const record = await log.awaitCommand(sessionId, command.idempotencyKey, { timeoutMs: step });
      if (record?.status === 'settled') return { outcome: record.outcome, settled: true };
      const current = await log.runOwner(sessionId, runId);
      if (current.state !== 'owned' || current.owner !== owner) break;
      if (now() >= deadline) {
        return {
          outcome: failed('timeout', `The instance running run "${runId}" did not answer in time`),
          settled: false,
        };
      }
    }
    // The run's instance let go of it without answering: it died, or the run ended meanwhile.
    if (await reaper.isLost(sessionId, runId)) {
      return { outcome: failed('run_unavailable', `The instance running run "${runId}" is gone`), settled: false };
    }
    return { outcome: failed('run_ended', `Run "${runId}" ended before it took the command`), settled: false };
  }
}
