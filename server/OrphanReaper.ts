import { createAgentEventFactory } from '../protocol/createAgentEventFactory';
import { AgentRunTracker } from '../providers/AgentRunTracker';
import type { AgentEventLog } from './AgentEventLog';
import type { RunningRuns } from './RunningRuns';
import type { SessionStates } from './SessionStates';

/** The error code a run fails with when the instance running it stopped before it ended. */
export const HOST_LOST = 'host_lost';

export interface OrphanReaperOptions {
  log: AgentEventLog;
  sessions: SessionStates;
  runs: RunningRuns;
  instanceId: string;
  leaseMs: number;
  /** A session is looked at most once per half of this. */
  heartbeatMs: number;
  now: () => number;
}

/**
 * Ends the runs whose instance is gone: a run still running in the log whose lease expired
 * before it ended. Whichever instance notices first (a reader waiting on the session, a
 * command for the run) takes the lease, fails what the run left open, fails the run with
 * `host_lost`, once, and releases it for good.
 */
export class OrphanReaper {
  /** When each followed session was last looked at. */
  private readonly checkedAt = new Map<string, number>();

  constructor(private readonly options: OrphanReaperOptions) {}

  /** Fails the run when it is running in the log and no instance holds its lease. */
  async reap(sessionId: string, runId: string): Promise<void> {
    const { log, sessions, instanceId, leaseMs, now } = this.options;
    const { state } = await sessions.sync(sessionId);
    if (state.runs[runId]?.status !== 'running') return;
    if (!(await log.claimRun(sessionId, runId, instanceId, leaseMs))) return;
    try {
      const { state: latest } = await sessions.sync(sessionId);
      if (latest.runs[runId]?.status !== 'running') return;
      const tracker = new AgentRunTracker();
      tracker.resume(runId, latest);
      const events = createAgentEventFactory({
        sessionId,
        runId,
        initialSequence: latest.lastSequenceByRun[runId] ?? 0,
        now,
      });
      const error = { code: HOST_LOST, message: 'The host instance running this run stopped before it ended' };
      await log.append(sessionId, tracker.close(events, { type: 'failed', error }));
    } finally {
      await log.releaseRun(sessionId, runId, instanceId);
    }
  }

  /** Whether the run was lost with its instance: reaped now, being reaped by another instance, or failed `host_lost`. */
  async isLost(sessionId: string, runId: string): Promise<boolean> {
    if ((await this.options.log.runOwner(sessionId, runId)).state === 'unowned') await this.reap(sessionId, runId);
    const run = (await this.options.sessions.sync(sessionId)).state.runs[runId];
    return run?.status === 'running' || run?.error?.code === HOST_LOST;
  }

  /** Reaps the session's orphaned runs (or only `runId`), at most once per half heartbeat per session. */
  async sweep(sessionId: string, runId?: string): Promise<void> {
    const { log, sessions, runs, heartbeatMs, now } = this.options;
    const at = now();
    if (at - (this.checkedAt.get(sessionId) ?? Number.NEGATIVE_INFINITY) < heartbeatMs / 2) return;
    this.checkedAt.set(sessionId, at);
    const { state } = await sessions.sync(sessionId);
    const candidates = runId !== undefined ? [runId] : Object.keys(state.runs);
    for (const candidate of candidates) {
      if (state.runs[candidate]?.status !== 'running' || runs.has(sessionId, candidate)) continue;
      const owner = await log.runOwner(sessionId, candidate);
      if (owner.state === 'unowned') await this.reap(sessionId, candidate);
    }
  }

  /** No reader follows the session on this instance any more. */
  forget(sessionId: string): void {
    this.checkedAt.delete(sessionId);
  }
}
