import { describe, expect, it } from 'vitest';
import { createAgentCommandFactory } from '../protocol/createAgentCommandFactory';
import { runEvents } from '../tests/support/events';
import { AgentHostError } from './AgentHostError';
import { createMemoryEventLog } from './createMemoryEventLog';
import { SessionStates } from './SessionStates';
import { WaitingRunAnswers } from './WaitingRunAnswers';

const SESSION = 's1';

/** A host run that ended waiting for the approval of its tool call. */
function waitingRun() {
  const events = runEvents('r1', SESSION);
  return [
    events.create('run.started', {}, { meta: { agentMachines: { hostProvider: 'assistant' } } }),
    events.create('tool.requested', { toolCallId: 't1', name: 'deploy' }),
    events.create('tool.arguments_completed', { toolCallId: 't1', arguments: '{}' }),
    events.create('approval.requested', { approvalId: 'a1', toolCallId: 't1' }),
    events.create('run.completed', { pendingApprovalIds: ['a1'] }),
  ];
}

/** The run that continued it, as another request started and finished it. */
function finishedContinuation() {
  const events = runEvents('r2', SESSION);
  return [
    events.create('run.started', { continuesRunId: 'r1' }, { meta: { agentMachines: { hostProvider: 'assistant' } } }),
    events.create('run.completed', {}),
  ];
}

describe('WaitingRunAnswers', () => {
  it('refuses an answer run_ended when another request continued the run while this one was starting it', async () => {
    const log = createMemoryEventLog();
    await log.append(SESSION, waitingRun());
    const lost: string[] = [];
    const sessions = new SessionStates(log, {
      maxCachedSessions: 10,
      maxCachedStateBytes: 1 << 20,
      snapshotEvery: 1000,
      onLost: (sessionId) => lost.push(sessionId),
    });
    const answers = new WaitingRunAnswers({
      log,
      sessions,
      instanceId: 'i1',
      leaseMs: 1_000,
      timeoutMs: 1_000,
      now: Date.now,
      // The other request's continuation lands and ends first; starting this one is refused then.
      continueRun: async () => {
        await log.append(SESSION, finishedContinuation());
        throw new AgentHostError('invalid_request', 'Run "r1" does not wait for input: run "r2" continued it');
      },
    });
    const approve = createAgentCommandFactory({ sessionId: SESSION, runId: 'r1' }).create('approval.resolve', {
      approvalId: 'a1',
      decision: 'approved',
    });
    const outcome = await answers.answer(approve);
    expect(outcome).toEqual({
      status: 'failed',
      error: expect.objectContaining({ code: 'run_ended', message: 'Run "r1" was continued by run "r2"' }),
    });
    expect(lost).toEqual([]);
    sessions.destroy();
    await log.close();
  });
});
