import { describe, expect, it } from 'vitest';
import type { AgentCheckpointStorage } from '../checkpoint/AgentCheckpoint';
import type { AgentCheckpointError } from '../checkpoint/AgentCheckpointError';
import { createMemoryAgentCheckpointStorage } from '../checkpoint/createMemoryAgentCheckpointStorage';
import { AgentCommandError } from '../providers/AgentCommandError';
import { AgentProviderError } from '../providers/AgentProviderError';
import { defineAgentProvider } from '../providers/defineAgentProvider';
import { eventTypesOf } from '../providers/eventTypeGroups';
import { createLocalAgentProvider } from '../providers/local/createLocalAgentProvider';
import {
  createRemoteRuntime,
  type RemoteRun,
  requestRunWaitingOnTool,
  waitingOnTool,
} from '../tests/support/remoteRuntime';
import { until } from '../tests/support/until';
import { AgentTransportError } from '../transports/AgentTransportError';
import { createXChatRuntime, type XChatRuntime, type XChatSnapshot } from './createXChatRuntime';
import { isSameXChatError, toXChatError, type XChatError } from './toXChatError';

const tick = () => new Promise((resolve) => setTimeout(resolve, 0));

/** A stream that fails with `error` at its first read. */
function failingStream<Chunk>(error: unknown): AsyncIterable<Chunk> {
  return { [Symbol.asyncIterator]: () => ({ next: () => Promise.reject(error) }) };
}

/** A storage that reads nothing and whose saves fail. */
function unwritableStorage(): AgentCheckpointStorage {
  return {
    load: async () => undefined,
    save: async () => {
      throw new Error('disk full');
    },
    remove: async () => undefined,
  };
}

type RemoteRuntime = ReturnType<typeof createRemoteRuntime>;

/**
 * The remote runtime's provider, except that a run whose prompt is `break` loses its
 * connection before anything arrives, with `error`.
 */
function breakableProvider(remote: RemoteRuntime, error: unknown) {
  const { transport } = remote.provider;
  return {
    ...remote.provider,
    transport: {
      ...transport,
      open: (run: RemoteRun, signal: AbortSignal) =>
        (run.input as { prompt?: string }).prompt === 'break'
          ? failingStream<never>(error)
          : transport.open(run, signal),
    },
  };
}

type TypingChunk = { cursor: string; delta: string };

/** A resumable provider whose first stream types `Hel` (cursor 1) and then stays open; `resume` is given. */
function typingProvider(resume: () => AsyncIterable<TypingChunk>) {
  return defineAgentProvider({
    id: 'typing',
    capabilities: { eventTypes: eventTypesOf(['run', 'message']), resumable: true },
    transport: {
      kind: 'async-iterable',
      async *open(_request: { prompt: string }, signal: AbortSignal) {
        yield { cursor: '1', delta: 'Hel' };
        await new Promise((_resolve, reject) =>
          signal.addEventListener('abort', () => reject(signal.reason), { once: true }),
        );
      },
      resume: () => resume(),
      getCursor: (chunk: TypingChunk) => chunk.cursor,
    },
    createContext: (events) => ({ events }),
    start: (_input: { prompt: string }, { events }) => [
      events.emit('run.started', {}),
      events.emit('message.started', { messageId: 'answer', role: 'assistant' }),
    ],
    prepareRequest: (input) => input,
    transformChunk: (chunk, { events }) => [events.emit('message.delta', { messageId: 'answer', delta: chunk.delta })],
    incompleteStream: { message: 'The stream ended early', code: 'incomplete_stream' },
  });
}

/** Starts a run of the remote runtime that waits on approval `pay`; the run stays running. */
async function runWaitingOnApproval(
  chat: XChatRuntime<{ prompt?: string }>,
  remote: RemoteRuntime,
): Promise<RemoteRun> {
  const started = remote.nextRun();
  void chat.request({ prompt: 'Pay the invoice' });
  const run = await started;
  run.push((events) => [events.emit('approval.requested', { approvalId: 'pay' })]);
  await until(() => Object.keys(chat.getSnapshot().agentState.approvals).length > 0, 'the approval');
  return run;
}

/** Sends the decision on `pay` and returns the error it was rejected with. */
function approveFailing(chat: XChatRuntime<{ prompt?: string }>, run: RemoteRun): Promise<unknown> {
  return chat.agentActions.resolveApproval({ runId: run.runId, approvalId: 'pay', decision: 'approved' }).then(
    () => undefined,
    (error: unknown) => error,
  );
}

/** Starts a run of the remote runtime, feeds it `push`, ends its stream and waits for it. */
async function remoteRun(
  chat: XChatRuntime<{ prompt?: string }>,
  remote: RemoteRuntime,
  prompt: string,
  push: Parameters<RemoteRun['push']>[0],
) {
  const started = remote.nextRun();
  const result = chat.request({ prompt });
  const run = await started;
  run.push(push);
  run.end();
  return { run, result: await result };
}

describe('toXChatError with no error', () => {
  it('is undefined for a new conversation and after a run that completed', async () => {
    const provider = createLocalAgentProvider({ script: { steps: [{ type: 'text', deltas: ['Hi'] }] } });
    const chat = createXChatRuntime({ provider, sessionId: 'trip' });
    expect(toXChatError(chat.getSnapshot(), chat.sessionId)).toBeUndefined();
    expect((await chat.request({ prompt: 'Hello' })).status).toBe('completed');
    expect(toXChatError(chat.getSnapshot(), chat.sessionId)).toBeUndefined();
  });
});

describe("toXChatError: source 'run'", () => {
  it("is the failure of the session's latest run: its message and code, the run record as cause", async () => {
    const remote = createRemoteRuntime();
    const chat = createXChatRuntime({ provider: remote.provider, sessionId: 'trip' });
    const { run, result } = await remoteRun(chat, remote, 'Plan the trip', (events) => [
      events.emit('run.failed', { error: { message: 'Quota used up', code: 'quota' } }),
    ]);
    expect(result.status).toBe('failed');
    const snapshot = chat.getSnapshot();
    // The run failed in AgentState; the stream itself ended well.
    expect([snapshot.error, snapshot.connectionState]).toEqual([undefined, 'idle']);
    expect(toXChatError(snapshot, 'trip')).toEqual({
      message: 'Quota used up',
      code: 'quota',
      source: 'run',
      cause: snapshot.agentState.runs[run.runId],
    });
    // Only the runs of the session asked about count.
    expect(toXChatError(snapshot, 'another-trip')).toBeUndefined();
  });

  it('has no code when the run failed without one', async () => {
    const remote = createRemoteRuntime();
    const chat = createXChatRuntime({ provider: remote.provider, sessionId: 'trip' });
    await remoteRun(chat, remote, 'Plan the trip', (events) => [
      events.emit('run.failed', { error: { message: 'Something broke' } }),
    ]);
    const error = toXChatError(chat.getSnapshot(), 'trip');
    expect(error).toMatchObject({ message: 'Something broke', source: 'run' });
    expect(error !== undefined && 'code' in error).toBe(false);
  });

  it('is cleared by a later run of the session that did not fail', async () => {
    const remote = createRemoteRuntime();
    const chat = createXChatRuntime({ provider: remote.provider, sessionId: 'trip' });
    await remoteRun(chat, remote, 'One', (events) => [
      events.emit('run.failed', { error: { message: 'Quota used up' } }),
    ]);
    expect(toXChatError(chat.getSnapshot(), 'trip')?.message).toBe('Quota used up');
    await remoteRun(chat, remote, 'Two', (events) => [events.emit('run.completed', {})]);
    const snapshot = chat.getSnapshot();
    expect(Object.values(snapshot.agentState.runs).map((run) => run.status)).toEqual(['failed', 'completed']);
    expect(toXChatError(snapshot, 'trip')).toBeUndefined();
  });

  it('is the error an automatic continuation broke off with, while the connection is not broken', async () => {
    const remote = createRemoteRuntime();
    const lost = Object.assign(new Error('The continuation lost its session'), { code: 'session_lost' });
    // The provider cannot make a continuation's context: the run that continues never starts.
    const provider = {
      ...remote.provider,
      createContext: (options: Parameters<typeof remote.provider.createContext>[0]) => {
        if (options.continuation !== undefined) throw lost;
        return remote.provider.createContext(options);
      },
    };
    const chat = createXChatRuntime({ provider, sessionId: 'trip' });
    const { run } = await remoteRun(chat, remote, 'Weather in Paris?', waitingOnTool);
    await chat.agentActions.submitToolResult({ runId: run.runId, toolCallId: 'call-1', result: { celsius: 14 } });
    await until(() => chat.getSnapshot().error !== undefined, 'the continuation to break off');
    const snapshot = chat.getSnapshot();
    expect(snapshot.connectionState).toBe('idle');
    expect(toXChatError(snapshot, 'trip')).toEqual({
      message: 'The continuation lost its session',
      code: 'session_lost',
      source: 'run',
      cause: lost,
    });
  });
});

describe("toXChatError: source 'connection'", () => {
  it('is the error a stream broke off with when the connection failed, before the run it failed', async () => {
    const remote = createRemoteRuntime();
    const dropped = new AgentTransportError('network_error', 'The socket closed');
    const chat = createXChatRuntime({
      provider: breakableProvider(remote, dropped),
      sessionId: 'trip',
      reconnect: false,
    });
    const result = await chat.request({ prompt: 'break' });
    expect(result.status).toBe('failed');
    const snapshot = chat.getSnapshot();
    expect(snapshot.connectionState).toBe('failed');
    // The run failed too, with an error of its own: the connection's is the one shown.
    expect(snapshot.agentState.runs[result.runId]?.status).toBe('failed');
    expect(toXChatError(snapshot, 'trip')).toEqual({
      message: 'The socket closed',
      code: 'network_error',
      source: 'connection',
      cause: dropped,
    });
  });

  it('is the error of a stream that cannot go on (unrecoverable): a resumed run whose cursor expired', async () => {
    const storage = createMemoryAgentCheckpointStorage();
    const expired = new AgentTransportError('invalid_cursor', 'Cursor 1 expired', { status: 410 });
    const provider = typingProvider(() => failingStream(expired));
    const first = createXChatRuntime({ provider, sessionId: 'trip', checkpointStorage: storage });
    void first.request({ prompt: 'Hello' });
    await until(() => Object.keys(first.getSnapshot().agentState.messages).length === 1, 'the first delta');
    await first.flushCheckpoint();
    first.abort();

    // The page reloads: the running run is resumed from cursor 1, which the server no longer knows.
    const second = createXChatRuntime({ provider, sessionId: 'trip', checkpointStorage: storage });
    await second.restored;
    await until(() => second.getSnapshot().connectionState === 'unrecoverable', 'the resume to be refused');
    const snapshot = second.getSnapshot();
    expect(AgentProviderError.isInstance(snapshot.error)).toBe(true);
    expect(toXChatError(snapshot, 'trip')).toEqual({
      message: 'Provider "typing": cannot resume the run: the transport refused its cursor (Cursor 1 expired)',
      code: 'invalid_cursor',
      source: 'connection',
      cause: snapshot.error,
    });
  });
});

describe("toXChatError: source 'command'", () => {
  it('is the failure of the latest command: its message and code, the AgentCommandError as cause', async () => {
    const remote = createRemoteRuntime({
      onCommand: () => {
        throw new Error('Payments are down');
      },
    });
    const chat = createXChatRuntime({ provider: remote.provider, sessionId: 'trip' });
    const run = await runWaitingOnApproval(chat, remote);
    const rejection = await approveFailing(chat, run);
    expect(AgentCommandError.isInstance(rejection)).toBe(true);
    const snapshot = chat.getSnapshot();
    expect(Object.values(snapshot.commandStates).map((state) => state.status)).toEqual(['failed']);
    expect(toXChatError(snapshot, 'trip')).toEqual({
      message: 'Provider "remote" failed to execute approval.resolve: Payments are down',
      code: 'provider_error',
      source: 'command',
      cause: rejection,
    });
    run.end();
  });

  it('is undefined when a later command of another action succeeded', async () => {
    let clock = 1_000;
    const remote = createRemoteRuntime();
    remote.setOnCommand((command) => {
      if (command.type === 'approval.resolve') throw new Error('Payments are down');
      return [];
    });
    const chat = createXChatRuntime({ provider: remote.provider, sessionId: 'trip', now: () => (clock += 1) });
    const run = await runWaitingOnApproval(chat, remote);
    run.push((events) => [
      events.emit('tool.requested', { toolCallId: 'search', name: 'search' }),
      events.emit('tool.failed', { toolCallId: 'search', error: { message: 'Search is down', retryable: true } }),
    ]);
    await until(() => Object.keys(chat.getSnapshot().agentState.toolCalls).length === 1, 'the failed tool call');
    await approveFailing(chat, run);
    expect(toXChatError(chat.getSnapshot(), 'trip')?.source).toBe('command');
    await chat.agentActions.retryTool({ runId: run.runId, toolCallId: 'search' });
    const snapshot = chat.getSnapshot();
    expect(Object.values(snapshot.commandStates).map((state) => [state.command.type, state.status])).toEqual([
      ['approval.resolve', 'failed'],
      ['tool.retry', 'succeeded'],
    ]);
    expect(toXChatError(snapshot, 'trip')).toBeUndefined();
    run.end();
  });
});

describe("toXChatError: source 'checkpoint'", () => {
  it('is the checkpoint error a restore failed with, while the connection is failed', async () => {
    const garbage: AgentCheckpointStorage = {
      load: async () => ({ hello: 'world' }),
      save: async () => undefined,
      remove: async () => undefined,
    };
    const provider = createLocalAgentProvider({ script: { steps: [{ type: 'text', deltas: ['Hi'] }] } });
    const chat = createXChatRuntime({ provider, sessionId: 'trip', checkpointStorage: garbage });
    await chat.restored;
    const snapshot = chat.getSnapshot();
    expect(snapshot.connectionState).toBe('failed');
    const checkpointError = snapshot.checkpointError as AgentCheckpointError;
    expect(checkpointError.code).toBe('invalid_checkpoint');
    expect(toXChatError(snapshot, 'trip')).toEqual({
      message: checkpointError.message,
      code: 'invalid_checkpoint',
      source: 'checkpoint',
      cause: checkpointError,
    });
  });

  it('is the error of a save that failed, while the runs went on', async () => {
    const provider = createLocalAgentProvider({ script: { steps: [{ type: 'text', deltas: ['Hi'] }] } });
    const chat = createXChatRuntime({ provider, sessionId: 'trip', checkpointStorage: unwritableStorage() });
    expect((await chat.request({ prompt: 'Hello' })).status).toBe('completed');
    await chat.flushCheckpoint();
    await tick();
    const snapshot = chat.getSnapshot();
    expect(toXChatError(snapshot, 'trip')).toEqual({
      message: 'The storage failed to save the checkpoint of session "trip"',
      code: 'storage_failed',
      source: 'checkpoint',
      cause: snapshot.checkpointError,
    });
  });

  it('is the error of a load that failed, before and after the next request', async () => {
    const unreadable: AgentCheckpointStorage = {
      load: async () => {
        throw new Error('permission denied');
      },
      save: async () => undefined,
      remove: async () => undefined,
    };
    const provider = createLocalAgentProvider({ script: { steps: [{ type: 'text', deltas: ['Hi'] }] } });
    const chat = createXChatRuntime({ provider, sessionId: 'trip', checkpointStorage: unreadable });
    await chat.restored;
    expect(chat.getSnapshot().connectionState).toBe('failed');
    expect(toXChatError(chat.getSnapshot(), 'trip')).toMatchObject({ source: 'checkpoint', code: 'storage_failed' });
    await chat.request({ prompt: 'Hello' });
    const snapshot = chat.getSnapshot();
    expect(toXChatError(snapshot, 'trip')).toEqual({
      message: 'The storage failed to load the checkpoint of session "trip"',
      code: 'storage_failed',
      source: 'checkpoint',
      cause: snapshot.checkpointError,
    });
  });
});

describe('toXChatError: which error is shown when there are several', () => {
  it('connection, then the latest run, then the latest command, then the checkpoint', async () => {
    const remote = createRemoteRuntime({
      onCommand: () => {
        throw new Error('Payments are down');
      },
    });
    const dropped = new AgentTransportError('network_error', 'The socket closed');
    const chat = createXChatRuntime({
      provider: breakableProvider(remote, dropped),
      sessionId: 'trip',
      reconnect: false,
      checkpointStorage: unwritableStorage(),
    });
    await chat.restored;
    const shown = () => toXChatError(chat.getSnapshot(), 'trip');

    // A save fails.
    const payment = await runWaitingOnApproval(chat, remote);
    await chat.flushCheckpoint();
    await tick();
    expect(shown()).toMatchObject({ source: 'checkpoint', code: 'storage_failed' });

    // A command fails: it is shown over the checkpoint error.
    await approveFailing(chat, payment);
    expect(chat.getSnapshot().checkpointError).toBeDefined();
    expect(shown()).toMatchObject({ source: 'command', code: 'provider_error' });

    // The session's latest run fails: it is shown over the command.
    await remoteRun(chat, remote, 'Summarize', (events) => [
      events.emit('run.failed', { error: { message: 'Quota used up', code: 'quota' } }),
    ]);
    expect(Object.values(chat.getSnapshot().commandStates).map((state) => state.status)).toEqual(['failed']);
    expect(shown()).toMatchObject({ source: 'run', code: 'quota', message: 'Quota used up' });

    // A stream breaks off and the connection fails: it is shown over the failed run.
    const broken = await chat.request({ prompt: 'break' });
    expect(broken.status).toBe('failed');
    expect(shown()).toEqual({
      message: 'The socket closed',
      code: 'network_error',
      source: 'connection',
      cause: dropped,
    });

    // Each one gone, the next is shown again: a request clears the connection error, and its
    // run completing clears the failed run...
    await remoteRun(chat, remote, 'Again', (events) => [events.emit('run.completed', {})]);
    expect(shown()).toMatchObject({ source: 'command', code: 'provider_error' });
    // ...and the end of the payment run drops its command states.
    payment.push((events) => [events.emit('run.cancelled', { reason: 'user' })]);
    payment.end();
    await until(() => Object.keys(chat.getSnapshot().commandStates).length === 0, 'the command states to go');
    expect(shown()).toMatchObject({ source: 'checkpoint', code: 'storage_failed' });
  });
});

describe('toXChatError describes any value an error was', () => {
  const base = (): XChatSnapshot => {
    const provider = createLocalAgentProvider({ script: { steps: [] } });
    return createXChatRuntime({ provider, sessionId: 'trip' }).getSnapshot();
  };

  it("calls an error of a stream whose connection is not broken 'run', one of a broken connection 'connection'", () => {
    const error = new TypeError('Cannot read the frame');
    for (const connectionState of ['idle', 'connecting', 'connected', 'reconnecting', 'restoring'] as const) {
      expect(toXChatError({ ...base(), error, connectionState }, 'trip')).toEqual({
        message: 'Cannot read the frame',
        source: 'run',
        cause: error,
      });
    }
    for (const connectionState of ['failed', 'unrecoverable'] as const) {
      expect(toXChatError({ ...base(), error, connectionState }, 'trip')?.source).toBe('connection');
    }
  });

  it('takes a string message and a string code, and makes a message of anything else', () => {
    const described = (error: unknown) => toXChatError({ ...base(), error, connectionState: 'failed' }, 'trip');
    expect(described('socket hang up')).toEqual({
      message: 'socket hang up',
      source: 'connection',
      cause: 'socket hang up',
    });
    expect(described(503)).toEqual({ message: '503', source: 'connection', cause: 503 });
    const odd = { message: 42, code: 7 };
    expect(described(odd)).toEqual({ message: '[object Object]', source: 'connection', cause: odd });
    const plain = { message: 'Overloaded', code: 'overloaded', status: 503 };
    expect(described(plain)).toEqual({ message: 'Overloaded', code: 'overloaded', source: 'connection', cause: plain });
  });
});

describe('isSameXChatError', () => {
  const cause = new Error('Quota used up');
  const error: XChatError = { message: 'Quota used up', code: 'quota', source: 'run', cause };

  it('is true for the same error, two undefined, and two errors with the same fields and cause', () => {
    expect(isSameXChatError(error, error)).toBe(true);
    expect(isSameXChatError(undefined, undefined)).toBe(true);
    expect(isSameXChatError(error, { ...error })).toBe(true);
  });

  it('is false when one is missing, or the source, message, code or cause differs', () => {
    expect(isSameXChatError(error, undefined)).toBe(false);
    expect(isSameXChatError(undefined, error)).toBe(false);
    expect(isSameXChatError(error, { ...error, source: 'connection' })).toBe(false);
    expect(isSameXChatError(error, { ...error, message: 'Quota used up.' })).toBe(false);
    expect(isSameXChatError(error, { ...error, code: 'rate_limit' })).toBe(false);
    const { code: _code, ...withoutCode } = error;
    expect(isSameXChatError(error, withoutCode)).toBe(false);
    expect(isSameXChatError(error, { ...error, cause: new Error('Quota used up') })).toBe(false);
  });

  it('finds the errors toXChatError makes again from an unchanged snapshot the same', async () => {
    const remote = createRemoteRuntime({
      onCommand: () => {
        throw new Error('Payments are down');
      },
    });
    const chat = createXChatRuntime({ provider: remote.provider, sessionId: 'trip' });
    const run = await runWaitingOnApproval(chat, remote);
    await approveFailing(chat, run);
    const snapshot = chat.getSnapshot();
    const first = toXChatError(snapshot, 'trip');
    const again = toXChatError(snapshot, 'trip');
    expect(first?.source).toBe('command');
    expect(isSameXChatError(first, again)).toBe(true);
    // A run's failure is made once per AgentState: the same object each time.
    await remoteRun(chat, remote, 'Summarize', (events) => [
      events.emit('run.failed', { error: { message: 'Quota used up' } }),
    ]);
    const failed = chat.getSnapshot();
    expect(toXChatError(failed, 'trip')?.source).toBe('run');
    expect(toXChatError(failed, 'trip')).toBe(toXChatError(failed, 'trip'));
    run.end();
  });
});

describe('toXChatError after a run that continues the conversation', () => {
  it('shows nothing once a continuation completed after a failed connection', async () => {
    const remote = createRemoteRuntime();
    const { transport } = remote.provider;
    const dropped = new AgentTransportError('network_error', 'The socket closed');
    const provider = {
      ...remote.provider,
      transport: {
        ...transport,
        open: (run: RemoteRun, signal: AbortSignal) =>
          (run.input as { prompt?: string }).prompt === 'break'
            ? { [Symbol.asyncIterator]: () => ({ next: () => Promise.reject(dropped) }) }
            : transport.open(run, signal),
      },
    };
    const chat = createXChatRuntime({ provider, sessionId: 'trip', reconnect: false });
    const run = await requestRunWaitingOnTool(chat, remote);
    await chat.request({ prompt: 'break' });
    expect(toXChatError(chat.getSnapshot(), 'trip')).toMatchObject({ source: 'connection', code: 'network_error' });
    const next = remote.nextRun();
    await chat.agentActions.submitToolResult({ runId: run.runId, toolCallId: 'call-1', result: 1 });
    const continuation = await next;
    continuation.push((events) => [events.emit('run.completed', {})]);
    continuation.end();
    await until(() => chat.getSnapshot().connectionState === 'idle', 'the connection to close');
    const snapshot = chat.getSnapshot();
    expect(Object.values(snapshot.agentState.runs).map(({ status }) => status)).toEqual([
      'completed',
      'failed',
      'completed',
    ]);
    expect(toXChatError(snapshot, 'trip')).toBeUndefined();
  });
});
