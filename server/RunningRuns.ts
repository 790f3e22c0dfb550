import type { AgentState } from '../machines/agentState';
import type { AgentCommand } from '../protocol/commandSchemas';
import type { AgentEvent } from '../protocol/eventSchemas';
import { AgentCommandError } from '../providers/AgentCommandError';
import type { AgentRunContinuation, AnyAgentProvider } from '../providers/AgentProvider';
import { runAgentCommand } from '../providers/runAgentCommand';
import { type AgentReconnectOptions, runAgentProvider } from '../providers/runAgentProvider';
import { toAgentErrorInfo } from '../providers/toAgentErrorInfo';
import type { AgentCommandOutcome, AgentEventLog } from './AgentEventLog';
import { EventAppender } from './EventAppender';
import { toSafeEvent } from './safeEventErrors';
import { withHostProvider } from './waitingRuns';

/** One run this instance runs. */
interface RunningRun {
  provider: AnyAgentProvider;
  controller: AbortController;
  appender: EventAppender;
  /** The sequence of the run's last event so far: a command's events come after it. */
  lastSequence: number;
  renewal: ReturnType<typeof setInterval>;
  /** The run ended here: a renewal answered after it (the lease released meanwhile) means nothing. */
  ended: boolean;
  done: Promise<void>;
}

export interface StartRunOptions {
  sessionId: string;
  runId: string;
  provider: AnyAgentProvider;
  /** The provider's name on the host, noted on the run's `run.started` (`meta.agentMachines.hostProvider`). */
  providerName: string;
  /** The session's cursor before the run starts, noted on its `run.started` when it continues no run. */
  startsAfter?: string | undefined;
  input: unknown;
  history: AgentState;
  continuation?: AgentRunContinuation | undefined;
}

export interface RunningRunsOptions {
  log: AgentEventLog;
  instanceId: string;
  leaseMs: number;
  reconnect?: false | AgentReconnectOptions | undefined;
  now: () => number;
  /** After a batch of a run's events is in the log. */
  onAppended: (sessionId: string) => void;
  /** After a run ended and its events are in the log. */
  onRunEnded: (sessionId: string, runId: string) => Promise<void>;
  /** A run or the log failed in a way no client sees as an event. */
  onError: (error: unknown, context: { sessionId: string; runId: string }) => void;
}

const runKey = (sessionId: string, runId: string) => `${sessionId}\u0000${runId}`;

/**
 * The runs this host instance runs: each through `runAgentProvider` into the event log,
 * holding the run's lease (renewed every third of `leaseMs`; a run whose lease is lost is
 * aborted, as another instance may have ended it), and the commands for them.
 */
export class RunningRuns {
  private readonly runs = new Map<string, RunningRun>();
  /** Runs whose lease this instance took that have not started yet. */
  private readonly starting = new Set<string>();
  /** Commands being executed, by run and idempotency key. */
  private readonly commands = new Map<string, Promise<AgentCommandOutcome>>();

  constructor(private readonly options: RunningRunsOptions) {}

  get size(): number {
    return this.runs.size;
  }

  has(sessionId: string, runId: string): boolean {
    return this.runs.has(runKey(sessionId, runId));
  }

  /** Marks a run as about to start here (its lease is taken); the function it returns ends that. */
  reserve(sessionId: string, runId: string): () => void {
    const key = runKey(sessionId, runId);
    this.starting.add(key);
    return () => this.starting.delete(key);
  }

  /** Resolves once a reserved run started (or its reservation ended), or after `timeoutMs`. */
  async started(sessionId: string, runId: string, timeoutMs: number): Promise<void> {
    const key = runKey(sessionId, runId);
    for (let waited = 0; this.starting.has(key) && waited < timeoutMs; waited += 10) {
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  }

  /** Whether the provider of a run this instance runs takes the command (`run.cancel` always: by abort if not). */
  takes(command: AgentCommand): boolean {
    const run = this.runs.get(runKey(command.sessionId, command.runId));
    return command.type === 'run.cancel' || (run?.provider.capabilities.commands ?? []).includes(command.type);
  }

  /** Starts a run whose lease this instance holds; it goes on until it ends, whoever listens. */
  start(run: StartRunOptions): void {
    const { log, instanceId, leaseMs } = this.options;
    const { sessionId, runId } = run;
    const key = runKey(sessionId, runId);
    const controller = new AbortController();
    // When the lease was last extended: past most of `leaseMs` without a renewal, another
    // instance may take the run over, so this one stops writing before it could.
    let renewedAt = Date.now();
    const appender = new EventAppender(
      log,
      sessionId,
      (error) => {
        this.options.onError(error, { sessionId, runId });
        controller.abort(error);
      },
      () => this.options.onAppended(sessionId),
      () => Date.now() - renewedAt < leaseMs * 0.8,
    );
    const renewal = setInterval(() => {
      const asked = Date.now();
      log.renewRun(sessionId, runId, instanceId, leaseMs).then(
        (held) => {
          if (held) renewedAt = asked;
          else if (!entry.ended) {
            appender.fence(new Error('The run lease was lost: another instance may have ended the run'));
          }
        },
        (error) => {
          if (!entry.ended) this.options.onError(error, { sessionId, runId });
        },
      );
    }, leaseMs / 3);
    const entry: RunningRun = {
      provider: run.provider,
      controller,
      appender,
      lastSequence: 0,
      renewal,
      ended: false,
      done: Promise.resolve(),
    };
    entry.done = this.runToEnd(run, entry).finally(() => {
      clearInterval(renewal);
      this.runs.delete(key);
    });
    this.runs.set(key, entry);
  }

  /**
   * Carries out a command for a run this instance runs. `run.cancel` on a provider that does
   * not take it aborts the run, which ends `cancelled`.
   */
  executeCommand(command: AgentCommand): Promise<AgentCommandOutcome> {
    // A key being executed here is not executed again: the second request shares the first's outcome.
    const key = `${runKey(command.sessionId, command.runId)}\u0000${command.idempotencyKey}`;
    const running = this.commands.get(key);
    if (running !== undefined) return running;
    const outcome = this.executeOnce(command).finally(() => this.commands.delete(key));
    this.commands.set(key, outcome);
    return outcome;
  }

  private async executeOnce(command: AgentCommand): Promise<AgentCommandOutcome> {
    const run = this.runs.get(runKey(command.sessionId, command.runId));
    if (run === undefined) {
      return { status: 'failed', error: { code: 'run_ended', message: `Run "${command.runId}" is not running` } };
    }
    const declared = run.provider.capabilities.commands ?? [];
    if (command.type === 'run.cancel' && !declared.includes('run.cancel')) {
      run.controller.abort(command.payload.reason ?? 'cancelled');
      return { status: 'accepted', events: [] };
    }
    const events: AgentEvent[] = [];
    try {
      await runAgentCommand({
        provider: run.provider,
        command,
        initialSequence: run.lastSequence,
        now: this.options.now,
        onEvent: (event) => {
          const safe = toSafeEvent(event);
          events.push(safe);
          run.lastSequence = event.sequence;
          run.appender.push(safe);
        },
      });
    } catch (error) {
      const code = AgentCommandError.isInstance(error) ? error.code : 'provider_error';
      // The provider's own words may name upstream addresses or echo an upstream body: the
      // client gets what failed, the operator (`onError`) gets why.
      if (code === 'provider_error' || code === 'protocol_error') {
        this.options.onError(error, { sessionId: command.sessionId, runId: command.runId });
        const retryable = AgentCommandError.isInstance(error) && error.retryable;
        return {
          status: 'failed',
          error: { code, message: `The provider failed to execute ${command.type}`, retryable },
        };
      }
      return { status: 'failed', error: { ...toAgentErrorInfo(error), code } };
    }
    await run.appender.drain();
    return { status: 'accepted', events };
  }

  /** Aborts every run (they end `cancelled`) and waits for their events to reach the log. */
  async close(): Promise<void> {
    const runs = [...this.runs.values()];
    for (const run of runs) run.controller.abort(new Error('The host is closing'));
    await Promise.all(runs.map((run) => run.done));
  }

  private async runToEnd(run: StartRunOptions, entry: RunningRun): Promise<void> {
    const { log, instanceId } = this.options;
    const { sessionId, runId } = run;
    try {
      const result = await runAgentProvider({
        provider: run.provider,
        input: run.input,
        sessionId,
        runId,
        history: run.history,
        ...(run.continuation === undefined ? {} : { continuation: run.continuation }),
        signal: entry.controller.signal,
        ...(this.options.reconnect === undefined ? {} : { reconnect: this.options.reconnect }),
        now: this.options.now,
        onEvent: (event) => {
          entry.lastSequence = event.sequence;
          // Readers get a safe error; the operator gets the failure as it was, below.
          entry.appender.push(toSafeEvent(withHostProvider(event, run.providerName, run.startsAfter)));
        },
      });
      if (result.error !== undefined) this.options.onError(result.error, { sessionId, runId });
    } catch (error) {
      // The runner ended the run with its own events first; what is left is for the operator.
      this.options.onError(error, { sessionId, runId });
    }
    await entry.appender.drain();
    entry.ended = true;
    clearInterval(entry.renewal);
    try {
      // A run whose events stopped reaching the log is not over there: its lease is left to
      // expire, and then any instance fails it (`host_lost`) from what the log holds.
      if (!entry.appender.fenced) await log.releaseRun(sessionId, runId, instanceId);
      await this.options.onRunEnded(sessionId, runId);
    } catch (error) {
      this.options.onError(error, { sessionId, runId });
    }
  }
}
