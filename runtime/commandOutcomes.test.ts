import { describe, expect, it } from 'vitest';
import type { AgentCheckpoint } from '../checkpoint/AgentCheckpoint';
import { createMemoryAgentCheckpointStorage } from '../checkpoint/createMemoryAgentCheckpointStorage';
import { AgentProtocolError } from '../protocol/errors';
import { getAgentEntityKey } from '../protocol/getAgentEntityKey';
import type { AnyAgentProvider } from '../providers/AgentProvider';
import { commandRejection as rejection } from '../tests/support/commandRejection';
import { createRemoteRuntime, requestRunWaitingOnTool } from '../tests/support/remoteRuntime';
import { until } from '../tests/support/until';
import { createXChatRuntime } from './createXChatRuntime';

type Remote = ReturnType<typeof createRemoteRuntime>;
type Chat = ReturnType<typeof createXChatRuntime<{ prompt: string }, unknown, unknown, unknown>>;

/** A run of `chat` that is streaming and waits on approval `approval-1`. */
async function runWaitingOnApproval(chat: Chat, remote: Remote) {
  const started = remote.nextRun();
  const result = chat.request({ prompt: 'Delete the report' });
  const run = await started;
  run.push((events) => [events.emit('approval.requested', { approvalId: 'approval-1' })]);
  const key = getAgentEntityKey(run.runId, 'approval-1');
  await until(() => chat.getSnapshot().agentState.approvals[key] !== undefined, 'the approval');
  return { run, result };
}

/** Answers every approval.resolve by resolving approval-1 as asked. */
function resolvingApprovals(remote: Remote) {
  remote.setOnCommand(function* (command, run) {
    if (command.type !== 'approval.resolve') return;
    yield run.events.emit('approval.resolved', { approvalId: 'approval-1', decision: command.payload.decision });
  });
}

/** The stored checkpoint of `sessionId`, changed by `change` and saved back. */
async function editCheckpoint(
  storage: ReturnType<typeof createMemoryAgentCheckpointStorage>,
  sessionId: string,
  change: (checkpoint: AgentCheckpoint) => void,
) {
  const checkpoint = (await storage.load(sessionId)) as AgentCheckpoint;
  change(checkpoint);
  await storage.save(checkpoint);
}

describe('a command refused before it is made', () => {
  it.each<[string, (provider: AnyAgentProvider) => unknown]>([
    [
      'declares no commands',
      (provider) => ({
        ...provider,
        capabilities: { ...provider.capabilities, commands: undefined },
      }),
    ],
    [
      'declares the command but has no executeCommand',
      (provider) => ({
        ...provider,
        executeCommand: undefined,
      }),
    ],
  ])('rejects with unsupported_capability, calling nothing, when the provider %s', async (_, change) => {
    const remote = createRemoteRuntime();
    const provider = change(remote.provider as AnyAgentProvider) as AnyAgentProvider;
    const chat = createXChatRuntime({ provider, sessionId: 'session-1' }) as unknown as Chat;
    const { run } = await runWaitingOnApproval(chat, remote);
    const error = await rejection(
      chat.agentActions.resolveApproval({ runId: run.runId, approvalId: 'approval-1', decision: 'approved' }),
    );
    expect({ code: error.code, message: error.message }).toEqual({
      code: 'unsupported_capability',
      message: 'Provider "remote" does not support approval.resolve',
    });
    expect(remote.calls).toEqual([]);
    expect(chat.getSnapshot().commandStates).toEqual({});
  });
});

describe('a cancel whose run ends otherwise', () => {
  it('fails with provider_error when the run completes instead of being cancelled', async () => {
    const remote = createRemoteRuntime();
    let answerCancel!: () => void;
    const cancelAnswered = new Promise<void>((resolve) => {
      answerCancel = resolve;
    });
    remote.setOnCommand(async function* (command, run) {
      if (command.type !== 'run.cancel') return;
      // The runtime takes the cancel, but the run finishes on its own stream first.
      run.push((events) => [events.emit('run.completed', {})]);
      await cancelAnswered;
    });
    const chat = createXChatRuntime({ provider: remote.provider, sessionId: 'session-1' });
    const started = remote.nextRun();
    const result = chat.request({ prompt: 'Go' });
    const run = await started;
    const cancelling = chat.agentActions.cancelRun({ runId: run.runId });
    await until(() => chat.getSnapshot().agentState.runs[run.runId]?.status === 'completed', 'the run to complete');
    answerCancel();
    const error = await rejection(cancelling);
    expect({ code: error.code, message: error.message }).toEqual({
      code: 'provider_error',
      message: `Run "${run.runId}" ended completed instead of cancelled`,
    });
    run.end();
    expect((await result).status).toBe('completed');
    expect(chat.getSnapshot().agentState.issues).toEqual([]);
  });

  it('succeeds when the run is not streamed here (restored stranded, say in another tab): there is no stream to close', async () => {
    const storage = createMemoryAgentCheckpointStorage();
    const remote = createRemoteRuntime();
    const first = createXChatRuntime({ provider: remote.provider, sessionId: 'trip', checkpointStorage: storage });
    await first.restored;
    const started = remote.nextRun();
    void first.request({ prompt: 'Plan the trip' });
    const run = await started;
    run.push((events) => [events.emit('message.started', { messageId: 'm', role: 'assistant' })]);
    await until(() => first.getSnapshot().agentState.messages[getAgentEntityKey(run.runId, 'm')] !== undefined, 'm');
    await first.flushCheckpoint();
    // Saved by a version that kept no last sequence for the run: its commands' answers are checked from 0.
    await editCheckpoint(storage, 'trip', (checkpoint) => {
      delete checkpoint.state.lastSequenceByRun[run.runId];
    });

    const initialSequences: number[] = [];
    const executeCommand = remote.provider.executeCommand as NonNullable<AnyAgentProvider['executeCommand']>;
    const provider: AnyAgentProvider = {
      ...remote.provider,
      executeCommand: (command, options) => {
        initialSequences.push(options.initialSequence);
        return executeCommand(command, options);
      },
    };
    remote.setOnCommand(function* (command, remoteRun) {
      if (command.type === 'run.cancel') yield* remoteRun.events.close({ type: 'cancelled', reason: 'user' });
    });
    const second = createXChatRuntime({ provider, sessionId: 'trip', checkpointStorage: storage });
    await second.restored;
    expect(second.getSnapshot().strandedRunIds).toEqual([run.runId]);
    await second.agentActions.cancelRun({ runId: run.runId });
    expect(initialSequences).toEqual([0]);
    expect(second.getSnapshot().agentState.runs[run.runId]).toMatchObject({ status: 'cancelled', reason: 'user' });
    expect(second.getSnapshot().commandStates).toEqual({});
    first.destroy();
    second.destroy();
  });
});

describe("a command whose answer the conversation's store refuses", () => {
  it('fails with protocol_error naming the refusal when a strict store refuses the answered event', async () => {
    const remote = createRemoteRuntime();
    remote.setOnCommand(function* (_command, run) {
      yield run.events.emit('approval.resolved', { approvalId: 'approval-unknown', decision: 'approved' });
    });
    const chat = createXChatRuntime({
      provider: remote.provider,
      sessionId: 'session-1',
      store: { protocolMode: 'strict' },
    });
    const { run } = await runWaitingOnApproval(chat, remote);
    const error = await rejection(
      chat.agentActions.resolveApproval({ runId: run.runId, approvalId: 'approval-1', decision: 'approved' }),
    );
    expect(error.code).toBe('protocol_error');
    expect(AgentProtocolError.isInstance(error.cause)).toBe(true);
    expect(error.message).toBe(`The command's events were refused: ${(error.cause as Error).message}`);
    const key = getAgentEntityKey(run.runId, 'approval-1');
    expect(chat.getSnapshot().agentState.approvals[key]?.status).toBe('waiting');
  });

  it('fails with protocol_error when a store listener throws a non-Error at the answer; the lane goes on', async () => {
    const remote = createRemoteRuntime();
    resolvingApprovals(remote);
    const chat = createXChatRuntime({ provider: remote.provider, sessionId: 'session-1' });
    const { run } = await runWaitingOnApproval(chat, remote);
    const key = getAgentEntityKey(run.runId, 'approval-1');
    let thrown = 0;
    const unsubscribe = chat.store.subscribe(() => {
      if (chat.store.getSnapshot().approvals[key]?.status === 'resolved' && thrown === 0) {
        thrown += 1;
        throw 'listener broke';
      }
    });
    const error = await rejection(
      chat.agentActions.resolveApproval({ runId: run.runId, approvalId: 'approval-1', decision: 'approved' }),
    );
    unsubscribe();
    expect({ code: error.code, message: error.message, cause: error.cause }).toEqual({
      code: 'protocol_error',
      message: "The command's events were refused: listener broke",
      cause: 'listener broke',
    });
    // The lane took the failure as the command's outcome: the next command of the run is carried out.
    run.push((events) => [events.emit('approval.requested', { approvalId: 'approval-2' })]);
    remote.setOnCommand(function* (_command, remoteRun) {
      yield remoteRun.events.emit('approval.resolved', { approvalId: 'approval-2', decision: 'rejected' });
    });
    const second = getAgentEntityKey(run.runId, 'approval-2');
    await until(() => chat.getSnapshot().agentState.approvals[second] !== undefined, 'approval-2');
    await chat.agentActions.resolveApproval({ runId: run.runId, approvalId: 'approval-2', decision: 'rejected' });
    expect(chat.getSnapshot().agentState.approvals[second]).toMatchObject({ status: 'resolved', decision: 'rejected' });
  });
});

describe('a client tool result of a run restored without its last sequence', () => {
  it('is numbered 1, the first event after what the checkpoint knows of the run', async () => {
    const storage = createMemoryAgentCheckpointStorage();
    const remote = createRemoteRuntime();
    const first = createXChatRuntime({ provider: remote.provider, sessionId: 'trip', checkpointStorage: storage });
    await first.restored;
    const run = await requestRunWaitingOnTool(first, remote);
    await first.flushCheckpoint();
    first.destroy();
    await editCheckpoint(storage, 'trip', (checkpoint) => {
      delete checkpoint.state.lastSequenceByRun[run.runId];
    });

    const second = createXChatRuntime({
      provider: remote.provider,
      sessionId: 'trip',
      checkpointStorage: storage,
      autoContinue: false,
    });
    await second.restored;
    await second.agentActions.submitToolResult({ runId: run.runId, toolCallId: 'call-1', result: { celsius: 14 } });
    const state = second.getSnapshot().agentState;
    expect(state.lastSequenceByRun[run.runId]).toBe(1);
    expect(state.toolCalls[getAgentEntityKey(run.runId, 'call-1')]).toMatchObject({
      status: 'completed',
      result: { celsius: 14 },
    });
  });
});
