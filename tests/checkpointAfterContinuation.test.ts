// A refresh right after an automatic continuation: the run that started is in the next
// checkpoint, or the restore says what is missing. Timers are fake, so the throttle window
// (1 s) never passes by itself: only saves made at once reach the storage.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { AgentCheckpoint, AgentCheckpointStorage } from '../checkpoint/AgentCheckpoint';
import { AgentCheckpointError } from '../checkpoint/AgentCheckpointError';
import { createMemoryAgentCheckpointStorage } from '../checkpoint/createMemoryAgentCheckpointStorage';
import type { AgentEvent } from '../protocol/eventSchemas';
import type { AgentProviderContextOptions } from '../providers/AgentProvider';
import type { AgentRunEmitter } from '../providers/createAgentRunEmitter';
import { defineAgentProvider } from '../providers/defineAgentProvider';
import { eventTypesOf } from '../providers/eventTypeGroups';
import { createXChatRuntime } from '../runtime/createXChatRuntime';
import { createAsyncIterableTransport } from '../transports/createAsyncIterableTransport';

beforeEach(() => {
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
});
afterEach(() => {
  vi.useRealTimers();
});

/** Runs what is due now (promises, zero-delay timers) without letting any time pass. */
async function settle(): Promise<void> {
  for (let round = 0; round < 20; round += 1) await vi.advanceTimersByTimeAsync(0);
}

type Chunk = (events: AgentRunEmitter) => AgentEvent[];

/** One run's stream on the wire, fed by the test. */
interface WireRun {
  options: AgentProviderContextOptions;
  send(chunk: Chunk): void;
  end(): void;
}

/**
 * A runtime on the wire as AG-UI's or OpenAI's are: the run's `run.started` is the server's
 * first frame, not something `start` makes up, so it arrives a network delay after the request.
 */
function createWire() {
  const runs: WireRun[] = [];
  const waiting: Array<(run: WireRun) => void> = [];
  const provider = defineAgentProvider({
    id: 'wire',
    capabilities: { eventTypes: eventTypesOf(['run', 'message', 'tool']) },
    transport: createAsyncIterableTransport<WireRun & { frames(): AsyncIterable<Chunk> }, Chunk>((run) => run.frames()),
    createContext: (events: AgentRunEmitter, options: AgentProviderContextOptions) => {
      const queue: Array<Chunk | 'end'> = [];
      let wake: (() => void) | undefined;
      const run = {
        options,
        send(chunk: Chunk) {
          queue.push(chunk);
          wake?.();
        },
        end() {
          queue.push('end');
          wake?.();
        },
        async *frames() {
          for (;;) {
            const next = queue.shift();
            if (next === 'end') return;
            if (next !== undefined) yield next;
            else await new Promise<void>((resolve) => (wake = resolve));
          }
        },
      };
      runs.push(run);
      for (const resolve of waiting.splice(0)) resolve(run);
      return { events, run };
    },
    start: () => [],
    prepareRequest: (_input: { prompt: string }, { run }) => run,
    transformChunk: (chunk: Chunk, { events }) => chunk(events),
    incompleteStream: { message: 'The stream ended early', code: 'incomplete_stream' },
  });
  return {
    provider,
    runs,
    nextRun: () => new Promise<WireRun>((resolve) => waiting.push(resolve)),
  };
}

/** The first run asks the application for a tool and ends waiting for it. */
function askForTool(run: WireRun): void {
  run.send((events) => [
    events.emit('run.started', {}),
    events.emit('tool.requested', { toolCallId: 'gps', name: 'locate' }),
    events.emit('tool.arguments_completed', { toolCallId: 'gps', arguments: '{}' }),
    events.emit('run.completed', { pendingToolCallIds: ['gps'] }),
  ]);
  run.end();
}

/** A memory storage; a save `lost` says of never reaches it (the page closed first) and never answers. */
function pageStorage(lost: (checkpoint: AgentCheckpoint) => boolean = () => false) {
  const inner = createMemoryAgentCheckpointStorage();
  const storage: AgentCheckpointStorage = {
    load: (sessionId) => inner.load(sessionId),
    save: (checkpoint) => (lost(checkpoint) ? new Promise<void>(() => undefined) : inner.save(checkpoint)),
    remove: (sessionId) => inner.remove(sessionId),
  };
  return { storage };
}

const holdsContinuation = (checkpoint: AgentCheckpoint) =>
  Object.values(checkpoint.state.runs).some((run) => run.continuesRunId !== undefined);

/** Starts a conversation whose first run waited for a tool, answers it, and returns once the continuation streams. */
async function continueAutomatically(storage: AgentCheckpointStorage) {
  const wire = createWire();
  const chat = createXChatRuntime({ provider: wire.provider, sessionId: 'trip', checkpointStorage: storage });
  await settle();
  const first = wire.nextRun();
  void chat.request({ prompt: 'Where am I?' });
  await settle();
  askForTool(await first);
  await settle();
  const run1 = Object.keys(chat.getSnapshot().agentState.runs)[0] as string;
  const second = wire.nextRun();
  const submitted = chat.agentActions.submitToolResult({ runId: run1, toolCallId: 'gps', result: { lat: 48.85 } });
  await settle();
  await submitted;
  const continuation = await second;
  // The server's first frame arrives a little later (less than the throttle window).
  await vi.advanceTimersByTimeAsync(50);
  continuation.send((events) => [events.emit('run.started', {})]);
  await settle();
  const run2 = continuation.options.runId;
  // The continuation has started and streams (the model is thinking): nothing ended it.
  expect(chat.getSnapshot().agentState.runs[run2]).toMatchObject({ status: 'running', continuesRunId: run1 });
  return { chat, wire, run1, run2 };
}

describe('a refresh right after an automatic continuation', () => {
  it('finds the continuation that started in the checkpoint, without waiting for the throttle window', async () => {
    const page = pageStorage();
    const { run1, run2 } = await continueAutomatically(page.storage);
    const saved = (await page.storage.load('trip')) as AgentCheckpoint;
    expect(saved.state.runs[run2]).toMatchObject({ status: 'running', continuesRunId: run1 });
    expect(saved.inputByRun[run2]).toEqual({ prompt: 'Where am I?' });

    // The refreshed page: the continuation is there, running (this provider cannot resume it).
    const refreshed = createXChatRuntime({
      provider: createWire().provider,
      sessionId: 'trip',
      checkpointStorage: page.storage,
    });
    await settle();
    await refreshed.restored;
    const snapshot = refreshed.getSnapshot();
    expect(snapshot.agentState.runs[run2]).toMatchObject({ status: 'running', continuesRunId: run1 });
    expect(snapshot.strandedRunIds).toEqual([run2]);
    expect(snapshot.connectionState).toBe('unrecoverable');
  });

  it('says which run was not continued when the save of the continuation never reached the storage', async () => {
    const page = pageStorage(holdsContinuation);
    const { run1, wire } = await continueAutomatically(page.storage);
    const storage = page.storage;
    const refreshed = createXChatRuntime({ provider: wire.provider, sessionId: 'trip', checkpointStorage: storage });
    await settle();
    await refreshed.restored;
    const snapshot = refreshed.getSnapshot();
    expect(snapshot.agentState.runs[run1]?.status).toBe('completed');
    expect(snapshot.connectionState).toBe('idle');
    const error = snapshot.checkpointError;
    expect(AgentCheckpointError.isInstance(error) && [error.code, error.runId, error.path]).toEqual([
      'incomplete_checkpoint',
      run1,
      `state.runs.${run1}`,
    ]);
    expect(error?.message).toBe(
      `Run "${run1}" had every input it waited for, but no run continuing it was saved (the page may have closed before the continuation was): continue it with agentActions.continueRun`,
    );
    expect(snapshot.error).toBe(error);

    // Continuing by hand goes on from there, once.
    const next = wire.nextRun();
    const continued = refreshed.agentActions.continueRun({ runId: run1 });
    const run2 = await next;
    expect(run2.options.continuation).toEqual({ runId: run1, approvals: [] });
    run2.send((events) => [events.emit('run.started', {}), events.emit('run.completed', {})]);
    run2.end();
    await settle();
    expect(await continued).toMatchObject({ status: 'completed' });
  });

  it('says nothing of a run whose continuation is in the checkpoint, and refuses to continue it again', async () => {
    const page = pageStorage();
    const { run1, run2 } = await continueAutomatically(page.storage);
    const refreshed = createXChatRuntime({
      provider: createWire().provider,
      sessionId: 'trip',
      checkpointStorage: page.storage,
    });
    await settle();
    await refreshed.restored;
    expect(refreshed.getSnapshot().checkpointError).toBeUndefined();
    expect(refreshed.getSnapshot().agentState.runs[run2]?.continuesRunId).toBe(run1);
    await expect(refreshed.agentActions.continueRun({ runId: run1 })).rejects.toMatchObject({
      code: 'invalid_command',
    });
  });
});
