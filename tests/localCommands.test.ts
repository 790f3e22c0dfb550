import { afterEach, describe, expect, it } from 'vitest';
import type { AgentState } from '../machines/agentState';
import { type AgentStore, createAgentStore } from '../machines/createAgentStore';
import { isWaitingForInput } from '../machines/pendingInput';
import type { AgentCommand } from '../protocol/commandSchemas';
import { createAgentCommandFactory } from '../protocol/createAgentCommandFactory';
import { createAgentEventFactory } from '../protocol/createAgentEventFactory';
import type { AgentEvent } from '../protocol/eventSchemas';
import { getAgentEntityKey } from '../protocol/getAgentEntityKey';
import { AgentCommandError } from '../providers/AgentCommandError';
import type { AgentRunContinuation } from '../providers/AgentProvider';
import { createLocalAgentProvider } from '../providers/local/createLocalAgentProvider';
import type { LocalAgentScript } from '../providers/local/localAgentChunks';
import type { LocalAgentTurn } from '../providers/local/localAgentTurn';
import { runAgentCommand } from '../providers/runAgentCommand';
import { type AgentRunResult, runAgentProvider } from '../providers/runAgentProvider';

const sessionId = 'session-1';
const stores: AgentStore[] = [];

afterEach(() => {
  for (const store of stores.splice(0)) store.destroy();
});

type Provider = ReturnType<typeof createLocalAgentProvider>;

interface LiveRun {
  store: AgentStore;
  events: AgentEvent[];
  finished: Promise<AgentRunResult>;
  commands: ReturnType<typeof createAgentCommandFactory>;
}

let commandCount = 0;

/** Starts a run into `store` (a new one by default) and returns without waiting for it to end. */
function start(
  provider: Provider,
  options: {
    runId?: string;
    prompt?: string;
    store?: AgentStore;
    continuation?: AgentRunContinuation;
  } = {},
): LiveRun {
  const runId = options.runId ?? 'run-1';
  const store = options.store ?? createAgentStore();
  if (options.store === undefined) stores.push(store);
  const events: AgentEvent[] = [];
  const finished = runAgentProvider({
    provider,
    input: { prompt: options.prompt ?? 'Go' },
    sessionId,
    runId,
    history: store.getSnapshot(),
    ...(options.continuation === undefined ? {} : { continuation: options.continuation }),
    onEvent: (event, admission) => {
      events.push(event);
      store.dispatch(event, admission);
    },
  });
  const commands = createAgentCommandFactory({
    sessionId,
    runId,
    createCommandId: () => {
      commandCount += 1;
      return `command-${commandCount}`;
    },
  });
  return { store, events, finished, commands };
}

/** Resolves once the store's state satisfies `predicate`. */
function until(store: AgentStore, predicate: (state: AgentState) => boolean): Promise<AgentState> {
  return new Promise((resolve) => {
    const check = () => {
      const state = store.getSnapshot();
      if (!predicate(state)) return;
      unsubscribe();
      resolve(state);
    };
    const unsubscribe = store.subscribe(check);
    check();
  });
}

/** Sends a command straight to the provider, as `runAgentCommand` does, and collects what it yields. */
async function send(provider: Provider, store: AgentStore, command: AgentCommand): Promise<AgentEvent[]> {
  const yielded: AgentEvent[] = [];
  const stream = provider.executeCommand?.(command, {
    signal: new AbortController().signal,
    initialSequence: store.getSnapshot().lastSequenceByRun[command.runId] ?? 0,
  });
  if (stream === undefined) throw new Error('the local provider has no executeCommand');
  for await (const event of stream) yielded.push(event);
  return yielded;
}

function entity<Container extends 'toolCalls' | 'approvals' | 'messages'>(
  state: AgentState,
  container: Container,
  runId: string,
  id: string,
): AgentState[Container][string] | undefined {
  return state[container][getAgentEntityKey(runId, id)] as AgentState[Container][string] | undefined;
}

function expectIncreasingSequences(events: readonly AgentEvent[]): void {
  const sequences = events.map((event) => event.sequence);
  expect(sequences).toEqual([...sequences].sort((left, right) => left - right));
  expect(new Set(sequences).size).toBe(sequences.length);
}

function assistantTexts(state: AgentState, runId: string): string[] {
  return Object.values(state.messages)
    .filter((message) => message.runId === runId && message.role === 'assistant')
    .map((message) => String(message.content));
}

describe('local provider: approvals answered in the run', () => {
  const script: LocalAgentScript = {
    steps: [
      { type: 'text', deltas: ['I will delete ', 'two files.'] },
      {
        type: 'approval',
        description: 'Delete a.txt and b.txt?',
        risk: 'high',
        data: { files: ['a.txt', 'b.txt'] },
        version: 3,
        waitFor: 'command',
      },
      { type: 'text', deltas: ['Deleted.'] },
    ],
  };

  it('declares every command it carries out', () => {
    expect(createLocalAgentProvider({ script }).capabilities.commands).toEqual([
      'approval.resolve',
      'tool.retry',
      'run.cancel',
      'tool.submit_result',
    ]);
  });

  it('waits running; approved, it resolves the approval naming the command and plays the rest of the script', async () => {
    const provider = createLocalAgentProvider({ script });
    const run = start(provider);
    const waiting = await until(run.store, (state) => entity(state, 'approvals', 'run-1', 'approval-1') !== undefined);
    expect(waiting.runs['run-1']?.status).toBe('running');
    expect(entity(waiting, 'approvals', 'run-1', 'approval-1')).toMatchObject({ status: 'waiting', version: 3 });

    const approve = run.commands.create('approval.resolve', {
      approvalId: 'approval-1',
      decision: 'approved',
      expectedVersion: 3,
    });
    expect(run.store.can(approve)).toBe(true);
    // The same command resent (same idempotency key) is taken once.
    const [first, resent] = await Promise.all([
      send(provider, run.store, approve),
      send(provider, run.store, run.commands.resend(approve)),
    ]);
    expect([first, resent]).toEqual([[], []]);
    expect(await run.finished).toEqual({ runId: 'run-1', status: 'completed' });

    const state = run.store.getSnapshot();
    expect(entity(state, 'approvals', 'run-1', 'approval-1')).toMatchObject({
      status: 'resolved',
      decision: 'approved',
      data: { files: ['a.txt', 'b.txt'] },
      meta: { agentMachines: { resolvedBy: 'command', commandId: approve.commandId } },
    });
    expect(run.events.filter((event) => event.type === 'approval.resolved')).toHaveLength(1);
    expect(assistantTexts(state, 'run-1')).toEqual(['I will delete two files.', 'Deleted.']);
    expect(state.runs['run-1']).not.toHaveProperty('pendingApprovalIds');
    expect(state.issues).toEqual([]);
    expectIncreasingSequences(run.events);
  });

  it('modified, it resolves with the edited data and goes on', async () => {
    const provider = createLocalAgentProvider({ script });
    const run = start(provider);
    await until(run.store, (state) => entity(state, 'approvals', 'run-1', 'approval-1') !== undefined);
    await send(
      provider,
      run.store,
      run.commands.create('approval.resolve', {
        approvalId: 'approval-1',
        decision: 'modified',
        data: { files: ['a.txt'] },
      }),
    );
    await run.finished;
    const state = run.store.getSnapshot();
    expect(entity(state, 'approvals', 'run-1', 'approval-1')).toMatchObject({
      status: 'resolved',
      decision: 'modified',
      resolvedData: { files: ['a.txt'] },
    });
    expect(assistantTexts(state, 'run-1')).toEqual(['I will delete two files.', 'Deleted.']);
    expect(state.issues).toEqual([]);
  });

  it('rejected, it stops the script: the tool call the approval names is cancelled and the run completes', async () => {
    const provider = createLocalAgentProvider({
      script: {
        steps: [
          { type: 'tool', name: 'send_email', argumentDeltas: ['{"to":"team"}'] },
          { type: 'approval', description: 'Send the email?', toolCallId: 'tool-0', waitFor: 'command' },
          { type: 'text', deltas: ['Sent.'] },
        ],
      },
    });
    const run = start(provider);
    await until(run.store, (state) => entity(state, 'approvals', 'run-1', 'approval-1') !== undefined);
    await send(
      provider,
      run.store,
      run.commands.create('approval.resolve', { approvalId: 'approval-1', decision: 'rejected' }),
    );
    expect(await run.finished).toEqual({ runId: 'run-1', status: 'completed' });

    const state = run.store.getSnapshot();
    expect(entity(state, 'approvals', 'run-1', 'approval-1')).toMatchObject({
      status: 'resolved',
      decision: 'rejected',
    });
    expect(entity(state, 'toolCalls', 'run-1', 'tool-0')).toMatchObject({
      status: 'cancelled',
      reason: 'approval_rejected',
    });
    expect(assistantTexts(state, 'run-1')).toEqual([]);
    expect(state.runs['run-1']).toMatchObject({ status: 'completed' });
    expect(state.runs['run-1']).not.toHaveProperty('pendingToolCallIds');
    expect(isWaitingForInput(state, state.runs['run-1'] as AgentState['runs'][string])).toBe(false);
    expect(state.issues).toEqual([]);
    expectIncreasingSequences(run.events);
  });

  it('refuses an answer for another version, or a modification of a request that may not be edited, and keeps waiting', async () => {
    const provider = createLocalAgentProvider({
      script: {
        steps: [
          { type: 'approval', description: 'Deploy?', version: 'v2', editable: false, waitFor: 'command' },
          { type: 'text', deltas: ['Deployed.'] },
        ],
      },
    });
    const run = start(provider);
    await until(run.store, (state) => entity(state, 'approvals', 'run-1', 'approval-0') !== undefined);

    const stale = run.commands.create('approval.resolve', {
      approvalId: 'approval-0',
      decision: 'approved',
      expectedVersion: 'v1',
    });
    const refusal = await send(provider, run.store, stale).catch((error: unknown) => error);
    expect(AgentCommandError.isInstance(refusal)).toBe(true);
    expect(refusal).toMatchObject({ code: 'invalid_command', retryable: false });
    expect((refusal as Error).message).toBe(
      `approval.resolve (command ${stale.commandId}) for local run "run-1": expected version "v1" of approval "approval-0", which is at version "v2"`,
    );

    const edit = run.commands.create('approval.resolve', { approvalId: 'approval-0', decision: 'modified', data: {} });
    await expect(send(provider, run.store, edit)).rejects.toThrow('approval "approval-0" may not be modified');
    expect(run.store.getSnapshot().runs['run-1']?.status).toBe('running');

    await send(
      provider,
      run.store,
      run.commands.create('approval.resolve', {
        approvalId: 'approval-0',
        decision: 'approved',
        expectedVersion: 'v2',
      }),
    );
    await run.finished;
    const state = run.store.getSnapshot();
    expect(entity(state, 'approvals', 'run-1', 'approval-0')).toMatchObject({ decision: 'approved' });
    expect(assistantTexts(state, 'run-1')).toEqual(['Deployed.']);
    expect(state.issues).toEqual([]);
  });

  it('keeps the default: an approval without a decision ends the run before its next step, which the continuation plays', async () => {
    const provider = createLocalAgentProvider({
      script: {
        steps: [
          { type: 'approval', description: 'Deploy?' },
          { type: 'text', deltas: ['Later.'] },
        ],
      },
    });
    const run = start(provider);
    await run.finished;
    const state = run.store.getSnapshot();
    expect(state.runs['run-1']?.pendingApprovalIds).toEqual(['approval-0']);
    expect(assistantTexts(state, 'run-1')).toEqual([]);
    const continuation: AgentRunContinuation = {
      runId: 'run-1',
      approvals: [{ approvalId: 'approval-0', status: 'resolved', decision: 'approved' }],
    };
    const second = start(provider, { runId: 'run-2', store: run.store, continuation });
    expect(await second.finished).toEqual({ runId: 'run-2', status: 'completed' });
    expect(assistantTexts(run.store.getSnapshot(), 'run-2')).toEqual(['Later.']);
    expect(run.store.getSnapshot().issues).toEqual([]);
  });
});

describe('local provider: tool retries and tool results in the run', () => {
  it('retries a failed retryable call as a new attempt; the failed call stays failed', async () => {
    const provider = createLocalAgentProvider({
      script: {
        steps: [
          {
            type: 'tool',
            name: 'weather',
            argumentDeltas: ['{"city":', '"Rome"}'],
            error: { message: 'upstream timeout', code: 'timeout', retryable: true },
            retryResult: { celsius: 18 },
          },
          { type: 'await_command' },
          { type: 'text', deltas: ['Rome: 18 °C.'] },
        ],
      },
    });
    const run = start(provider);
    await until(run.store, (state) => entity(state, 'toolCalls', 'run-1', 'tool-0')?.status === 'failed');
    const retry = run.commands.create('tool.retry', { toolCallId: 'tool-0' });
    expect(run.store.can(retry)).toBe(true);
    expect(await send(provider, run.store, retry)).toEqual([]);
    expect(await run.finished).toEqual({ runId: 'run-1', status: 'completed' });

    const state = run.store.getSnapshot();
    expect(entity(state, 'toolCalls', 'run-1', 'tool-0')).toMatchObject({
      status: 'failed',
      attempt: 1,
      error: { message: 'upstream timeout', code: 'timeout', retryable: true },
    });
    expect(entity(state, 'toolCalls', 'run-1', 'tool-0-retry-2')).toMatchObject({
      status: 'completed',
      name: 'weather',
      attempt: 2,
      retryOf: 'tool-0',
      parsedArguments: { city: 'Rome' },
      result: { celsius: 18 },
    });
    expect(assistantTexts(state, 'run-1')).toEqual(['Rome: 18 °C.']);
    expect(state.issues).toEqual([]);
    expectIncreasingSequences(run.events);
  });

  it('retries a retry that failed again (attempt 3), and refuses to retry a call twice or one that did not fail', async () => {
    const provider = createLocalAgentProvider({
      script: {
        steps: [
          { type: 'tool', name: 'lookup', argumentDeltas: ['{}'], result: { hits: 0 } },
          {
            type: 'tool',
            name: 'weather',
            argumentDeltas: ['{"city":"Oslo"}'],
            error: { message: 'busy', retryable: true },
          },
          { type: 'await_command' },
          { type: 'await_command' },
          { type: 'text', deltas: ['Still busy.'] },
        ],
      },
    });
    const run = start(provider);
    await until(run.store, (state) => entity(state, 'toolCalls', 'run-1', 'tool-1')?.status === 'failed');

    await expect(
      send(provider, run.store, run.commands.create('tool.retry', { toolCallId: 'tool-0' })),
    ).rejects.toThrow('tool call "tool-0" is not a failed, retryable tool call the run executed');
    await send(provider, run.store, run.commands.create('tool.retry', { toolCallId: 'tool-1' }));
    await until(run.store, (state) => entity(state, 'toolCalls', 'run-1', 'tool-1-retry-2')?.status === 'failed');
    await expect(
      send(provider, run.store, run.commands.create('tool.retry', { toolCallId: 'tool-1' })),
    ).rejects.toThrow('tool call "tool-1" was already retried as "tool-1-retry-2"');
    await send(provider, run.store, run.commands.create('tool.retry', { toolCallId: 'tool-1-retry-2' }));
    await run.finished;

    const state = run.store.getSnapshot();
    expect(
      Object.values(state.toolCalls).map(({ id, status, attempt, retryOf }) => ({ id, status, attempt, retryOf })),
    ).toEqual([
      { id: 'tool-0', status: 'completed', attempt: 1, retryOf: undefined },
      { id: 'tool-1', status: 'failed', attempt: 1, retryOf: undefined },
      { id: 'tool-1-retry-2', status: 'failed', attempt: 2, retryOf: 'tool-1' },
      { id: 'tool-1-retry-3', status: 'failed', attempt: 3, retryOf: 'tool-1-retry-2' },
    ]);
    expect(entity(state, 'toolCalls', 'run-1', 'tool-1-retry-3')?.error).toEqual({ message: 'busy', retryable: true });
    expect(assistantTexts(state, 'run-1')).toEqual(['Still busy.']);
    expect(state.issues).toEqual([]);
    expectIncreasingSequences(run.events);
  });

  it('waits running for the application to submit a tool result, marked as executed by the client', async () => {
    const provider = createLocalAgentProvider({
      script: {
        steps: [
          { type: 'tool', name: 'read_file', argumentDeltas: ['{"path":"a.txt"}'], waitFor: 'command' },
          { type: 'tool', name: 'read_file', argumentDeltas: ['{"path":"b.txt"}'], waitFor: 'command' },
          { type: 'text', deltas: ['Read both.'] },
        ],
      },
    });
    const run = start(provider);
    await until(run.store, (state) => entity(state, 'toolCalls', 'run-1', 'tool-0')?.status === 'awaiting_execution');
    const early = run.commands.create('tool.submit_result', { toolCallId: 'tool-1', result: 'B' });
    await expect(send(provider, run.store, early)).rejects.toThrow(
      'tool call "tool-1" is not waiting for the application\'s result',
    );
    const first = run.commands.create('tool.submit_result', { toolCallId: 'tool-0', result: { text: 'A' } });
    expect(run.store.can(first)).toBe(true);
    await send(provider, run.store, first);
    await until(run.store, (state) => entity(state, 'toolCalls', 'run-1', 'tool-1')?.status === 'awaiting_execution');
    const second = run.commands.create('tool.submit_result', {
      toolCallId: 'tool-1',
      error: { message: 'no such file', code: 'ENOENT' },
    });
    await send(provider, run.store, second);
    expect(await run.finished).toEqual({ runId: 'run-1', status: 'completed' });

    const state = run.store.getSnapshot();
    expect(entity(state, 'toolCalls', 'run-1', 'tool-0')).toMatchObject({
      status: 'completed',
      result: { text: 'A' },
      meta: { agentMachines: { executedBy: 'client', commandId: first.commandId } },
    });
    expect(entity(state, 'toolCalls', 'run-1', 'tool-1')).toMatchObject({
      status: 'failed',
      error: { message: 'no such file', code: 'ENOENT' },
    });
    // AgentState keeps the meta of starting and completing events; the failure carries it on the event.
    expect(run.events.find((event) => event.type === 'tool.failed')).toMatchObject({
      payload: { toolCallId: 'tool-1' },
      meta: { agentMachines: { executedBy: 'client', commandId: second.commandId } },
    });
    expect(state.runs['run-1']).not.toHaveProperty('pendingToolCallIds');
    expect(assistantTexts(state, 'run-1')).toEqual(['Read both.']);
    expect(state.issues).toEqual([]);
    expectIncreasingSequences(run.events);
  });
});

describe('local provider: cancelling a run', () => {
  it("ends the run cancelled with the command's reason and closes what is open", async () => {
    const provider = createLocalAgentProvider({
      script: {
        steps: [
          { type: 'tool', name: 'deploy', argumentDeltas: ['{"env":"prod"}'] },
          { type: 'approval', description: 'Deploy to prod?', toolCallId: 'tool-0', waitFor: 'command' },
          { type: 'text', deltas: ['Deployed.'] },
        ],
      },
    });
    const run = start(provider);
    await until(run.store, (state) => entity(state, 'approvals', 'run-1', 'approval-1') !== undefined);
    const cancel = run.commands.create('run.cancel', { reason: 'user changed their mind' });
    expect(run.store.can(cancel)).toBe(true);
    expect(await send(provider, run.store, cancel)).toEqual([]);
    expect(await run.finished).toEqual({ runId: 'run-1', status: 'cancelled' });

    const state = run.store.getSnapshot();
    expect(state.runs['run-1']).toMatchObject({ status: 'cancelled', reason: 'user changed their mind' });
    expect(entity(state, 'toolCalls', 'run-1', 'tool-0')).toMatchObject({
      status: 'cancelled',
      reason: 'user changed their mind',
    });
    // No event cancels an approval and expiring it is not the provider's to say: the run's
    // terminal closes one still waiting, as the store closes whatever a run leaves open.
    expect(entity(state, 'approvals', 'run-1', 'approval-1')).toMatchObject({
      status: 'cancelled',
      reason: 'run_terminated',
    });
    expect(assistantTexts(state, 'run-1')).toEqual([]);
    expect(run.events.at(-1)).toMatchObject({ type: 'run.cancelled', payload: { reason: 'user changed their mind' } });
    // No event could have closed it before the terminal, so that is no protocol issue.
    expect(state.issues).toEqual([]);
    expectIncreasingSequences(run.events);
  });

  it('cancels between two chunks of a message: the message is cancelled and nothing more is said', async () => {
    const provider = createLocalAgentProvider({
      script: {
        steps: [
          { type: 'text', deltas: ['One, ', 'two, ', 'three.'] },
          { type: 'text', deltas: ['Four.'] },
        ],
        delayMs: 5,
      },
    });
    const run = start(provider);
    await until(run.store, (state) => entity(state, 'messages', 'run-1', 'text-0')?.content === 'One, ');
    await send(provider, run.store, run.commands.create('run.cancel', { reason: 'enough' }));
    expect(await run.finished).toEqual({ runId: 'run-1', status: 'cancelled' });
    const state = run.store.getSnapshot();
    expect(entity(state, 'messages', 'run-1', 'text-0')).toMatchObject({ status: 'cancelled', reason: 'enough' });
    expect(entity(state, 'messages', 'run-1', 'text-1')).toBeUndefined();
    expect(state.issues).toEqual([]);
    expectIncreasingSequences(run.events);
  });

  it('cancels a stalled run, with the default reason when the command gives none', async () => {
    const provider = createLocalAgentProvider({
      script: { steps: [{ type: 'text', deltas: ['Thinking'] }, { type: 'stall' }] },
    });
    const run = start(provider);
    await until(run.store, (state) => assistantTexts(state, 'run-1').length === 1);
    await send(provider, run.store, run.commands.create('run.cancel', {}));
    expect(await run.finished).toEqual({ runId: 'run-1', status: 'cancelled' });
    expect(run.store.getSnapshot().runs['run-1']).toMatchObject({ status: 'cancelled', reason: 'cancelled_by_user' });
    expect(run.store.getSnapshot().issues).toEqual([]);
  });

  it('takes a command through runAgentCommand, whose checks the events of the run never meet', async () => {
    const provider = createLocalAgentProvider({ script: { steps: [{ type: 'stall' }] } });
    const run = start(provider);
    await until(run.store, (state) => state.runs['run-1'] !== undefined);
    await runAgentCommand({
      provider,
      command: run.commands.create('run.cancel', { reason: 'done here' }),
      initialSequence: run.store.getSnapshot().lastSequenceByRun['run-1'] ?? 0,
      onEvent: run.store.dispatch,
    });
    expect(await run.finished).toEqual({ runId: 'run-1', status: 'cancelled' });
    expect(run.store.getSnapshot().runs['run-1']?.reason).toBe('done here');
  });

  it('withdraws a command whose signal aborted before the run took it', async () => {
    const provider = createLocalAgentProvider({ script: { steps: [{ type: 'stall' }] } });
    const run = start(provider);
    await until(run.store, (state) => state.runs['run-1'] !== undefined);
    const controller = new AbortController();
    controller.abort();
    const stream = provider.executeCommand?.(run.commands.create('run.cancel', {}), {
      signal: controller.signal,
      initialSequence: 0,
    });
    const withdrawn = await (async () => {
      for await (const _event of stream ?? []) return 'yielded';
      return 'completed';
    })().catch((error: unknown) => error);
    expect(withdrawn).toMatchObject({ code: 'interrupted', retryable: true });
    expect(run.store.getSnapshot().runs['run-1']?.status).toBe('running');
    await send(provider, run.store, run.commands.create('run.cancel', {}));
    expect(await run.finished).toMatchObject({ status: 'cancelled' });
  });
});

describe('local provider: commands that cannot apply', () => {
  it('refuses a command for a run it does not know or that has ended', async () => {
    const provider = createLocalAgentProvider({ script: { steps: [{ type: 'text', deltas: ['Hi'] }] } });
    const unknown = createAgentCommandFactory({ sessionId, runId: 'nobody', createCommandId: () => 'command-x' });
    const refusal = await send(provider, createAgentStore(), unknown.create('run.cancel', {})).catch(
      (error: unknown) => error,
    );
    expect(AgentCommandError.isInstance(refusal)).toBe(true);
    expect(refusal).toMatchObject({
      code: 'invalid_command',
      message:
        'run.cancel (command command-x): the local runtime has no running run "nobody" in session "session-1"; it never started here or has ended',
    });

    const run = start(provider);
    await run.finished;
    await expect(
      send(provider, run.store, run.commands.create('tool.retry', { toolCallId: 'tool-0' })),
    ).rejects.toThrow('the local runtime has no running run "run-1" in session "session-1"');
  });

  it('refuses an answer to an approval the run is not waiting on', async () => {
    const provider = createLocalAgentProvider({
      script: { steps: [{ type: 'approval', description: 'Go?', decision: 'approved' }, { type: 'stall' }] },
    });
    const run = start(provider);
    await until(run.store, (state) => entity(state, 'approvals', 'run-1', 'approval-0')?.status === 'resolved');
    await expect(
      send(
        provider,
        run.store,
        run.commands.create('approval.resolve', { approvalId: 'approval-0', decision: 'rejected' }),
      ),
    ).rejects.toThrow('approval "approval-0" is not waiting for an answer in the run');
    await send(provider, run.store, run.commands.create('run.cancel', {}));
    await run.finished;
    expect(run.store.getSnapshot().issues).toEqual([]);
  });
});

describe('local provider: continuing a run that waits for input', () => {
  it("plays the continuation's turn with the application's tool results, and sends no user message", async () => {
    const turns: LocalAgentTurn[] = [];
    const provider = createLocalAgentProvider({
      script: (input, turn) => {
        turns.push(turn);
        const [weather] = turn.toolResults;
        if (weather === undefined) {
          return {
            steps: [
              { type: 'text', deltas: ['Let me check.'] },
              { type: 'tool', name: 'weather', argumentDeltas: ['{"city":"Paris"}'] },
            ],
          };
        }
        const { celsius } = weather.result as { celsius: number };
        return { steps: [{ type: 'text', deltas: [`It is ${celsius} °C in Paris (${input.prompt}).`] }] };
      },
    });
    const first = start(provider, { runId: 'run-1', prompt: 'Weather in Paris?' });
    await first.finished;
    expect(first.store.getSnapshot().runs['run-1']?.pendingToolCallIds).toEqual(['tool-1']);

    // The application runs the tool and reports its result on the waiting run.
    const settle = createAgentEventFactory({
      sessionId,
      runId: 'run-1',
      initialSequence: first.store.getSnapshot().lastSequenceByRun['run-1'] ?? 0,
    });
    first.store.dispatch(
      settle.create(
        'tool.completed',
        { toolCallId: 'tool-1', result: { celsius: 14 } },
        { meta: { agentMachines: { executedBy: 'client' } } },
      ),
    );

    const second = start(provider, {
      runId: 'run-2',
      prompt: 'continued',
      store: first.store,
      continuation: { runId: 'run-1', approvals: [] },
    });
    expect(await second.finished).toEqual({ runId: 'run-2', status: 'completed' });

    expect(turns[0]).toEqual({ toolResults: [], history: expect.any(Object) });
    expect(turns[1]?.continuation).toEqual({ runId: 'run-1', approvals: [] });
    expect(turns[1]?.toolResults).toEqual([
      {
        toolCallId: 'tool-1',
        name: 'weather',
        arguments: { city: 'Paris' },
        status: 'completed',
        result: { celsius: 14 },
      },
    ]);
    const state = first.store.getSnapshot();
    expect(state.runs['run-2']).toMatchObject({ status: 'completed', continuesRunId: 'run-1' });
    expect(
      Object.values(state.messages)
        .filter((message) => message.runId === 'run-2')
        .map((message) => [message.role, message.content]),
    ).toEqual([['assistant', 'It is 14 °C in Paris (continued).']]);
    expect(second.events[0]).toMatchObject({ type: 'run.started', payload: { continuesRunId: 'run-1' } });
    expect(isWaitingForInput(state, state.runs['run-1'] as AgentState['runs'][string])).toBe(false);
    expect(state.issues).toEqual([]);
    expectIncreasingSequences(second.events);
  });

  it("resolves the waiting run's approvals with the user's answers before the turn plays", async () => {
    const turns: LocalAgentTurn[] = [];
    const provider = createLocalAgentProvider({
      script: (_input, turn) => {
        turns.push(turn);
        return turn.continuation === undefined
          ? {
              steps: [
                { type: 'approval', description: 'Email the team?' },
                { type: 'approval', description: 'Post on the blog?' },
              ],
            }
          : { steps: [{ type: 'text', deltas: ['Emailed the team; no blog post.'] }] };
      },
    });
    const first = start(provider, { runId: 'run-1' });
    await first.finished;
    const waitingRun = first.store.getSnapshot().runs['run-1'] as AgentState['runs'][string];
    expect(waitingRun.pendingApprovalIds).toEqual(['approval-0', 'approval-1']);
    expect(isWaitingForInput(first.store.getSnapshot(), waitingRun)).toBe(true);

    const continuation: AgentRunContinuation = {
      runId: 'run-1',
      approvals: [
        { approvalId: 'approval-0', status: 'resolved', decision: 'modified', data: { to: 'team@example.com' } },
        { approvalId: 'approval-1', status: 'cancelled' },
      ],
    };
    const second = start(provider, { runId: 'run-2', store: first.store, continuation });
    expect(await second.finished).toEqual({ runId: 'run-2', status: 'completed' });

    expect(second.events.map((event) => event.type)).toEqual([
      'run.started',
      'approval.resolved',
      'approval.resolved',
      'message.started',
      'message.delta',
      'message.completed',
      'run.completed',
    ]);
    expect(turns[1]?.continuation).toBe(continuation);
    const state = first.store.getSnapshot();
    const resolvedBy = { agentMachines: { resolvedBy: 'continuation' } };
    expect(entity(state, 'approvals', 'run-1', 'approval-0')).toMatchObject({
      runId: 'run-1',
      status: 'resolved',
      decision: 'modified',
      resolvedData: { to: 'team@example.com' },
      meta: resolvedBy,
    });
    expect(entity(state, 'approvals', 'run-1', 'approval-1')).toMatchObject({
      status: 'resolved',
      decision: 'rejected',
      meta: resolvedBy,
    });
    expect(isWaitingForInput(state, state.runs['run-1'] as AgentState['runs'][string])).toBe(false);
    expect(assistantTexts(state, 'run-2')).toEqual(['Emailed the team; no blog post.']);
    expect(state.issues).toEqual([]);
    expectIncreasingSequences(second.events);
  });
});
