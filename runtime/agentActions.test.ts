import { describe, expect, it } from 'vitest';
import { selectPendingInput, selectToolCall, selectToolCallAttempts } from '../machines/selectors';
import { createAgentCommandFactory } from '../protocol/createAgentCommandFactory';
import { getAgentEntityKey } from '../protocol/getAgentEntityKey';
import { commandRejection as rejection } from '../tests/support/commandRejection';
import { createRemoteRuntime, type RemoteRun, requestRunWaitingOnTool } from '../tests/support/remoteRuntime';
import { getAgentActionKey } from './agentCommandKeys';
import { createXChatRuntime } from './createXChatRuntime';

const tick = () => new Promise((resolve) => setTimeout(resolve, 0));

async function settle() {
  for (let index = 0; index < 5; index += 1) await tick();
}

/** A running run with one waiting approval (version 2, editable unless said otherwise). */
async function runWithApproval(remote: ReturnType<typeof createRemoteRuntime>, editable?: boolean) {
  const chat = createXChatRuntime({ provider: remote.provider, sessionId: 'session-1' });
  const started = remote.nextRun();
  const result = chat.request({ prompt: 'Delete the report' });
  const run = await started;
  run.push((events) => [
    events.emit('approval.requested', {
      approvalId: 'approval-1',
      description: 'Delete report.pdf?',
      version: 2,
      ...(editable === undefined ? {} : { editable }),
    }),
  ]);
  await settle();
  return { chat, run, result };
}

/** Answers approvals with `approval.resolved`, retries with a new attempt, cancels with `run.cancelled`. */
function answering(remote: ReturnType<typeof createRemoteRuntime>) {
  remote.setOnCommand(function* (command, run) {
    if (command.type === 'approval.resolve') {
      const { approvalId, decision, data } = command.payload;
      yield run.events.emit(
        'approval.resolved',
        data === undefined ? { approvalId, decision } : { approvalId, decision, data },
      );
    }
    if (command.type === 'tool.retry') {
      const retried = `${command.payload.toolCallId}-2`;
      yield run.events.emit('tool.requested', {
        toolCallId: retried,
        name: 'search',
        attempt: 2,
        retryOf: command.payload.toolCallId,
      });
      yield run.events.emit('tool.arguments_completed', { toolCallId: retried, arguments: '{"q":"paris"}' });
      yield run.events.emit('tool.completed', { toolCallId: retried, result: { hits: 3 } });
    }
    if (command.type === 'run.cancel')
      yield* run.events.close({ type: 'cancelled', reason: command.payload.reason ?? 'user' });
  });
}

describe('agentActions.resolveApproval on a running run', () => {
  it('sends the decision through executeCommand; only the returned event resolves the approval', async () => {
    const remote = createRemoteRuntime();
    answering(remote);
    const { chat, run } = await runWithApproval(remote);
    const pending = chat.agentActions.resolveApproval({
      runId: run.runId,
      approvalId: 'approval-1',
      decision: 'modified',
      data: { path: 'draft.pdf' },
      expectedVersion: 2,
    });
    const actionKey = getAgentActionKey({ runId: run.runId, type: 'approval.resolve', entityId: 'approval-1' });
    const submitting = chat.getSnapshot();
    const commandId = submitting.latestCommandByAction[actionKey] as string;
    expect(submitting.commandStates[commandId]).toMatchObject({ status: 'submitting', key: actionKey });
    const result = await pending;
    expect(result).toEqual({ commandId, idempotencyKey: `idempotency:${commandId}` });
    expect(remote.calls).toHaveLength(1);
    expect(remote.calls[0]).toMatchObject({ type: 'approval.resolve', runId: run.runId, sessionId: 'session-1' });
    const { agentState, commandStates } = chat.getSnapshot();
    expect(agentState.approvals[getAgentEntityKey(run.runId, 'approval-1')]).toMatchObject({
      status: 'resolved',
      decision: 'modified',
      resolvedData: { path: 'draft.pdf' },
    });
    expect(commandStates[commandId]).toMatchObject({ status: 'succeeded' });
    expect(commandStates[commandId]?.error).toBeUndefined();
    expect(agentState.issues).toEqual([]);
    // The command never entered AgentState.
    expect(JSON.stringify(agentState)).not.toContain(commandId);
  });

  it.each([
    [{ expectedVersion: 1 }, /approval "approval-1" is at version 2, not the expected 1/],
    [{ decision: 'maybe' }, /Invalid approval.resolve: .*decision/],
  ])('refuses %o without creating a command or calling the provider', async (change, message) => {
    const remote = createRemoteRuntime();
    const { chat, run } = await runWithApproval(remote);
    const error = await rejection(
      chat.agentActions.resolveApproval({
        runId: run.runId,
        approvalId: 'approval-1',
        decision: 'approved',
        ...(change as object),
      }),
    );
    expect(error.code).toBe('invalid_command');
    expect(error.message).toMatch(message);
    expect(remote.calls).toEqual([]);
    expect(chat.getSnapshot().commandStates).toEqual({});
    expect(chat.getSnapshot().latestCommandByAction).toEqual({});
  });

  it('refuses a modified decision when the approval says editable: false, and accepts approved', async () => {
    const remote = createRemoteRuntime();
    answering(remote);
    const { chat, run } = await runWithApproval(remote, false);
    const refused = await rejection(
      chat.agentActions.resolveApproval({ runId: run.runId, approvalId: 'approval-1', decision: 'modified', data: 1 }),
    );
    expect(refused.message).toMatch(/may not be modified \(editable: false\)/);
    await chat.agentActions.resolveApproval({ runId: run.runId, approvalId: 'approval-1', decision: 'approved' });
    expect(remote.calls.map((call) => call.type)).toEqual(['approval.resolve']);
  });

  it('refuses a second decision while the first is submitting, and one on a resolved approval', async () => {
    const remote = createRemoteRuntime();
    let release: () => void = () => undefined;
    remote.setOnCommand(async function* (command, run) {
      await new Promise<void>((resolve) => {
        release = resolve;
      });
      if (command.type === 'approval.resolve') {
        yield run.events.emit('approval.resolved', { approvalId: 'approval-1', decision: command.payload.decision });
      }
    });
    const { chat, run } = await runWithApproval(remote);
    const first = chat.agentActions.resolveApproval({
      runId: run.runId,
      approvalId: 'approval-1',
      decision: 'approved',
    });
    const second = await rejection(
      chat.agentActions.resolveApproval({ runId: run.runId, approvalId: 'approval-1', decision: 'rejected' }),
    );
    expect(second.message).toMatch(/a decision on approval "approval-1" is already submitting/);
    await tick();
    release();
    await first;
    const third = await rejection(
      chat.agentActions.resolveApproval({ runId: run.runId, approvalId: 'approval-1', decision: 'rejected' }),
    );
    expect(third.message).toMatch(/approval "approval-1" is resolved \(approved\), not waiting/);
    expect(remote.calls).toHaveLength(1);
  });

  it('refuses missing targets, ended runs and other sessions by name', async () => {
    const remote = createRemoteRuntime();
    const { chat, run } = await runWithApproval(remote);
    const missing = await rejection(
      chat.agentActions.resolveApproval({ runId: run.runId, approvalId: 'nope', decision: 'approved' }),
    );
    expect(missing.message).toMatch(/approval "nope" does not exist in run/);
    const unknownRun = await rejection(chat.agentActions.cancelRun({ runId: 'elsewhere' }));
    expect(unknownRun.message).toMatch(/run "elsewhere" is not a run of session "session-1"/);
    run.push((events) => events.close({ type: 'failed', error: { message: 'boom' } }));
    run.end();
    await settle();
    const ended = await rejection(
      chat.agentActions.resolveApproval({ runId: run.runId, approvalId: 'approval-1', decision: 'approved' }),
    );
    expect(ended.message).toMatch(/is failed: an ended run takes no commands/);
    expect(remote.calls).toEqual([]);
  });

  it('reuses the idempotency key when the same decision is sent again after a failure; a changed one is new', async () => {
    const remote = createRemoteRuntime();
    let failures = 1;
    remote.setOnCommand(function* (command, run) {
      if (failures > 0) {
        failures -= 1;
        throw new Error('connection reset');
      }
      if (command.type === 'approval.resolve') {
        yield run.events.emit('approval.resolved', { approvalId: 'approval-1', decision: command.payload.decision });
      }
    });
    const { chat, run } = await runWithApproval(remote);
    const target = { runId: run.runId, approvalId: 'approval-1' };
    const failed = await rejection(chat.agentActions.resolveApproval({ ...target, decision: 'approved' }));
    expect(failed.code).toBe('provider_error');
    expect(failed.message).toMatch(/connection reset/);
    const [firstId] = Object.keys(chat.getSnapshot().commandStates);
    expect(chat.getSnapshot().commandStates[firstId as string]).toMatchObject({ status: 'failed', error: failed });
    // The approval went back to waiting: the same decision is the same command, sent again.
    const again = await chat.agentActions.resolveApproval({ ...target, decision: 'approved' });
    expect(again.commandId).toBe(firstId);
    expect(remote.calls.map((call) => call.idempotencyKey)).toEqual([again.idempotencyKey, again.idempotencyKey]);
    expect(remote.calls[1]?.timestamp).toBeGreaterThanOrEqual(remote.calls[0]?.timestamp as number);
  });

  it('makes a new command with a new key for a changed decision', async () => {
    const remote = createRemoteRuntime();
    let failures = 1;
    remote.setOnCommand(function* (command, run) {
      if (failures-- > 0) throw new Error('offline');
      if (command.type === 'approval.resolve') {
        yield run.events.emit('approval.resolved', { approvalId: 'approval-1', decision: command.payload.decision });
      }
    });
    const { chat, run } = await runWithApproval(remote);
    const target = { runId: run.runId, approvalId: 'approval-1' };
    await rejection(chat.agentActions.resolveApproval({ ...target, decision: 'approved' }));
    const changed = await chat.agentActions.resolveApproval({ ...target, decision: 'rejected' });
    expect(remote.calls[0]?.idempotencyKey).not.toBe(changed.idempotencyKey);
    const { commandStates, latestCommandByAction } = chat.getSnapshot();
    // The older command keeps its state; the action points at the newer one.
    expect(Object.values(commandStates).map((state) => state.status)).toEqual(['failed', 'succeeded']);
    expect(Object.values(latestCommandByAction)).toEqual([changed.commandId]);
  });

  it('rejects with unsupported_capability, calling nothing, when the provider does not declare the command', async () => {
    const remote = createRemoteRuntime({ commands: ['run.cancel'] });
    const { chat, run } = await runWithApproval(remote);
    const error = await rejection(
      chat.agentActions.resolveApproval({ runId: run.runId, approvalId: 'approval-1', decision: 'approved' }),
    );
    expect(error.code).toBe('unsupported_capability');
    expect(remote.calls).toEqual([]);
    expect(chat.getSnapshot().commandStates).toEqual({});
  });
});

describe('agentActions.retryTool', () => {
  async function runWithFailedTool(remote: ReturnType<typeof createRemoteRuntime>, retryable: boolean) {
    const chat = createXChatRuntime({ provider: remote.provider, sessionId: 'session-1' });
    const started = remote.nextRun();
    const result = chat.request({ prompt: 'Search' });
    const run = await started;
    run.push((events) => [
      events.emit('tool.requested', { toolCallId: 'call-1', name: 'search' }),
      events.emit('tool.arguments_completed', { toolCallId: 'call-1', arguments: '{"q":"paris"}' }),
      events.emit('tool.failed', { toolCallId: 'call-1', error: { message: 'timeout', retryable } }),
    ]);
    await settle();
    return { chat, run, result };
  }

  it('retries a retryable failure as a new attempt; the failed call stays as history', async () => {
    const remote = createRemoteRuntime();
    answering(remote);
    const { chat, run } = await runWithFailedTool(remote, true);
    await chat.agentActions.retryTool({ runId: run.runId, toolCallId: 'call-1' });
    const state = chat.getSnapshot().agentState;
    expect(selectToolCall(state, { runId: run.runId, toolCallId: 'call-1' })).toMatchObject({
      status: 'failed',
      attempt: 1,
    });
    expect(selectToolCall(state, { runId: run.runId, toolCallId: 'call-1-2' })).toMatchObject({
      status: 'completed',
      attempt: 2,
      retryOf: 'call-1',
      result: { hits: 3 },
    });
    for (const toolCallId of ['call-1', 'call-1-2']) {
      expect(
        selectToolCallAttempts(state, { runId: run.runId, toolCallId }).map((call) => [
          call.id,
          call.attempt,
          call.status,
        ]),
      ).toEqual([
        ['call-1', 1, 'failed'],
        ['call-1-2', 2, 'completed'],
      ]);
    }
    expect(selectToolCallAttempts(state, { runId: run.runId, toolCallId: 'nope' })).toEqual([]);
    // The failed call records its retry and takes no other, through a restore too.
    expect(selectToolCall(state, { runId: run.runId, toolCallId: 'call-1' })?.retriedBy).toBe('call-1-2');
    const again = await rejection(chat.agentActions.retryTool({ runId: run.runId, toolCallId: 'call-1' }));
    expect(again.message).toMatch(/tool call "call-1" was already retried as "call-1-2"/);
    chat.store.reset(JSON.parse(JSON.stringify(chat.store.getSnapshot())));
    const retryOnce = createAgentCommandFactory({ sessionId: 'session-1', runId: run.runId }).create('tool.retry', {
      toolCallId: 'call-1',
    });
    expect(chat.store.can(retryOnce)).toBe(false);
    expect(remote.calls).toHaveLength(1);
    expect(state.order.filter((ref) => ref.kind === 'toolCall').map((ref) => ref.key)).toEqual([
      getAgentEntityKey(run.runId, 'call-1'),
      getAgentEntityKey(run.runId, 'call-1-2'),
    ]);
  });

  it('refuses a failure that is not retryable, and a call that did not fail', async () => {
    const remote = createRemoteRuntime();
    const { chat, run } = await runWithFailedTool(remote, false);
    const error = await rejection(chat.agentActions.retryTool({ runId: run.runId, toolCallId: 'call-1' }));
    expect(error.message).toMatch(/tool call "call-1" failed without retryable: true/);
    run.push((events) => [events.emit('tool.requested', { toolCallId: 'call-2', name: 'search' })]);
    await settle();
    const notFailed = await rejection(chat.agentActions.retryTool({ runId: run.runId, toolCallId: 'call-2' }));
    expect(notFailed.message).toMatch(/tool call "call-2" is streaming_arguments, not failed/);
    expect(remote.calls).toEqual([]);
  });
});

describe('agentActions.cancelRun and abort, side by side', () => {
  it('cancelRun asks the runtime, waits for run.cancelled, then closes the stream without a second terminal', async () => {
    const remote = createRemoteRuntime();
    answering(remote);
    const { chat, run, result } = await runWithApproval(remote);
    await chat.agentActions.cancelRun({ runId: run.runId, reason: 'user changed mind' });
    expect(remote.calls.map((call) => call.type)).toEqual(['run.cancel']);
    expect(await result).toMatchObject({ status: 'cancelled' });
    expect(run.aborted).toBe(true);
    const state = chat.getSnapshot().agentState;
    expect(state.runs[run.runId]).toMatchObject({ status: 'cancelled', reason: 'user changed mind' });
    // Nobody expired the approval: the run's terminal closed it, as the store closes what a run leaves open.
    expect(state.approvals[getAgentEntityKey(run.runId, 'approval-1')]).toMatchObject({
      status: 'cancelled',
      reason: 'run_terminated',
    });
    // One terminal event: the stream's own closing events after the cancel were dropped.
    expect(state.issues).toEqual([]);
    // The run has ended: its command states are dropped from memory.
    expect(chat.getSnapshot().commandStates).toEqual({});
  });

  it('cancelRun fails after the timeout when the runtime never confirms, and the run stays running', async () => {
    const remote = createRemoteRuntime();
    remote.setOnCommand(function* () {
      // The runtime acknowledges the command and never cancels.
    });
    const chat = createXChatRuntime({ provider: remote.provider, sessionId: 'session-1', cancelTimeoutMs: 30 });
    const started = remote.nextRun();
    const result = chat.request({ prompt: 'Go' });
    const run = await started;
    const cancelling = chat.agentActions.cancelRun({ runId: run.runId });
    const blocked = await rejection(chat.agentActions.cancelRun({ runId: run.runId }));
    expect(blocked.message).toMatch(/is being cancelled: later commands are refused/);
    const error = await rejection(cancelling);
    expect(error).toMatchObject({ code: 'interrupted', retryable: true });
    expect(error.message).toMatch(/did not confirm the cancel .* within 30 ms; the run stays as it is/);
    expect(chat.getSnapshot().agentState.runs[run.runId]?.status).toBe('running');
    expect(run.aborted).toBe(false);
    // The lane is open again: a later command goes through.
    remote.setOnCommand(function* (_command, remoteRun) {
      yield* remoteRun.events.close({ type: 'cancelled', reason: 'second try' });
    });
    await chat.agentActions.cancelRun({ runId: run.runId });
    expect((await result).status).toBe('cancelled');
  });

  it('abort drops the local stream at once and never calls executeCommand', async () => {
    const remote = createRemoteRuntime();
    answering(remote);
    const { chat, run, result } = await runWithApproval(remote);
    chat.abort();
    expect(await result).toMatchObject({ status: 'cancelled' });
    expect(run.aborted).toBe(true);
    expect(remote.calls).toEqual([]);
    expect(chat.getSnapshot().agentState.runs[run.runId]).toMatchObject({ status: 'cancelled', reason: 'aborted' });
  });
});

describe('the command lanes', () => {
  it("executes one run's commands one at a time, and different runs' in parallel", async () => {
    const remote = createRemoteRuntime();
    const log: string[] = [];
    const releases: Array<() => void> = [];
    remote.setOnCommand(async function* (command, run) {
      const name = `${run.runId === remote.runs[0]?.runId ? 'A' : 'B'}:${command.type === 'approval.resolve' ? command.payload.approvalId : command.type}`;
      log.push(`start ${name}`);
      await new Promise<void>((resolve) => releases.push(resolve));
      log.push(`end ${name}`);
      if (command.type === 'approval.resolve') {
        yield run.events.emit('approval.resolved', { approvalId: command.payload.approvalId, decision: 'approved' });
      }
    });
    const chat = createXChatRuntime({ provider: remote.provider, sessionId: 'session-1' });
    const runs: RemoteRun[] = [];
    for (const prompt of ['A', 'B']) {
      const started = remote.nextRun();
      void chat.request({ prompt });
      const run = await started;
      run.push((events) => [
        events.emit('approval.requested', { approvalId: 'x' }),
        events.emit('approval.requested', { approvalId: 'y' }),
      ]);
      runs.push(run);
    }
    await settle();
    const [a, b] = runs as [RemoteRun, RemoteRun];
    const done = [
      chat.agentActions.resolveApproval({ runId: a.runId, approvalId: 'x', decision: 'approved' }),
      chat.agentActions.resolveApproval({ runId: a.runId, approvalId: 'y', decision: 'approved' }),
      chat.agentActions.resolveApproval({ runId: b.runId, approvalId: 'x', decision: 'approved' }),
    ];
    await settle();
    expect(log).toEqual(['start A:x', 'start B:x']);
    releases.shift()?.();
    await settle();
    expect(log).toEqual(['start A:x', 'start B:x', 'end A:x', 'start A:y']);
    for (const release of releases.splice(0)) release();
    await settle();
    releases.shift()?.();
    await Promise.all(done);
    expect(log.filter((line) => line.startsWith('end'))).toHaveLength(3);
  });
});

describe('the agent loop', () => {
  it('marks a client tool that failed as executed by the client, as one that completed', async () => {
    const remote = createRemoteRuntime();
    const chat = createXChatRuntime({ provider: remote.provider, sessionId: 'session-1', autoContinue: false });
    const run = await requestRunWaitingOnTool(chat, remote);
    const submitted = await chat.agentActions.submitToolResult({
      runId: run.runId,
      toolCallId: 'call-1',
      error: { message: 'The location is not shared', code: 'denied' },
    });
    expect(chat.getSnapshot().agentState.toolCalls[getAgentEntityKey(run.runId, 'call-1')]).toMatchObject({
      status: 'failed',
      error: { message: 'The location is not shared', code: 'denied' },
      meta: { agentMachines: { executedBy: 'client', commandId: submitted.commandId } },
    });
  });

  it('settles a client tool of a waiting run, then continues the conversation with the result in its history', async () => {
    const remote = createRemoteRuntime();
    const chat = createXChatRuntime({ provider: remote.provider, sessionId: 'session-1' });
    const run = await requestRunWaitingOnTool(chat, remote);
    expect(selectPendingInput(chat.getSnapshot().agentState, run.runId).toolCalls).toHaveLength(1);
    const second = remote.nextRun();
    const submitted = await chat.agentActions.submitToolResult({
      runId: run.runId,
      toolCallId: 'call-1',
      result: { celsius: 14 },
    });
    const continuation = await second;
    expect(remote.calls).toEqual([]);
    expect(continuation.options.continuation).toEqual({ runId: run.runId, approvals: [] });
    expect(continuation.input).toEqual({ prompt: 'Weather in Paris?' });
    const history = continuation.options.history;
    expect(history?.toolCalls[getAgentEntityKey(run.runId, 'call-1')]).toMatchObject({
      status: 'completed',
      result: { celsius: 14 },
      meta: { agentMachines: { executedBy: 'client', commandId: submitted.commandId } },
    });
    continuation.push((events) => [
      events.emit('message.started', { messageId: 'answer', role: 'assistant' }),
      events.emit('message.delta', { messageId: 'answer', delta: 'It is 14 °C.' }),
      events.emit('message.completed', { messageId: 'answer' }),
      events.emit('run.completed', {}),
    ]);
    continuation.end();
    await settle();
    const state = chat.getSnapshot().agentState;
    expect(state.runs[continuation.runId]).toMatchObject({ status: 'completed', continuesRunId: run.runId });
    expect(state.runs[run.runId]).toMatchObject({ status: 'completed' });
    expect(chat.getSnapshot().messages.map(({ message }) => [message.role, message.content])).toEqual([
      ['user', 'Weather in Paris?'],
      ['assistant', 'It is 14 °C.'],
    ]);
    expect(state.issues).toEqual([]);
  });

  it('stops continuing automatically after maxAutoContinuations; continueRun goes on by hand', async () => {
    const remote = createRemoteRuntime();
    const chat = createXChatRuntime({ provider: remote.provider, sessionId: 'session-1', maxAutoContinuations: 1 });
    const callTool = (run: RemoteRun) => {
      run.push((events) => [
        events.emit('tool.requested', { toolCallId: 'call', name: 'again' }),
        events.emit('tool.arguments_completed', { toolCallId: 'call', arguments: '{}' }),
        events.emit('run.completed', { pendingToolCallIds: ['call'] }),
      ]);
      run.end();
    };
    const first = remote.nextRun();
    void chat.request({ prompt: 'Loop' });
    const run1 = await first;
    callTool(run1);
    await settle();
    const second = remote.nextRun();
    await chat.agentActions.submitToolResult({ runId: run1.runId, toolCallId: 'call', result: 1 });
    const run2 = await second;
    callTool(run2);
    await settle();
    await chat.agentActions.submitToolResult({ runId: run2.runId, toolCallId: 'call', result: 2 });
    await settle();
    expect(remote.runs).toHaveLength(2);
    const third = remote.nextRun();
    const manual = chat.agentActions.continueRun({ runId: run2.runId });
    const run3 = await third;
    expect(run3.options.continuation).toEqual({ runId: run2.runId, approvals: [] });
    run3.push((events) => [events.emit('run.completed', {})]);
    run3.end();
    expect(await manual).toMatchObject({ status: 'completed' });
  });

  it('keeps answers to an interrupt until every approval is answered, then resumes; the resumed run resolves them', async () => {
    const remote = createRemoteRuntime();
    const chat = createXChatRuntime({ provider: remote.provider, sessionId: 'session-1' });
    const first = remote.nextRun();
    void chat.request({ prompt: 'Book it' });
    const run = await first;
    run.push((events) => [
      events.emit('approval.requested', { approvalId: 'pay' }),
      events.emit('approval.requested', { approvalId: 'share' }),
      events.emit('run.completed', { pendingApprovalIds: ['pay', 'share'] }),
    ]);
    run.end();
    await settle();
    const second = remote.nextRun();
    const pay = chat.agentActions.resolveApproval({ runId: run.runId, approvalId: 'pay', decision: 'approved' });
    await settle();
    expect(remote.runs).toHaveLength(1);
    const share = chat.agentActions.resolveApproval({
      runId: run.runId,
      approvalId: 'share',
      decision: 'modified',
      data: { with: 'team' },
    });
    const resumed = await second;
    expect(resumed.options.continuation).toEqual({
      runId: run.runId,
      approvals: [
        { approvalId: 'pay', status: 'resolved', decision: 'approved' },
        { approvalId: 'share', status: 'resolved', decision: 'modified', data: { with: 'team' } },
      ],
    });
    expect(Object.values(chat.getSnapshot().commandStates).map((state) => state.status)).toEqual([
      'submitting',
      'submitting',
    ]);
    resumed.push((events) => [
      events.emit('approval.resolved', { approvalId: 'pay', decision: 'approved' }),
      events.emit('approval.resolved', { approvalId: 'share', decision: 'modified', data: { with: 'team' } }),
      events.emit('run.completed', {}),
    ]);
    resumed.end();
    await Promise.all([pay, share]);
    const state = chat.getSnapshot().agentState;
    expect(state.approvals[getAgentEntityKey(run.runId, 'share')]).toMatchObject({
      status: 'resolved',
      decision: 'modified',
      resolvedData: { with: 'team' },
    });
    expect(state.runs[resumed.runId]?.continuesRunId).toBe(run.runId);
    expect(selectPendingInput(state, run.runId)).toEqual({ toolCalls: [], approvals: [] });
    expect(state.issues).toEqual([]);
  });

  it('fails the answers when the resumed run ends without resolving them; the approval can be answered again', async () => {
    const remote = createRemoteRuntime();
    const chat = createXChatRuntime({ provider: remote.provider, sessionId: 'session-1' });
    const first = remote.nextRun();
    void chat.request({ prompt: 'Book it' });
    const run = await first;
    run.push((events) => [
      events.emit('approval.requested', { approvalId: 'pay' }),
      events.emit('run.completed', { pendingApprovalIds: ['pay'] }),
    ]);
    run.end();
    await settle();
    const second = remote.nextRun();
    const answer = chat.agentActions.resolveApproval({ runId: run.runId, approvalId: 'pay', decision: 'approved' });
    const resumed = await second;
    resumed.push((events) => events.close({ type: 'failed', error: { message: 'resume refused' } }));
    resumed.end();
    const error = await rejection(answer);
    expect(error.message).toMatch(/ended failed without resolving approval "pay"/);
    expect(selectPendingInput(chat.getSnapshot().agentState, run.runId).approvals.map((a) => a.id)).toEqual(['pay']);
    const third = remote.nextRun();
    const again = chat.agentActions.resolveApproval({ runId: run.runId, approvalId: 'pay', decision: 'approved' });
    const retried = await third;
    retried.push((events) => [
      events.emit('approval.resolved', { approvalId: 'pay', decision: 'approved' }),
      events.emit('run.completed', {}),
    ]);
    retried.end();
    await again;
    expect(chat.getSnapshot().agentState.approvals[getAgentEntityKey(run.runId, 'pay')]?.status).toBe('resolved');
  });

  it('refuses a cancel or a retry on a run that ended waiting for input, naming why', async () => {
    const remote = createRemoteRuntime();
    const chat = createXChatRuntime({ provider: remote.provider, sessionId: 'session-1', autoContinue: false });
    const first = remote.nextRun();
    void chat.request({ prompt: 'Go' });
    const run = await first;
    run.push((events) => [
      events.emit('tool.requested', { toolCallId: 'flaky', name: 'search' }),
      events.emit('tool.failed', { toolCallId: 'flaky', error: { message: 'down', retryable: true } }),
      events.emit('approval.requested', { approvalId: 'pay' }),
      events.emit('run.completed', { pendingApprovalIds: ['pay'] }),
    ]);
    run.end();
    await settle();
    const cancel = await rejection(chat.agentActions.cancelRun({ runId: run.runId }));
    expect(cancel.message).toMatch(/has completed and waits for input: it cannot be cancelled/);
    const retry = await rejection(chat.agentActions.retryTool({ runId: run.runId, toolCallId: 'flaky' }));
    expect(retry.message).toMatch(/waits for input: a failed tool call cannot be retried/);
    expect(remote.calls).toEqual([]);
    expect(chat.getSnapshot().commandStates).toEqual({});
  });

  it('continueRun answers the approvals left unanswered as cancelled', async () => {
    const remote = createRemoteRuntime();
    const chat = createXChatRuntime({ provider: remote.provider, sessionId: 'session-1', autoContinue: false });
    const first = remote.nextRun();
    void chat.request({ prompt: 'Book it' });
    const run = await first;
    run.push((events) => [
      events.emit('approval.requested', { approvalId: 'pay' }),
      events.emit('approval.requested', { approvalId: 'share' }),
      events.emit('run.completed', { pendingApprovalIds: ['pay', 'share'] }),
    ]);
    run.end();
    await settle();
    void chat.agentActions.resolveApproval({ runId: run.runId, approvalId: 'pay', decision: 'rejected' });
    await settle();
    expect(remote.runs).toHaveLength(1);
    const second = remote.nextRun();
    void chat.agentActions.continueRun({ runId: run.runId });
    const resumed = await second;
    expect(resumed.options.continuation?.approvals).toEqual([
      { approvalId: 'pay', status: 'resolved', decision: 'rejected' },
      { approvalId: 'share', status: 'cancelled' },
    ]);
  });

  it('sends a tool result of a running run to the provider as tool.submit_result', async () => {
    const remote = createRemoteRuntime();
    remote.setOnCommand(function* (command, run) {
      if (command.type === 'tool.submit_result') {
        yield run.events.emit('tool.completed', {
          toolCallId: command.payload.toolCallId,
          result: command.payload.result,
        });
      }
    });
    const chat = createXChatRuntime({ provider: remote.provider, sessionId: 'session-1' });
    const first = remote.nextRun();
    void chat.request({ prompt: 'Locate me' });
    const run = await first;
    run.push((events) => [
      events.emit('tool.requested', { toolCallId: 'gps', name: 'locate' }),
      events.emit('tool.arguments_completed', { toolCallId: 'gps', arguments: '{}' }),
    ]);
    await settle();
    await chat.agentActions.submitToolResult({ runId: run.runId, toolCallId: 'gps', result: { lat: 48.85 } });
    expect(remote.calls.map((call) => [call.type, call.payload])).toEqual([
      ['tool.submit_result', { toolCallId: 'gps', result: { lat: 48.85 } }],
    ]);
    expect(selectToolCall(chat.getSnapshot().agentState, { runId: run.runId, toolCallId: 'gps' })).toMatchObject({
      status: 'completed',
      result: { lat: 48.85 },
    });
    const twice = await rejection(
      chat.agentActions.submitToolResult({ runId: run.runId, toolCallId: 'gps', result: { lat: 0 } }),
    );
    expect(twice.message).toMatch(/tool call "gps" is completed: it takes no result/);
  });
});

describe('the runtime keeps commands apart from the conversation (seed 003 §20.3)', () => {
  it('keeps agentActions stable, reads the latest state, and leaves messages alone when command states change', async () => {
    const remote = createRemoteRuntime();
    let release: () => void = () => undefined;
    remote.setOnCommand(async function* (command, run) {
      await new Promise<void>((resolve) => {
        release = resolve;
      });
      if (command.type === 'approval.resolve') {
        yield run.events.emit('approval.resolved', { approvalId: 'approval-1', decision: 'approved' });
      }
    });
    const { chat, run } = await runWithApproval(remote);
    const actions = chat.agentActions;
    const before = chat.getSnapshot();
    const pending = actions.resolveApproval({ runId: run.runId, approvalId: 'approval-1', decision: 'approved' });
    const submitting = chat.getSnapshot();
    expect(chat.agentActions).toBe(actions);
    // A command state changed: the snapshot is new, the messages and AgentState are the same objects.
    expect(submitting).not.toBe(before);
    expect(submitting.messages).toBe(before.messages);
    expect(submitting.agentState).toBe(before.agentState);
    // Submitting is not requesting: the run's stream is what makes the chat request.
    expect(submitting.isRequesting).toBe(true);
    expect(Object.values(submitting.commandStates).map((state) => state.status)).toEqual(['submitting']);
    await tick();
    release();
    await pending;
    run.push((events) => [events.emit('run.completed', {})]);
    run.end();
    await settle();
    const ended = chat.getSnapshot();
    expect(ended.isRequesting).toBe(false);
    expect(ended.commandStates).toEqual({});
  });

  it('a release followed by a hold in the same task (StrictMode, a remount) aborts nothing', async () => {
    const remote = createRemoteRuntime();
    const { chat, run } = await runWithApproval(remote);
    const release = chat.retain();
    release();
    const hold = chat.retain();
    await settle();
    expect(run.aborted).toBe(false);
    expect(chat.getSnapshot().agentState.runs[run.runId]?.status).toBe('running');
    hold();
    await settle();
    expect(run.aborted).toBe(true);
  });

  it('releasing the last holder aborts the streams and the commands in flight, and keeps the store', async () => {
    const remote = createRemoteRuntime();
    const seen: AbortSignal[] = [];
    remote.setOnCommand(async function* (_command, _run, signal) {
      seen.push(signal);
      await new Promise((_resolve, reject) => signal.addEventListener('abort', () => reject(signal.reason)));
    });
    const { chat, run, result } = await runWithApproval(remote);
    const release = chat.retain();
    const pending = chat.agentActions.resolveApproval({
      runId: run.runId,
      approvalId: 'approval-1',
      decision: 'approved',
    });
    await settle();
    release();
    const error = await rejection(pending);
    expect(error).toMatchObject({ code: 'interrupted', retryable: true });
    expect(seen[0]?.aborted).toBe(true);
    expect((await result).status).toBe('cancelled');
    // The conversation stays: what streamed is still there.
    expect(chat.getSnapshot().agentState.approvals[getAgentEntityKey(run.runId, 'approval-1')]).toBeDefined();
  });
});
