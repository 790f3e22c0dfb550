import { describe, expect, it } from 'vitest';
import { assign, createActor, enqueueActions, setup, toPromise, waitFor } from 'xstate';
import { getAgentEntityKey } from '../protocol/getAgentEntityKey';
import { until } from '../tests/support/until';
import {
  type AgentProviderActorCommand,
  type AgentProviderActorEmitted,
  type AgentProviderActorInput,
  type AgentProviderActorLogic,
  type AgentProviderActorOutput,
  fromAgentProvider,
} from './fromAgentProvider';
import { createLocalAgentProvider, type LocalAgentInput } from './local/createLocalAgentProvider';
import type { LocalAgentScript } from './local/localAgentChunks';

const input = (extra: Partial<AgentProviderActorInput<LocalAgentInput>> = {}) => ({
  sessionId: 'session-1',
  runId: 'run-1',
  input: { prompt: 'Go' },
  ...extra,
});

/**
 * A parent machine that runs the agent in `working`: it keeps what the agent tells it, and
 * answers each with the commands `reply` returns (sent with `sendTo`); `leave` leaves the state.
 */
function createParent(
  agent: AgentProviderActorLogic<LocalAgentInput>,
  agentInput: AgentProviderActorInput<LocalAgentInput>,
  reply: (told: AgentProviderActorEmitted) => AgentProviderActorCommand[] = () => [],
) {
  const told: AgentProviderActorEmitted[] = [];
  const parent = setup({
    types: {
      context: {} as { output?: AgentProviderActorOutput; error?: unknown },
      events: {} as AgentProviderActorEmitted | { type: 'leave' },
    },
    actors: { agent },
  }).createMachine({
    context: {},
    initial: 'working',
    states: {
      working: {
        invoke: {
          id: 'agent',
          src: 'agent',
          input: agentInput,
          onDone: { target: 'done', actions: assign({ output: ({ event }) => event.output }) },
          onError: { target: 'failed', actions: assign({ error: ({ event }) => event.error }) },
        },
        on: {
          'agent.*': {
            actions: enqueueActions(({ enqueue, event }) => {
              told.push(event);
              for (const command of reply(event)) enqueue.sendTo('agent', command);
            }),
          },
          leave: 'left',
        },
      },
      done: { type: 'final' },
      failed: { type: 'final' },
      left: {},
    },
  });
  return { actor: createActor(parent), told };
}

function eventsTold(told: AgentProviderActorEmitted[]) {
  return told.flatMap((entry) => (entry.type === 'agent.event' ? [entry.event] : []));
}

function failuresTold(told: AgentProviderActorEmitted[]) {
  return told.flatMap((entry) =>
    entry.type === 'agent.commandFailed'
      ? [{ type: entry.command.type, code: entry.error.code, message: entry.error.message }]
      : [],
  );
}

const helloScript: LocalAgentScript = { steps: [{ type: 'text', deltas: ['Hello, ', 'world'] }] };

describe('fromAgentProvider', () => {
  it("ends with the run's outcome as its output, the session's AgentState in its snapshot", async () => {
    const actor = createActor(fromAgentProvider({ provider: createLocalAgentProvider({ script: helloScript }) }), {
      input: input(),
    });
    const seen: string[] = [];
    actor.subscribe((snapshot) => {
      const message = snapshot.context.agentState.messages[getAgentEntityKey('run-1', 'text-0')];
      if (message !== undefined && seen.at(-1) !== message.content) seen.push(message.content as string);
    });
    expect(actor.getSnapshot().context).toMatchObject({ sessionId: 'session-1', runId: 'run-1', phase: 'running' });
    actor.start();
    const output = await toPromise(actor);
    expect(output).toMatchObject({ runId: 'run-1', runIds: ['run-1'], status: 'completed', text: 'Hello, world' });
    expect(output.result).toEqual({ runId: 'run-1', status: 'completed' });
    expect(output).not.toHaveProperty('error');
    expect(output.agentState.runs['run-1']?.status).toBe('completed');
    expect(output.agentState.issues).toEqual([]);
    expect(seen).toEqual(['', 'Hello, ', 'Hello, world']);
    expect(actor.getSnapshot().context.agentState).toBe(output.agentState);
  });

  it("gives a parent's onDone the output, and a failed run is an output too, not an error", async () => {
    const provider = createLocalAgentProvider({
      script: { steps: [{ type: 'fail', error: { message: 'model server crashed', code: 'runtime_error' } }] },
    });
    const { actor } = createParent(fromAgentProvider({ provider }), input());
    actor.start();
    await waitFor(actor, (snapshot) => snapshot.status === 'done');
    expect(actor.getSnapshot().value).toBe('done');
    expect(actor.getSnapshot().context.output).toMatchObject({
      status: 'failed',
      error: { message: 'model server crashed' },
    });
  });

  it("fails with what runAgentProvider rejects with, which the parent's onError gets", async () => {
    const local = createLocalAgentProvider({
      script: { steps: [{ type: 'reasoning', deltas: ['Thinking'] }, ...helloScript.steps] },
    });
    // A provider that emits an event type it does not declare breaks the contract.
    const eventTypes = local.capabilities.eventTypes.filter((type) => !type.startsWith('reasoning.'));
    const provider: typeof local = { ...local, capabilities: { ...local.capabilities, eventTypes } };
    const { actor } = createParent(fromAgentProvider({ provider }), input());
    actor.start();
    await waitFor(actor, (snapshot) => snapshot.status === 'done');
    expect(actor.getSnapshot().value).toBe('failed');
    expect(actor.getSnapshot().context.error).toMatchObject({
      name: 'AgentProviderError',
      code: 'invalid_event',
      message: expect.stringContaining('reasoning.started'),
    });
  });

  it("fails with the store's AgentProtocolError in strict mode", async () => {
    const provider = createLocalAgentProvider({
      async *runtime() {
        yield { type: 'text.delta', id: 'ghost', delta: 'boo' };
        yield { type: 'done' };
      },
    });
    const actor = createActor(fromAgentProvider({ provider, protocolMode: 'strict' }), { input: input() });
    actor.start();
    await expect(toPromise(actor)).rejects.toMatchObject({ name: 'AgentProtocolError', code: 'missing_entity' });
    expect(actor.getSnapshot().status).toBe('error');
  });

  it('carries out a command sent with sendTo through the runtime, in the same run', async () => {
    const provider = createLocalAgentProvider({
      script: {
        steps: [
          { type: 'approval', description: 'Send the email?', waitFor: 'command' },
          { type: 'text', deltas: ['Sent.'] },
        ],
      },
    });
    const { actor, told } = createParent(fromAgentProvider({ provider }), input({ forwardEvents: true }), (entry) =>
      entry.type === 'agent.event' && entry.event.type === 'approval.requested'
        ? [{ type: 'approval.resolve', approvalId: entry.event.payload.approvalId, decision: 'approved' }]
        : [],
    );
    actor.start();
    await waitFor(actor, (snapshot) => snapshot.status === 'done');
    const { output } = actor.getSnapshot().context;
    expect(output).toMatchObject({ status: 'completed', runIds: ['run-1'], text: 'Sent.' });
    expect(output?.agentState.approvals[getAgentEntityKey('run-1', 'approval-0')]).toMatchObject({
      status: 'resolved',
      decision: 'approved',
    });
    expect(failuresTold(told)).toEqual([]);
  });

  it('retries a failed tool and cancels a run on command', async () => {
    const retried = createLocalAgentProvider({
      script: {
        steps: [
          {
            type: 'tool',
            name: 'weather',
            argumentDeltas: ['{"city":"Rome"}'],
            error: { message: 'upstream timeout', code: 'timeout', retryable: true },
            retryResult: { celsius: 21 },
          },
          { type: 'await_command' },
        ],
      },
    });
    const retry = createParent(fromAgentProvider({ provider: retried }), input({ forwardEvents: true }), (entry) =>
      entry.type === 'agent.event' && entry.event.type === 'tool.failed'
        ? [{ type: 'tool.retry', toolCallId: entry.event.payload.toolCallId }]
        : [],
    );
    retry.actor.start();
    await waitFor(retry.actor, (snapshot) => snapshot.status === 'done');
    const retriedState = retry.actor.getSnapshot().context.output?.agentState;
    expect(retriedState?.toolCalls[getAgentEntityKey('run-1', 'tool-0-retry-2')]).toMatchObject({
      status: 'completed',
      attempt: 2,
      retryOf: 'tool-0',
      result: { celsius: 21 },
    });

    const stalled = createLocalAgentProvider({
      script: { steps: [{ type: 'text', deltas: ['Wor'] }, { type: 'stall' }] },
    });
    const cancel = createParent(fromAgentProvider({ provider: stalled }), input({ forwardEvents: true }), (entry) =>
      entry.type === 'agent.event' &&
      entry.event.type === 'message.completed' &&
      entry.event.payload.messageId !== 'prompt'
        ? [{ type: 'run.cancel', reason: 'the workflow moved on' }]
        : [],
    );
    cancel.actor.start();
    await waitFor(cancel.actor, (snapshot) => snapshot.status === 'done');
    expect(cancel.actor.getSnapshot().context.output).toMatchObject({ status: 'cancelled', runId: 'run-1' });
    expect(failuresTold([...retry.told, ...cancel.told])).toEqual([]);
  });

  it('tells the parent of every command that does not take effect, and the run goes on', async () => {
    const local = createLocalAgentProvider({
      script: {
        steps: [
          { type: 'text', deltas: ['One'] },
          { type: 'await_command', timeoutMs: 1 },
        ],
      },
    });
    const commands: AgentProviderActorCommand[] = [
      { type: 'approval.resolve', approvalId: 'approval-9', decision: 'approved' },
      { type: 'tool.retry', toolCallId: 'tool-9', runId: 'run-0' },
      // A misspelt field makes the command invalid rather than being dropped.
      { type: 'approval.resolve', approvalId: 'approval-9', decison: 'approved' } as never,
    ];
    const { actor, told } = createParent(
      fromAgentProvider({ provider: local }),
      input({ forwardEvents: true }),
      (entry) =>
        entry.type === 'agent.event' &&
        entry.event.type === 'message.started' &&
        entry.event.payload.role === 'assistant'
          ? commands
          : [],
    );
    actor.start();
    await waitFor(actor, (snapshot) => snapshot.status === 'done');
    expect(actor.getSnapshot().context.output).toMatchObject({ status: 'completed', text: 'One' });
    expect(failuresTold(told)).toEqual([
      {
        type: 'approval.resolve',
        code: 'invalid_command',
        message: 'approval.resolve refused: approval "approval-9" does not exist in run "run-1"',
      },
      {
        type: 'tool.retry',
        code: 'invalid_command',
        message: 'tool.retry refused: run "run-0" is not a run of session "session-1"',
      },
      {
        type: 'approval.resolve',
        code: 'invalid_command',
        message: expect.stringMatching(/^Invalid approval.resolve: /),
      },
    ]);
    const refused = told.find((entry) => entry.type === 'agent.commandFailed');
    expect(refused?.type === 'agent.commandFailed' && refused.command).toEqual(commands[0]);
  });

  it('tells the parent when the provider does not carry out a command', async () => {
    const local = createLocalAgentProvider({ script: { steps: [{ type: 'stall' }] } });
    const provider: typeof local = { ...local, capabilities: { ...local.capabilities, commands: [] } };
    const { actor, told } = createParent(fromAgentProvider({ provider }), input({ forwardEvents: true }), (entry) =>
      entry.type === 'agent.event' && entry.event.type === 'message.completed' ? [{ type: 'run.cancel' }] : [],
    );
    actor.start();
    await waitFor(actor, () => failuresTold(told).length > 0);
    expect(failuresTold(told)).toEqual([
      {
        type: 'run.cancel',
        code: 'unsupported_capability',
        message: 'Provider "local" does not declare the run.cancel command in capabilities.commands',
      },
    ]);
    // Refused, the cancel is settled: the run takes another.
    actor.getSnapshot().children.agent?.send({ type: 'run.cancel' });
    await waitFor(actor, () => failuresTold(told).length > 1);
    expect(failuresTold(told)[1]?.code).toBe('unsupported_capability');
    actor.send({ type: 'leave' });
  });

  it('forwards every event the store took to the parent when asked, and none otherwise', async () => {
    const provider = createLocalAgentProvider({ script: helloScript });
    const forwarding = createParent(fromAgentProvider({ provider }), input({ forwardEvents: true }));
    forwarding.actor.start();
    await waitFor(forwarding.actor, (snapshot) => snapshot.status === 'done');
    const forwarded = eventsTold(forwarding.told);
    expect(forwarded.map((event) => event.type)).toEqual([
      'run.started',
      'message.started',
      'message.completed',
      'message.started',
      'message.delta',
      'message.delta',
      'message.completed',
      'run.completed',
    ]);
    expect(forwarded.map((event) => event.sequence)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    expect(forwarded.every((event) => event.runId === 'run-1' && event.sessionId === 'session-1')).toBe(true);

    const quiet = createParent(fromAgentProvider({ provider }), input({ runId: 'run-2' }));
    quiet.actor.start();
    await waitFor(quiet.actor, (snapshot) => snapshot.status === 'done');
    expect(quiet.told).toEqual([]);
    expect(quiet.actor.getSnapshot().context.output?.text).toBe('Hello, world');
  });

  it("aborts the run's signal when it is stopped: its parent left the state, or it was stopped itself", async () => {
    const signals: AbortSignal[] = [];
    const provider = createLocalAgentProvider({
      async *runtime(_request, signal) {
        signals.push(signal);
        yield { type: 'text.start', id: 'text-0' };
        await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
      },
    });
    const { actor, told } = createParent(fromAgentProvider({ provider }), input({ forwardEvents: true }));
    actor.start();
    await waitFor(actor, () => eventsTold(told).some((event) => event.type === 'message.started'));
    const agent = actor.getSnapshot().children.agent;
    expect(signals[0]?.aborted).toBe(false);
    actor.send({ type: 'leave' });
    expect(actor.getSnapshot().value).toBe('left');
    expect(agent?.getSnapshot().status).toBe('stopped');
    expect(signals[0]?.aborted).toBe(true);

    const root = createActor(fromAgentProvider({ provider }), { input: input({ runId: 'run-2' }) });
    root.start();
    await waitFor(
      root,
      (snapshot) => snapshot.context.agentState.messages[getAgentEntityKey('run-2', 'text-0')] !== undefined,
    );
    root.stop();
    expect(root.getSnapshot().status).toBe('stopped');
    expect(signals[1]?.aborted).toBe(true);
  });

  it("waits for the parent's answers when the run ends waiting for input, then a run continues it", async () => {
    const provider = createLocalAgentProvider({
      script: (_input, turn) =>
        turn.continuation === undefined
          ? {
              steps: [
                { type: 'tool', name: 'lookup', argumentDeltas: ['{"q":"rome"}'] },
                { type: 'approval', description: 'Book it?' },
              ],
            }
          : {
              steps: [
                {
                  type: 'text',
                  deltas: [
                    `${JSON.stringify(turn.toolResults[0]?.result)} ${turn.continuation.approvals[0]?.decision}`,
                  ],
                },
              ],
            },
    });
    const phases: Array<string | undefined> = [];
    const { actor, told } = createParent(fromAgentProvider({ provider }), input(), (entry) => {
      if (entry.type !== 'agent.waiting') return [];
      phases.push(actor.getSnapshot().children.agent?.getSnapshot().context.phase);
      return [
        { type: 'approval.resolve', approvalId: 'approval-1', decision: 'approved' },
        // Refused: a run that waits for input cannot be cancelled.
        { type: 'run.cancel' },
        { type: 'tool.submit_result', toolCallId: 'tool-0', result: { hotel: 'Roma' } },
      ];
    });
    actor.start();
    await waitFor(actor, (snapshot) => snapshot.status === 'done');
    const waiting = told.filter((entry) => entry.type === 'agent.waiting');
    expect(waiting).toHaveLength(1);
    expect(waiting[0]?.type === 'agent.waiting' && waiting[0].runId).toBe('run-1');
    const pending = waiting[0]?.type === 'agent.waiting' ? waiting[0].pendingInput : undefined;
    expect(pending?.approvals.map((approval) => approval.id)).toEqual(['approval-1']);
    expect(pending?.toolCalls.map((toolCall) => [toolCall.id, toolCall.parsedArguments])).toEqual([
      ['tool-0', { q: 'rome' }],
    ]);
    expect(phases).toEqual(['waiting']);
    expect(failuresTold(told)).toEqual([
      {
        type: 'run.cancel',
        code: 'invalid_command',
        message: 'run.cancel refused: run "run-1" is completed and waits for input',
      },
    ]);
    const output = actor.getSnapshot().context.output as AgentProviderActorOutput;
    expect(output.runIds).toHaveLength(2);
    expect(output).toMatchObject({ runId: output.runIds[1], status: 'completed', text: '{"hotel":"Roma"} approved' });
    const state = output.agentState;
    expect(state.runs[output.runId]?.continuesRunId).toBe('run-1');
    expect(state.approvals[getAgentEntityKey('run-1', 'approval-1')]).toMatchObject({
      status: 'resolved',
      decision: 'approved',
    });
    expect(state.toolCalls[getAgentEntityKey('run-1', 'tool-0')]).toMatchObject({
      status: 'completed',
      result: { hotel: 'Roma' },
    });
    expect(state.issues).toEqual([]);
  });

  it('keeps an answer for the continuation when the run ended waiting on that approval before the runtime took it', async () => {
    const local = createLocalAgentProvider({
      script: (_input, turn) =>
        turn.continuation === undefined
          ? { steps: [{ type: 'approval', description: 'Publish?' }] }
          : { steps: [{ type: 'text', deltas: [`Answer: ${turn.continuation.approvals[0]?.decision}`] }] },
    });
    let agentRef: { getSnapshot(): { context: { phase: string } } } | undefined;
    // The command reaches the runtime only once the run has ended waiting: the runtime no longer has it.
    const provider: typeof local = {
      ...local,
      async *executeCommand(command, options) {
        await until(() => agentRef?.getSnapshot().context.phase === 'waiting', 'the run to end waiting');
        yield* local.executeCommand?.(command, options) ?? [];
      },
    };
    const { actor, told } = createParent(fromAgentProvider({ provider }), input({ forwardEvents: true }), (entry) =>
      entry.type === 'agent.event' && entry.event.type === 'approval.requested'
        ? [{ type: 'approval.resolve', approvalId: entry.event.payload.approvalId, decision: 'rejected' }]
        : [],
    );
    actor.start();
    agentRef = actor.getSnapshot().children.agent;
    await waitFor(actor, (snapshot) => snapshot.status === 'done' || failuresTold(told).length > 0);
    expect(failuresTold(told)).toEqual([]);
    expect(actor.getSnapshot().context.output).toMatchObject({ status: 'completed', text: 'Answer: rejected' });
    expect(actor.getSnapshot().context.output?.runIds).toHaveLength(2);
  });

  it("starts from a history: an earlier actor's AgentState", async () => {
    const provider = createLocalAgentProvider({ script: helloScript });
    const logic = fromAgentProvider({ provider });
    const first = createActor(logic, { input: input() });
    first.start();
    const { agentState } = await toPromise(first);
    const second = createActor(logic, { input: input({ runId: 'run-2', history: agentState }) });
    second.start();
    const output = await toPromise(second);
    expect(Object.keys(output.agentState.runs)).toEqual(['run-1', 'run-2']);
    expect(output.agentState.issues).toEqual([]);
  });

  it('fails as it starts when its history is not an AgentState', () => {
    const logic = fromAgentProvider({ provider: createLocalAgentProvider({ script: helloScript }) });
    const actor = createActor(logic, { input: input({ history: { runs: 'none' } as never }) });
    actor.subscribe({ error: () => undefined });
    actor.start();
    expect(actor.getSnapshot()).toMatchObject({ status: 'error', error: { name: 'AgentValidationError' } });
  });

  it('cannot be restored from a persisted snapshot: its run is not in it', () => {
    const logic = fromAgentProvider({ provider: createLocalAgentProvider({ script: helloScript }) });
    const persisted = createActor(logic, { input: input() }).getPersistedSnapshot();
    const restored = createActor(logic, { input: input(), snapshot: persisted });
    restored.subscribe({ error: () => undefined });
    restored.start();
    expect(restored.getSnapshot()).toMatchObject({ status: 'error', error: { code: 'not_restorable' } });
  });
});
