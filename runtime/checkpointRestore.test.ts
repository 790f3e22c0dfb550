import { describe, expect, it } from 'vitest';
import type { AgentCheckpoint, AgentCheckpointStorage } from '../checkpoint/AgentCheckpoint';
import { AgentCheckpointError } from '../checkpoint/AgentCheckpointError';
import { createMemoryAgentCheckpointStorage } from '../checkpoint/createMemoryAgentCheckpointStorage';
import { getAgentEntityKey } from '../protocol/getAgentEntityKey';
import { AgentCommandError } from '../providers/AgentCommandError';
import { defineAgentProvider } from '../providers/defineAgentProvider';
import { eventTypesOf } from '../providers/eventTypeGroups';
import { createLocalAgentProvider } from '../providers/local/createLocalAgentProvider';
import { createOpenAICompatibleAgentProvider } from '../providers/openai/createOpenAICompatibleAgentProvider';
import { startHttpServer } from '../tests/support/httpServer';
import { createRemoteRuntime } from '../tests/support/remoteRuntime';
import { until } from '../tests/support/until';
import { createAsyncIterableTransport } from '../transports/createAsyncIterableTransport';
import { createXChatRuntime } from './createXChatRuntime';

const tick = () => new Promise((resolve) => setTimeout(resolve, 0));

/** A storage whose `load` waits until `release` is called. */
function slowStorage(inner: AgentCheckpointStorage) {
  let release: () => void = () => undefined;
  const gate = new Promise<void>((resolve) => {
    release = resolve;
  });
  const storage: AgentCheckpointStorage = {
    load: async (sessionId) => {
      await gate;
      return inner.load(sessionId);
    },
    save: (checkpoint) => inner.save(checkpoint),
    remove: (sessionId) => inner.remove(sessionId),
  };
  return { storage, release };
}

describe('the runtime saves its conversation to a checkpoint', () => {
  it('keeps AgentState, the input and cursor of running runs, and nothing built from the input', async () => {
    const storage = createMemoryAgentCheckpointStorage();
    const remote = createRemoteRuntime();
    const chat = createXChatRuntime({ provider: remote.provider, sessionId: 'trip', checkpointStorage: storage });
    await chat.restored;
    const started = remote.nextRun();
    void chat.request({ prompt: 'Plan the trip' });
    const run = await started;
    run.push((events) => [events.emit('message.started', { messageId: 'm', role: 'assistant' })]);
    await until(() => chat.getSnapshot().agentState.messages[getAgentEntityKey(run.runId, 'm')] !== undefined, 'm');
    await chat.flushCheckpoint();
    const saved = (await storage.load('trip')) as AgentCheckpoint;
    expect(saved).toMatchObject({
      schemaVersion: 1,
      sessionId: 'trip',
      inputByRun: { [run.runId]: { prompt: 'Plan the trip' } },
    });
    expect(saved.state).toEqual(chat.getSnapshot().agentState);
    // The async-iterable transport gives no cursors: there is none to save.
    expect(saved.cursorByRun).toEqual({});
    run.push((events) => [events.emit('run.completed', {})]);
    run.end();
    await until(() => !chat.getSnapshot().isRequesting, 'the run to end');
    await chat.flushCheckpoint();
    // A finished run needs no input to be resumed or continued.
    expect(((await storage.load('trip')) as AgentCheckpoint).inputByRun).toEqual({});
  });

  it('records a storage that fails, and the run goes on', async () => {
    const failing: AgentCheckpointStorage = {
      load: async () => undefined,
      save: async () => {
        throw new Error('disk full');
      },
      remove: async () => undefined,
    };
    const provider = createLocalAgentProvider({ script: { steps: [{ type: 'text', deltas: ['Hi'] }] } });
    const chat = createXChatRuntime({ provider, sessionId: 'trip', checkpointStorage: failing });
    expect((await chat.request({ prompt: 'Hello' })).status).toBe('completed');
    await chat.flushCheckpoint();
    await tick();
    const { checkpointError, agentState } = chat.getSnapshot();
    expect(AgentCheckpointError.isInstance(checkpointError)).toBe(true);
    expect(checkpointError?.code).toBe('storage_failed');
    expect(Object.values(agentState.runs).map((run) => run.status)).toEqual(['completed']);
  });
});

describe('a storage written to the seed (003 §12.2): save(checkpoint), load(sessionId), remove(sessionId)', () => {
  it("is saved under the checkpoint's own sessionId, the runtime's, and restored from it", async () => {
    const texts = new Map<string, string>();
    const calls: string[] = [];
    const storage: AgentCheckpointStorage = {
      load: async (sessionId) => {
        calls.push(`load ${sessionId}`);
        const text = texts.get(sessionId);
        return text === undefined ? undefined : JSON.parse(text);
      },
      save: async (checkpoint) => {
        calls.push(`save ${checkpoint.sessionId}`);
        texts.set(checkpoint.sessionId, JSON.stringify(checkpoint));
      },
      remove: async (sessionId) => {
        texts.delete(sessionId);
      },
    };
    const provider = createLocalAgentProvider({ script: { steps: [{ type: 'text', deltas: ['Hi'] }] } });
    const first = createXChatRuntime({ provider, sessionId: 'trip', checkpointStorage: storage });
    await first.request({ prompt: 'Hello' });
    await first.flushCheckpoint();
    expect([...texts.keys()]).toEqual(['trip']);
    expect(new Set(calls)).toEqual(new Set(['load trip', 'save trip']));

    const second = createXChatRuntime({ provider, sessionId: 'trip', checkpointStorage: storage });
    await second.restored;
    expect(second.getSnapshot().connectionState).toBe('idle');
    expect(second.getSnapshot().agentState).toEqual(first.getSnapshot().agentState);
  });
});

describe('the runtime restores its conversation from the checkpoint', () => {
  it('restores AgentState; while restoring, requests wait and commands are refused with `restoring`', async () => {
    const inner = createMemoryAgentCheckpointStorage();
    const provider = createLocalAgentProvider({ script: { steps: [{ type: 'text', deltas: ['First answer'] }] } });
    const first = createXChatRuntime({ provider, sessionId: 'trip', checkpointStorage: inner });
    const { runId } = await first.request({ prompt: 'One' });
    await first.flushCheckpoint();

    const { storage, release } = slowStorage(inner);
    const second = createXChatRuntime({ provider, sessionId: 'trip', checkpointStorage: storage });
    expect(second.getSnapshot().connectionState).toBe('restoring');
    const refused = await second.agentActions.cancelRun({ runId }).catch((error: unknown) => error);
    expect(AgentCommandError.isInstance(refused) && refused.code).toBe('restoring');
    const queued = second.request({ prompt: 'Two' });
    await tick();
    expect(Object.keys(second.getSnapshot().agentState.runs)).toEqual([]);
    expect(second.getSnapshot().isRequesting).toBe(true);
    release();
    await second.restored;
    expect(second.getSnapshot().agentState.runs[runId]).toEqual(first.getSnapshot().agentState.runs[runId]);
    await queued;
    expect(second.getSnapshot().messages.map(({ message }) => message.content)).toEqual([
      'One',
      'First answer',
      'Two',
      'First answer',
    ]);
    expect(second.getSnapshot().connectionState).toBe('idle');
  });

  it('fails closed on an invalid checkpoint: nothing restored, the error kept, and remove starts empty', async () => {
    const storage = createMemoryAgentCheckpointStorage();
    const provider = createLocalAgentProvider({ script: { steps: [{ type: 'text', deltas: ['Hi'] }] } });
    const first = createXChatRuntime({ provider, sessionId: 'trip', checkpointStorage: storage });
    await first.request({ prompt: 'Hello' });
    await first.flushCheckpoint();
    const saved = (await storage.load('trip')) as AgentCheckpoint;
    const hostile = JSON.parse(JSON.stringify(saved));
    hostile.state.runs[Object.keys(hostile.state.runs)[0] as string].status = 'exploded <script>';
    await storage.save(hostile);

    const second = createXChatRuntime({ provider, sessionId: 'trip', checkpointStorage: storage });
    await second.restored;
    const snapshot = second.getSnapshot();
    expect(snapshot.connectionState).toBe('failed');
    expect(snapshot.checkpointError?.code).toBe('invalid_checkpoint');
    expect(snapshot.checkpointError?.message).not.toContain('<script>');
    expect(snapshot.agentState.runs).toEqual({});
    expect(snapshot.error).toBe(snapshot.checkpointError);
    // The next request starts afresh: the connection error is about what came before it.
    await second.request({ prompt: 'Start over' });
    expect(second.getSnapshot().error).toBeUndefined();
    expect(second.getSnapshot().checkpointError?.code).toBe('invalid_checkpoint');
    await storage.remove('trip');
    const third = createXChatRuntime({ provider, sessionId: 'trip', checkpointStorage: storage });
    await third.restored;
    expect(third.getSnapshot().connectionState).toBe('idle');
  });

  it('restores the commands that were submitting as failed, never resent; the same intent reuses their key', async () => {
    const storage = createMemoryAgentCheckpointStorage();
    const remote = createRemoteRuntime();
    remote.setOnCommand(async function* () {
      await new Promise(() => undefined);
    });
    const first = createXChatRuntime({ provider: remote.provider, sessionId: 'trip', checkpointStorage: storage });
    const started = remote.nextRun();
    void first.request({ prompt: 'Pay' });
    const run = await started;
    run.push((events) => [events.emit('approval.requested', { approvalId: 'pay' })]);
    await until(() => Object.keys(first.getSnapshot().agentState.approvals).length === 1, 'the approval');
    const pending = first.agentActions.resolveApproval({ runId: run.runId, approvalId: 'pay', decision: 'approved' });
    void pending.catch(() => undefined);
    await first.flushCheckpoint();
    const saved = (await storage.load('trip')) as AgentCheckpoint;
    expect(saved.pendingCommands.map((command) => command.type)).toEqual(['approval.resolve']);
    const [command] = saved.pendingCommands;

    // The page reloads: a runtime of the same conversation, over a provider that cannot resume.
    const answering = createRemoteRuntime();
    const second = createXChatRuntime({ provider: answering.provider, sessionId: 'trip', checkpointStorage: storage });
    await second.restored;
    const restored = second.getSnapshot();
    expect(restored.commandStates[command?.commandId as string]).toMatchObject({
      status: 'failed',
      error: { code: 'interrupted', retryable: true },
    });
    expect(answering.calls).toEqual([]);
    // The run was streaming and its provider cannot resume it: the connection says so.
    expect(restored.connectionState).toBe('unrecoverable');
    expect(restored.agentState.runs[run.runId]?.status).toBe('running');
    expect([restored.strandedRunIds, restored.isRequesting]).toEqual([[run.runId], false]);
    // The user sends the same decision again: the same command, with its idempotency key.
    await second.agentActions
      .resolveApproval({ runId: run.runId, approvalId: 'pay', decision: 'approved' })
      .catch(() => undefined);
    expect(answering.calls.map((call) => [call.commandId, call.idempotencyKey])).toEqual([
      [command?.commandId, command?.idempotencyKey],
    ]);
  });
});

describe('what a checkpoint holds (seed 003 §20.4)', () => {
  it('keeps the original input, never the request built from it, its headers or the API key', async () => {
    const storage = createMemoryAgentCheckpointStorage();
    let release: () => void = () => undefined;
    const server = await startHttpServer(async (_request, response) => {
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      response.write(
        `data: ${JSON.stringify({ id: 'c', choices: [{ index: 0, delta: { role: 'assistant', content: 'Hi' } }] })}\n\n`,
      );
      await new Promise<void>((resolve) => {
        release = resolve;
      });
      response.end(
        `data: ${JSON.stringify({ id: 'c', choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] })}\n\ndata: [DONE]\n\n`,
      );
    });
    try {
      const provider = createOpenAICompatibleAgentProvider({
        baseURL: server.url,
        apiKey: 'sk-secret-123',
        model: 'gpt-secret-model',
        headers: () => ({ 'x-session-token': 'token-456' }),
      });
      const chat = createXChatRuntime({ provider, sessionId: 'trip', checkpointStorage: storage });
      const running = chat.request({ prompt: 'Hello', body: { temperature: 0 } });
      await until(() => Object.keys(chat.getSnapshot().agentState.messages).length === 2, 'the answer to stream');
      await chat.flushCheckpoint();
      const text = JSON.stringify(await storage.load('trip'));
      const saved = JSON.parse(text) as AgentCheckpoint;
      expect(Object.values(saved.inputByRun)).toEqual([{ prompt: 'Hello', body: { temperature: 0 } }]);
      for (const secret of ['sk-secret-123', 'token-456', 'gpt-secret-model', 'stream_options', 'authorization']) {
        expect(text).not.toContain(secret);
      }
      release();
      expect((await running).status).toBe('completed');
    } finally {
      release();
      await server.close();
    }
  });

  it('skips a save whose input cannot be serialised, says why, and the run goes on', async () => {
    const storage = createMemoryAgentCheckpointStorage();
    // A provider that keeps its input to itself: a callback in it is fine for the run.
    const provider = defineAgentProvider({
      id: 'callbacks',
      capabilities: { eventTypes: eventTypesOf(['run', 'message']) },
      transport: createAsyncIterableTransport(async function* (input: { onProgress: (text: string) => void }) {
        input.onProgress('half');
        yield 'Hi';
      }),
      createContext: (events) => ({ events }),
      start: (_input, { events }) => [events.emit('run.started', {})],
      prepareRequest: (input) => input,
      transformChunk: (chunk: string, { events }) => [
        events.emit('message.started', { messageId: 'm', role: 'assistant', content: chunk }),
        events.emit('message.completed', { messageId: 'm' }),
        events.emit('run.completed', {}),
      ],
      incompleteStream: { message: 'ended early', code: 'incomplete_stream' },
    });
    const progress: string[] = [];
    const chat = createXChatRuntime({ provider, sessionId: 'trip', checkpointStorage: storage });
    await chat.restored;
    let saveDuringRun: Promise<void> = Promise.resolve();
    const running = chat.request({
      onProgress: (text: string) => {
        progress.push(text);
        saveDuringRun = chat.flushCheckpoint();
      },
    });
    expect((await running).status).toBe('completed');
    await saveDuringRun;
    expect(progress).toEqual(['half']);
    const error = chat.getSnapshot().checkpointError;
    expect(error?.code).toBe('unserializable_input');
    expect(error?.message).not.toContain('progress.push');
    // Once the run has ended its input is not kept, and the conversation saves again.
    await chat.flushCheckpoint();
    expect(((await storage.load('trip')) as AgentCheckpoint).state.runs).toEqual(chat.getSnapshot().agentState.runs);
  });
});
