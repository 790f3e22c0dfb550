import { describe, expect, it, vi } from 'vitest';
import { createAgentStore } from '../machines/createAgentStore';
import { AGENT_EVENT_ADMITTED } from '../protocol/admittedEvents';
import { AGENT_COMMAND_TYPES, type AgentCommand, type AgentCommandType } from '../protocol/commandSchemas';
import { createAgentCommandFactory } from '../protocol/createAgentCommandFactory';
import { AGENT_EVENT_TYPES, type AgentEvent, type AgentEventType } from '../protocol/eventSchemas';
import { getAgentEntityKey } from '../protocol/getAgentEntityKey';
import { runEvents } from '../tests/support/events';
import { createAsyncIterableTransport } from '../transports/createAsyncIterableTransport';
import { AgentCommandError } from './AgentCommandError';
import type { AgentCommandOptions, AnyAgentProvider } from './AgentProvider';
import { runAgentCommand } from './runAgentCommand';

const key = getAgentEntityKey;
const PROVIDER_ID = 'commands-under-test';

type ExecuteCommand = (command: AgentCommand, options: AgentCommandOptions) => AsyncIterable<AgentEvent>;

interface ProviderOptions {
  commands?: readonly AgentCommandType[] | undefined;
  eventTypes?: readonly AgentEventType[];
  executeCommand?: ExecuteCommand;
  classifyError?: (error: unknown, context: unknown) => { retryable: boolean };
}

/** A provider that only executes commands: its run methods are never called here. */
function commandProvider(options: ProviderOptions = {}): AnyAgentProvider {
  const provider: AnyAgentProvider = {
    id: PROVIDER_ID,
    protocol: { name: 'agent-event', version: '0.1' },
    capabilities: {
      eventTypes: options.eventTypes ?? AGENT_EVENT_TYPES,
      transports: ['async-iterable'],
      ...('commands' in options
        ? options.commands === undefined
          ? {}
          : { commands: options.commands }
        : { commands: AGENT_COMMAND_TYPES }),
    },
    transport: createAsyncIterableTransport(async function* () {}),
    createContext: () => ({}),
    start: () => [],
    prepareRequest: (input) => input,
    transformChunk: () => [],
    flush: () => [],
    transformError: () => [],
  };
  if (options.executeCommand !== undefined) provider.executeCommand = options.executeCommand;
  if (options.classifyError !== undefined) provider.classifyError = options.classifyError;
  return provider;
}

/** An executeCommand that answers with these values, whatever the command; a spy. */
function answering(values: readonly unknown[]) {
  return vi.fn<ExecuteCommand>(async function* () {
    for (const value of values) yield value as AgentEvent;
  });
}

/** An executeCommand that answers with these values, then throws. */
function failingAfter(values: readonly unknown[], error: unknown) {
  return vi.fn<ExecuteCommand>(async function* () {
    for (const value of values) yield value as AgentEvent;
    throw error;
  });
}

const commands = () => createAgentCommandFactory({ sessionId: 's1', runId: 'r1', now: () => 5_000 });

/** A running run r1 of session s1 with an approval, a retryable failed tool and a tool awaiting its result. */
function runningStore() {
  const store = createAgentStore();
  const events = runEvents('r1');
  store.batch([
    events.create('run.started', {}),
    events.create('approval.requested', { approvalId: 'a1', toolCallId: 't0' }),
    events.create('tool.requested', { toolCallId: 't1', name: 'search', arguments: '{"q":"x"}' }),
    events.create('tool.failed', { toolCallId: 't1', error: { message: 'timeout', retryable: true } }),
    events.create('tool.requested', { toolCallId: 't2', name: 'pick_file', arguments: '{}' }),
    events.create('tool.arguments_completed', { toolCallId: 't2' }),
  ]);
  expect(store.getSnapshot().issues).toEqual([]);
  return { store, events };
}

function initialSequenceOf(store: ReturnType<typeof createAgentStore>, runId = 'r1'): number {
  return store.getSnapshot().lastSequenceByRun[runId] ?? 0;
}

/** Awaits a rejection and returns the AgentCommandError it rejected with. */
async function commandError(promise: Promise<void>): Promise<AgentCommandError> {
  const error = await promise.then(
    () => undefined,
    (reason: unknown) => reason,
  );
  expect(AgentCommandError.isInstance(error), `rejected with ${String(error)}`).toBe(true);
  return error as AgentCommandError;
}

describe('runAgentCommand: valid commands (seed §9.3, §20.2)', () => {
  it('delivers the answer to approval.resolve into the same store', async () => {
    const { store, events } = runningStore();
    const initialSequence = initialSequenceOf(store);
    const resolved = events.create('approval.resolved', { approvalId: 'a1', decision: 'approved' });
    const executeCommand = answering([resolved]);
    const command = commands().create('approval.resolve', { approvalId: 'a1', decision: 'approved' });
    await runAgentCommand({
      provider: commandProvider({ executeCommand }),
      command,
      initialSequence,
      onEvent: store.dispatch,
    });
    const state = store.getSnapshot();
    expect(state.approvals[key('r1', 'a1')]).toMatchObject({ status: 'resolved', decision: 'approved' });
    expect(state.lastSequenceByRun.r1).toBe(initialSequence + 1);
    expect(state.issues).toEqual([]);
    expect(executeCommand).toHaveBeenCalledOnce();
    expect(executeCommand.mock.calls[0]?.[0]).toEqual(command);
  });

  it('delivers the answer to tool.retry: the retry as a new tool call naming the failed one', async () => {
    const { store, events } = runningStore();
    const executeCommand = answering([
      events.create('tool.requested', { toolCallId: 't1-retry', name: 'search', attempt: 2, retryOf: 't1' }),
      events.create('tool.running', { toolCallId: 't1-retry' }),
    ]);
    await runAgentCommand({
      provider: commandProvider({ executeCommand }),
      command: commands().create('tool.retry', { toolCallId: 't1' }),
      initialSequence: initialSequenceOf(store),
      onEvent: store.dispatch,
    });
    const state = store.getSnapshot();
    expect(state.toolCalls[key('r1', 't1-retry')]).toMatchObject({ status: 'running', attempt: 2, retryOf: 't1' });
    expect(state.toolCalls[key('r1', 't1')]).toMatchObject({ status: 'failed' });
    expect(state.issues).toEqual([]);
  });

  it('delivers the answer to tool.submit_result: the tool call completes with the result', async () => {
    const { store, events } = runningStore();
    const executeCommand = answering([
      events.create('tool.running', { toolCallId: 't2' }),
      events.create('tool.completed', { toolCallId: 't2', result: { file: 'report.pdf' } }),
    ]);
    await runAgentCommand({
      provider: commandProvider({ executeCommand }),
      command: commands().create('tool.submit_result', { toolCallId: 't2', result: { file: 'report.pdf' } }),
      initialSequence: initialSequenceOf(store),
      onEvent: store.dispatch,
    });
    const state = store.getSnapshot();
    expect(state.toolCalls[key('r1', 't2')]).toMatchObject({ status: 'completed', result: { file: 'report.pdf' } });
    expect(state.issues).toEqual([]);
  });

  it('delivers the answer to run.cancel: the run ends cancelled', async () => {
    const store = createAgentStore();
    const events = runEvents('r1');
    store.dispatch(events.create('run.started', {}));
    const executeCommand = answering([events.create('run.cancelled', { reason: 'user' })]);
    await runAgentCommand({
      provider: commandProvider({ executeCommand }),
      command: commands().create('run.cancel', { reason: 'user' }),
      initialSequence: initialSequenceOf(store),
      onEvent: store.dispatch,
    });
    expect(store.getSnapshot().runs.r1).toMatchObject({ status: 'cancelled' });
    expect(store.getSnapshot().issues).toEqual([]);
  });

  it('resolves with nothing delivered when the provider answers with no event', async () => {
    const onEvent = vi.fn();
    await runAgentCommand({
      provider: commandProvider({ executeCommand: answering([]) }),
      command: commands().create('run.cancel', {}),
      initialSequence: 3,
      onEvent,
    });
    expect(onEvent).not.toHaveBeenCalled();
  });

  it('hands each event to onEvent with the admission token, unchanged', async () => {
    const events = runEvents('r1', 's1', 4);
    const answer = [
      events.create('approval.resolved', { approvalId: 'a1', decision: 'rejected' }),
      events.create('message.started', { messageId: 'm1', role: 'assistant' }),
    ];
    const onEvent = vi.fn();
    await runAgentCommand({
      provider: commandProvider({ executeCommand: answering(answer) }),
      command: commands().create('approval.resolve', { approvalId: 'a1', decision: 'rejected' }),
      initialSequence: 4,
      onEvent,
    });
    expect(onEvent.mock.calls).toEqual([
      [answer[0], AGENT_EVENT_ADMITTED],
      [answer[1], AGENT_EVENT_ADMITTED],
    ]);
    expect(onEvent.mock.calls[0]?.[0]).toBe(answer[0]);
  });

  it('hands executeCommand a signal of its own, the initial sequence and the clock', async () => {
    const executeCommand = answering([]);
    const caller = new AbortController();
    const now = () => 42;
    await runAgentCommand({
      provider: commandProvider({ executeCommand }),
      command: commands().create('run.cancel', {}),
      signal: caller.signal,
      initialSequence: 9,
      now,
      onEvent: vi.fn(),
    });
    const options = executeCommand.mock.calls[0]?.[1];
    expect(options?.initialSequence).toBe(9);
    expect(options?.now).toBe(now);
    expect(options?.signal).toBeInstanceOf(AbortSignal);
    expect(options?.signal).not.toBe(caller.signal);
    // The command's own controller is let go when it ends; the caller's is not touched.
    expect(options?.signal.aborted).toBe(true);
    expect(caller.signal.aborted).toBe(false);
  });
});

/** A valid approval.resolve as a plain record, to break one field at a time. */
function validCommand(): Record<string, unknown> {
  return { ...commands().create('approval.resolve', { approvalId: 'a1', decision: 'approved' }) };
}

describe('runAgentCommand: invalid commands (seed §7.5, §20.1)', () => {
  const valid = validCommand();
  const payload = valid.payload as Record<string, unknown>;
  const cases: Array<[string, unknown]> = [
    ['another protocol version', { ...valid, commandProtocolVersion: '0.2' }],
    ['another protocol', { ...valid, commandProtocol: 'agent-event' }],
    ['a decision the protocol does not have', { ...valid, payload: { ...payload, decision: 'maybe' } }],
    ['an empty commandId', { ...valid, commandId: '' }],
    ['an empty idempotencyKey', { ...valid, idempotencyKey: '' }],
    ['an empty sessionId', { ...valid, sessionId: '' }],
    ['an empty runId', { ...valid, runId: '' }],
    ['an empty approvalId', { ...valid, payload: { ...payload, approvalId: '' } }],
    ['an infinite timestamp', { ...valid, timestamp: Number.POSITIVE_INFINITY }],
    ['a NaN timestamp', { ...valid, timestamp: Number.NaN }],
    ['an unknown payload field', { ...valid, payload: { ...payload, decison: 'approved' } }],
    ['an unknown envelope field', { ...valid, targetId: 'a1' }],
    ['meta that is an array', { ...valid, meta: ['a'] }],
    ['meta that is a Date', { ...valid, meta: new Date(0) }],
    ['meta that is not plain JSON', { ...valid, meta: { at: new Date(0) } }],
    ['a command type protocol 0.1 does not have', { ...valid, type: 'approval.approve' }],
    ['no command at all', undefined],
  ];

  it.each(cases)('rejects %s with invalid_command and calls nothing', async (_name, command) => {
    const executeCommand = answering([]);
    const onEvent = vi.fn();
    const error = await commandError(
      runAgentCommand({
        provider: commandProvider({ executeCommand }),
        command: command as AgentCommand,
        initialSequence: 0,
        onEvent,
      }),
    );
    expect(error.code).toBe('invalid_command');
    expect(error.retryable).toBe(false);
    expect(error.message).toMatch(/^Invalid command: /);
    expect(executeCommand).not.toHaveBeenCalled();
    expect(onEvent).not.toHaveBeenCalled();
  });

  it('names the offending field in the message', async () => {
    const error = await commandError(
      runAgentCommand({
        provider: commandProvider({ executeCommand: answering([]) }),
        command: { ...valid, payload: { ...payload, decision: 'maybe' } } as unknown as AgentCommand,
        initialSequence: 0,
        onEvent: vi.fn(),
      }),
    );
    expect(error.message).toContain('payload.decision');
  });

  it('checks the command before the provider: an invalid command of an unsupported type is invalid_command', async () => {
    const error = await commandError(
      runAgentCommand({
        provider: commandProvider({ commands: [] }),
        command: { ...valid, commandId: '' } as unknown as AgentCommand,
        initialSequence: 0,
        onEvent: vi.fn(),
      }),
    );
    expect(error.code).toBe('invalid_command');
  });
});

describe('runAgentCommand: unsupported commands (seed §9.1, §20.1)', () => {
  it.each([
    ['no commands declared', undefined],
    ['an empty commands list', []],
    ['other commands declared', ['run.cancel', 'tool.retry']],
  ] as const)('rejects a command the provider does not declare (%s) and calls nothing', async (_name, declared) => {
    const executeCommand = answering([]);
    const onEvent = vi.fn();
    const error = await commandError(
      runAgentCommand({
        provider: commandProvider({ commands: declared, executeCommand }),
        command: commands().create('approval.resolve', { approvalId: 'a1', decision: 'approved' }),
        initialSequence: 0,
        onEvent,
      }),
    );
    expect(error.code).toBe('unsupported_capability');
    expect(error.message).toContain(PROVIDER_ID);
    expect(error.message).toContain('approval.resolve');
    expect(executeCommand).not.toHaveBeenCalled();
    expect(onEvent).not.toHaveBeenCalled();
  });

  it('rejects a declared command when the provider has no executeCommand', async () => {
    const onEvent = vi.fn();
    const error = await commandError(
      runAgentCommand({
        provider: commandProvider({ commands: ['run.cancel'] }),
        command: commands().create('run.cancel', {}),
        initialSequence: 0,
        onEvent,
      }),
    );
    expect(error.code).toBe('unsupported_capability');
    expect(error.message).toContain('executeCommand');
    expect(error.message).toContain(PROVIDER_ID);
    expect(onEvent).not.toHaveBeenCalled();
  });
});

describe('runAgentCommand: events that break the contract (seed §9.3 step 7, §20.2)', () => {
  const INITIAL = 10;
  const events = () => runEvents('r1', 's1', INITIAL);

  /** Each case: the events answered, and how many of them come before the offending one. */
  const cases: Array<[string, () => unknown[], number]> = [
    [
      'an event of another session',
      () => {
        const factory = events();
        const first = factory.create('message.started', { messageId: 'm1', role: 'assistant' });
        return [first, { ...factory.create('message.completed', { messageId: 'm1' }), sessionId: 's2' }];
      },
      1,
    ],
    [
      'an event of another run',
      () => {
        const factory = events();
        const first = factory.create('message.started', { messageId: 'm1', role: 'assistant' });
        return [first, runEvents('r2', 's1', INITIAL + 1).create('message.started', { messageId: 'm1', role: 'user' })];
      },
      1,
    ],
    [
      'an event of a type the capabilities do not declare',
      () => {
        const factory = events();
        const first = factory.create('message.started', { messageId: 'm1', role: 'assistant' });
        return [first, factory.create('task.created', { taskId: 'k1', title: 'Plan' })];
      },
      1,
    ],
    [
      'a first event at the initial sequence',
      () => [{ ...events().create('message.started', { messageId: 'm1', role: 'assistant' }), sequence: INITIAL }],
      0,
    ],
    [
      'a first event before the initial sequence',
      () => [{ ...events().create('message.started', { messageId: 'm1', role: 'assistant' }), sequence: 1 }],
      0,
    ],
    [
      'a sequence that does not increase',
      () => {
        const factory = events();
        const first = factory.create('message.started', { messageId: 'm1', role: 'assistant' });
        return [
          first,
          { ...factory.create('message.delta', { messageId: 'm1', delta: 'x' }), sequence: first.sequence },
        ];
      },
      1,
    ],
    [
      'a sequence that goes back',
      () => {
        const factory = events();
        const first = factory.create('message.started', { messageId: 'm1', role: 'assistant' });
        const second = factory.create('message.delta', { messageId: 'm1', delta: 'x' });
        return [first, second, { ...factory.create('message.completed', { messageId: 'm1' }), sequence: INITIAL + 1 }];
      },
      2,
    ],
    [
      'an invalid event',
      () => {
        const factory = events();
        const first = factory.create('message.started', { messageId: 'm1', role: 'assistant' });
        return [first, { ...factory.create('message.delta', { messageId: 'm1', delta: 'x' }), payload: {} }];
      },
      1,
    ],
    ['a value that is not an event', () => [{ type: 'message.delta' }], 0],
  ];

  const declared: AgentEventType[] = ['message.started', 'message.delta', 'message.completed', 'approval.resolved'];

  it.each(cases)(
    'rejects %s with protocol_error, after delivering what came before it',
    async (_name, answer, before) => {
      const values = answer();
      let pulled = 0;
      let closed = false;
      const executeCommand = vi.fn<ExecuteCommand>(async function* () {
        try {
          for (const value of [...values, events().create('message.completed', { messageId: 'never' })]) {
            pulled += 1;
            yield value as AgentEvent;
          }
        } finally {
          closed = true;
        }
      });
      const onEvent = vi.fn();
      const error = await commandError(
        runAgentCommand({
          provider: commandProvider({ eventTypes: declared, executeCommand }),
          command: commands().create('run.cancel', {}),
          initialSequence: INITIAL,
          onEvent,
        }),
      );
      expect(error.code).toBe('protocol_error');
      expect(error.message).toContain(`Provider "${PROVIDER_ID}" answered run.cancel`);
      expect(error.cause).toBe(values[before]);
      expect(onEvent.mock.calls.map(([event]) => event)).toEqual(values.slice(0, before));
      // The stream is closed at the refusal: nothing after the offending event is read.
      expect(pulled).toBe(before + 1);
      expect(closed).toBe(true);
    },
  );

  it('does not call classifyError for a protocol error', async () => {
    const classifyError = vi.fn(() => ({ retryable: true }));
    const error = await commandError(
      runAgentCommand({
        provider: commandProvider({
          classifyError,
          executeCommand: answering([runEvents('r2').create('run.cancelled', {})]),
        }),
        command: commands().create('run.cancel', {}),
        initialSequence: 0,
        onEvent: vi.fn(),
      }),
    );
    expect(error.code).toBe('protocol_error');
    expect(error.retryable).toBe(false);
    expect(classifyError).not.toHaveBeenCalled();
  });
});

describe('runAgentCommand: sequences (seed §9.4)', () => {
  it('refuses a first event whose sequence is not greater than initialSequence', async () => {
    const onEvent = vi.fn();
    const error = await commandError(
      runAgentCommand({
        provider: commandProvider({
          executeCommand: answering([{ ...runEvents('r1', 's1', 7).create('run.cancelled', {}), sequence: 7 }]),
        }),
        command: commands().create('run.cancel', {}),
        initialSequence: 7,
        onEvent,
      }),
    );
    expect(error.code).toBe('protocol_error');
    expect(error.message).toContain('sequence 7 after 7');
    expect(onEvent).not.toHaveBeenCalled();
  });

  it('accepts a first event right after initialSequence, and gaps, without rewriting sequences', async () => {
    const factory = runEvents('r1', 's1', 7);
    const first = factory.create('message.started', { messageId: 'm1', role: 'assistant' });
    const later = { ...factory.create('message.completed', { messageId: 'm1' }), sequence: 20 };
    const onEvent = vi.fn();
    await runAgentCommand({
      provider: commandProvider({ executeCommand: answering([first, later]) }),
      command: commands().create('run.cancel', {}),
      initialSequence: 7,
      onEvent,
    });
    expect(first.sequence).toBe(8);
    expect(onEvent.mock.calls.map(([event]) => (event as AgentEvent).sequence)).toEqual([8, 20]);
  });
});

describe('runAgentCommand: provider errors (seed §9.2, §20.2)', () => {
  it.each([true, false])('fails provider_error, retryable %s as classifyError says', async (retryable) => {
    const failure = new Error('socket closed');
    const classifyError = vi.fn((_error: unknown, _context: unknown) => ({ retryable }));
    const error = await commandError(
      runAgentCommand({
        provider: commandProvider({ classifyError, executeCommand: failingAfter([], failure) }),
        command: commands().create('tool.retry', { toolCallId: 't1' }),
        initialSequence: 0,
        onEvent: vi.fn(),
      }),
    );
    expect(error.code).toBe('provider_error');
    expect(error.retryable).toBe(retryable);
    expect(error.cause).toBe(failure);
    expect(error.message).toBe(`Provider "${PROVIDER_ID}" failed to execute tool.retry: socket closed`);
    expect(classifyError).toHaveBeenCalledOnce();
    expect(classifyError).toHaveBeenCalledWith(failure, undefined);
  });

  it('is not retryable without classifyError, or when classifyError itself throws', async () => {
    for (const classifyError of [
      undefined,
      () => {
        throw new Error('classifier broke');
      },
    ]) {
      const error = await commandError(
        runAgentCommand({
          provider: commandProvider({
            executeCommand: failingAfter([], new Error('boom')),
            ...(classifyError === undefined ? {} : { classifyError }),
          }),
          command: commands().create('run.cancel', {}),
          initialSequence: 0,
          onEvent: vi.fn(),
        }),
      );
      expect(error.code).toBe('provider_error');
      expect(error.retryable).toBe(false);
    }
  });

  it('delivers the events before the failure', async () => {
    const events = runEvents('r1');
    const first = events.create('message.started', { messageId: 'm1', role: 'assistant' });
    const onEvent = vi.fn();
    const error = await commandError(
      runAgentCommand({
        provider: commandProvider({ executeCommand: failingAfter([first], new Error('reset by peer')) }),
        command: commands().create('run.cancel', {}),
        initialSequence: 0,
        onEvent,
      }),
    );
    expect(error.code).toBe('provider_error');
    expect(onEvent.mock.calls.map(([event]) => event)).toEqual([first]);
  });

  it('fails provider_error when executeCommand throws before returning a stream', async () => {
    const failure = new TypeError('no endpoint configured');
    const error = await commandError(
      runAgentCommand({
        provider: commandProvider({
          executeCommand: () => {
            throw failure;
          },
        }),
        command: commands().create('run.cancel', {}),
        initialSequence: 0,
        onEvent: vi.fn(),
      }),
    );
    expect(error.code).toBe('provider_error');
    expect(error.cause).toBe(failure);
    expect(error.message).toContain('no endpoint configured');
  });
});

describe('runAgentCommand: consumer errors (seed §9.3)', () => {
  it('rethrows the very error onEvent threw, not wrapped, and stops reading', async () => {
    const events = runEvents('r1');
    const failure = new Error('render failed');
    const classifyError = vi.fn(() => ({ retryable: true }));
    let closed = false;
    const executeCommand = vi.fn<ExecuteCommand>(async function* () {
      try {
        yield events.create('message.started', { messageId: 'm1', role: 'assistant' });
        yield events.create('message.completed', { messageId: 'm1' });
      } finally {
        closed = true;
      }
    });
    const onEvent = vi.fn(() => {
      throw failure;
    });
    await expect(
      runAgentCommand({
        provider: commandProvider({ executeCommand, classifyError }),
        command: commands().create('run.cancel', {}),
        initialSequence: 0,
        onEvent,
      }),
    ).rejects.toBe(failure);
    expect(onEvent).toHaveBeenCalledOnce();
    expect(classifyError).not.toHaveBeenCalled();
    expect(closed).toBe(true);
  });

  it('rethrows what onEvent threw even when it is an AgentCommandError or not an Error', async () => {
    const thrown = [new AgentCommandError('provider_error', 'from the consumer', { retryable: true }), 'a string'];
    for (const failure of thrown) {
      await expect(
        runAgentCommand({
          provider: commandProvider({ executeCommand: answering([runEvents('r1').create('run.cancelled', {})]) }),
          command: commands().create('run.cancel', {}),
          initialSequence: 0,
          onEvent: () => {
            throw failure;
          },
        }),
      ).rejects.toBe(failure);
    }
  });
});

/** Spies on a real AbortSignal's listeners, to tell which are still attached. */
function watchListeners(signal: AbortSignal) {
  const add = vi.spyOn(signal, 'addEventListener');
  const remove = vi.spyOn(signal, 'removeEventListener');
  return {
    added: () => add.mock.calls.length,
    left: () => {
      const removed = remove.mock.calls.map((call) => call[1]);
      return add.mock.calls.filter((call) => !removed.includes(call[1])).length;
    },
  };
}

describe('runAgentCommand: abort (seed §9.3 step 5, §20.2)', () => {
  it('fails interrupted without calling anything when the signal is already aborted', async () => {
    const caller = new AbortController();
    const reason = new Error('user left');
    caller.abort(reason);
    const listeners = watchListeners(caller.signal);
    const executeCommand = answering([]);
    const onEvent = vi.fn();
    const error = await commandError(
      runAgentCommand({
        provider: commandProvider({ executeCommand }),
        command: commands().create('run.cancel', {}),
        signal: caller.signal,
        initialSequence: 0,
        onEvent,
      }),
    );
    expect(error.code).toBe('interrupted');
    expect(error.cause).toBe(reason);
    expect(executeCommand).not.toHaveBeenCalled();
    expect(onEvent).not.toHaveBeenCalled();
    expect(listeners.left()).toBe(0);
  });

  it('fails interrupted when aborted during the command, and aborts the signal executeCommand got', async () => {
    const caller = new AbortController();
    const reason = new Error('user pressed stop');
    const events = runEvents('r1');
    let handed: AbortSignal | undefined;
    let reasonSeen: unknown;
    const executeCommand = vi.fn<ExecuteCommand>(async function* (_command, { signal }) {
      handed = signal;
      yield events.create('message.started', { messageId: 'm1', role: 'assistant' });
      // A provider that honours its signal: it stops when the signal aborts.
      await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
      reasonSeen = signal.reason;
      throw signal.reason;
    });
    const onEvent = vi.fn();
    const running = runAgentCommand({
      provider: commandProvider({ executeCommand }),
      command: commands().create('run.cancel', {}),
      signal: caller.signal,
      initialSequence: 0,
      onEvent,
    });
    await vi.waitFor(() => expect(onEvent).toHaveBeenCalledOnce());
    expect(handed?.aborted).toBe(false);
    caller.abort(reason);
    const error = await commandError(running);
    expect(error.code).toBe('interrupted');
    expect(handed?.aborted).toBe(true);
    // The caller's abort reached the provider with its reason.
    expect(reasonSeen).toBe(reason);
    expect(error.cause).toBe(reason);
    expect(onEvent).toHaveBeenCalledOnce();
  });

  it('fails interrupted and delivers nothing more when a provider ignores the abort', async () => {
    const caller = new AbortController();
    const events = runEvents('r1');
    const executeCommand = answering([
      events.create('message.started', { messageId: 'm1', role: 'assistant' }),
      events.create('message.completed', { messageId: 'm1' }),
    ]);
    const onEvent = vi.fn(() => caller.abort());
    const error = await commandError(
      runAgentCommand({
        provider: commandProvider({ executeCommand }),
        command: commands().create('run.cancel', {}),
        signal: caller.signal,
        initialSequence: 0,
        onEvent,
      }),
    );
    expect(error.code).toBe('interrupted');
    expect(onEvent).toHaveBeenCalledOnce();
  });

  it('fails interrupted, not provider_error, when the provider fails with its own error after an abort', async () => {
    const caller = new AbortController();
    const classifyError = vi.fn(() => ({ retryable: false }));
    const executeCommand = vi.fn<ExecuteCommand>(async function* (_command, { signal }) {
      await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
      throw new Error('fetch failed');
    });
    const running = runAgentCommand({
      provider: commandProvider({ executeCommand, classifyError }),
      command: commands().create('run.cancel', {}),
      signal: caller.signal,
      initialSequence: 0,
      onEvent: vi.fn(),
    });
    await vi.waitFor(() => expect(executeCommand).toHaveBeenCalled());
    caller.abort();
    const error = await commandError(running);
    expect(error.code).toBe('interrupted');
    expect(classifyError).not.toHaveBeenCalled();
  });

  describe('leaves no listener on the caller signal once the command ends', () => {
    const events = () => runEvents('r1');
    const outcomes: Array<[string, Partial<ProviderOptions>, () => void]> = [
      ['it succeeds', { executeCommand: answering([events().create('run.cancelled', {})]) }, () => {}],
      ['the provider fails', { executeCommand: failingAfter([], new Error('boom')) }, () => {}],
      [
        'the provider breaks the protocol',
        { executeCommand: answering([runEvents('r2').create('run.cancelled', {})]) },
        () => {},
      ],
      [
        'onEvent throws',
        { executeCommand: answering([events().create('run.cancelled', {})]) },
        () => {
          throw new Error('consumer');
        },
      ],
    ];

    it.each(outcomes)('when %s', async (_name, providerOptions, onEvent) => {
      const caller = new AbortController();
      const listeners = watchListeners(caller.signal);
      await runAgentCommand({
        provider: commandProvider(providerOptions),
        command: commands().create('run.cancel', {}),
        signal: caller.signal,
        initialSequence: 0,
        onEvent,
      }).catch(() => undefined);
      expect(listeners.added()).toBeGreaterThan(0);
      expect(listeners.left()).toBe(0);
    });

    it('when it is interrupted', async () => {
      const caller = new AbortController();
      const listeners = watchListeners(caller.signal);
      const executeCommand = vi.fn<ExecuteCommand>(async function* (_command, { signal }) {
        await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
      });
      const running = runAgentCommand({
        provider: commandProvider({ executeCommand }),
        command: commands().create('run.cancel', {}),
        signal: caller.signal,
        initialSequence: 0,
        onEvent: vi.fn(),
      });
      await vi.waitFor(() => expect(executeCommand).toHaveBeenCalled());
      caller.abort();
      expect((await commandError(running)).code).toBe('interrupted');
      expect(listeners.left()).toBe(0);
    });
  });
});
