import { describe, expect, it } from 'vitest';
import type { AgentCheckpoint } from '../checkpoint/AgentCheckpoint';
import { createMemoryAgentCheckpointStorage } from '../checkpoint/createMemoryAgentCheckpointStorage';
import { AgentError, AgentProtocolError } from '../protocol/errors';
import { AgentCommandError } from '../providers/AgentCommandError';
import { AgentProviderError } from '../providers/AgentProviderError';
import { createLocalAgentProvider } from '../providers/local/createLocalAgentProvider';
import type { LocalAgentChunk } from '../providers/local/localAgentChunks';
import { createOpenAICompatibleAgentProvider } from '../providers/openai/createOpenAICompatibleAgentProvider';
import { startHttpServer } from '../tests/support/httpServer';
import { createRemoteRuntime, requestCompletedRun, waitingOnTool } from '../tests/support/remoteRuntime';
import { createXChatRuntime } from './createXChatRuntime';
import { parseXChatMessages } from './parseXChatMessages';

const nextTask = () => new Promise((resolve) => setTimeout(resolve, 0));

/** A local runtime that says `words` and then waits until the run is aborted. */
function stallingProvider(words: string[]) {
  return createLocalAgentProvider({
    runtime: async function* (_request, signal): AsyncGenerator<LocalAgentChunk> {
      yield { type: 'text.start', id: 'answer' };
      for (const word of words) yield { type: 'text.delta', id: 'answer', delta: word };
      await new Promise((_resolve, reject) => {
        signal.addEventListener('abort', () => reject(signal.reason), { once: true });
      });
    },
  });
}

describe('createXChatRuntime', () => {
  it('streams a run into messages and AgentState', async () => {
    const provider = createLocalAgentProvider({
      script: { steps: [{ type: 'text', deltas: ['Paris is ', '14 °C.'] }] },
    });
    const chat = createXChatRuntime({ provider, sessionId: 'conversation-1' });
    const result = await chat.request({ prompt: 'Weather in Paris?' });
    expect(result.status).toBe('completed');
    const { messages, agentState, isRequesting } = chat.getSnapshot();
    expect(isRequesting).toBe(false);
    expect(messages.map(({ status, message }) => [message.role, message.content, status])).toEqual([
      ['user', 'Weather in Paris?', 'local'],
      ['assistant', 'Paris is 14 °C.', 'success'],
    ]);
    expect(agentState.runs[result.runId]).toMatchObject({ sessionId: 'conversation-1', status: 'completed' });
    expect(chat.getSnapshot()).toBe(chat.getSnapshot());
  });

  it('is requesting from the call until the run ends, and tells its listeners', async () => {
    const chat = createXChatRuntime({ provider: stallingProvider(['Thinking']) });
    const seen: boolean[] = [];
    chat.subscribe(() => seen.push(chat.getSnapshot().isRequesting));
    const running = chat.request({ prompt: 'Go' });
    expect(chat.getSnapshot().isRequesting).toBe(true);
    await nextTask();
    expect(chat.getSnapshot().messages.at(-1)?.status).toBe('updating');
    chat.abort();
    const result = await running;
    expect(result.status).toBe('cancelled');
    expect(chat.getSnapshot().isRequesting).toBe(false);
    await nextTask();
    expect(seen.at(0)).toBe(true);
    expect(seen.at(-1)).toBe(false);
  });

  it('aborting cancels the run and its open message, keeping what streamed', async () => {
    const chat = createXChatRuntime({ provider: stallingProvider(['Half ', 'an answer']) });
    const running = chat.request({ prompt: 'Go' });
    await nextTask();
    chat.abort();
    const { runId, status } = await running;
    expect(status).toBe('cancelled');
    const { agentState, messages } = chat.getSnapshot();
    expect(agentState.runs[runId]?.status).toBe('cancelled');
    expect(messages.at(-1)).toMatchObject({ status: 'abort', message: { content: 'Half an answer' } });
    expect(agentState.issues).toEqual([]);
  });

  it('keeps earlier runs when a new one starts, in arrival order', async () => {
    const provider = createLocalAgentProvider({
      script: (input) => ({ steps: [{ type: 'text', deltas: [`You said ${input.prompt}`] }] }),
    });
    const chat = createXChatRuntime({ provider });
    const first = await chat.request({ prompt: 'one' });
    const second = await chat.request({ prompt: 'two' });
    expect(first.runId).not.toBe(second.runId);
    expect(chat.getSnapshot().messages.map(({ message }) => message.content)).toEqual([
      'one',
      'You said one',
      'two',
      'You said two',
    ]);
  });

  it('notifies once per read of the stream, not once per event', async () => {
    const deltas = Array.from({ length: 500 }, (_, index) => `${index} `);
    const chunk = (delta: object, finish: string | null = null) =>
      `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
    const server = await startHttpServer((_request, response) => {
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      const frames = [chunk({ role: 'assistant' }), ...deltas.map((content) => chunk({ content })), chunk({}, 'stop')];
      response.end(`${frames.join('')}data: [DONE]\n\n`);
    });
    try {
      const provider = createOpenAICompatibleAgentProvider({ baseURL: `${server.url}/v1/`, model: 'gpt-4o-mini' });
      const chat = createXChatRuntime({ provider });
      let notifications = 0;
      chat.subscribe(() => {
        notifications += 1;
      });
      const result = await chat.request({ messages: [{ role: 'user', content: 'Count' }] });
      await nextTask();
      expect(result.status).toBe('completed');
      expect(chat.getSnapshot().messages.at(-1)?.message.content).toBe(deltas.join(''));
      // About 45 KB arrive in a few reads; per event it would be over 500 notifications.
      expect(notifications).toBeGreaterThanOrEqual(1);
      expect(notifications).toBeLessThan(30);
    } finally {
      await server.close();
    }
  });

  it('cancels its runs when the last holder releases it, not before', async () => {
    const chat = createXChatRuntime({ provider: stallingProvider(['x']) });
    const releaseFirst = chat.retain();
    const releaseSecond = chat.retain();
    const running = chat.request({ prompt: 'Go' });
    await nextTask();
    releaseFirst();
    releaseFirst();
    await nextTask();
    expect(chat.getSnapshot().isRequesting).toBe(true);
    releaseSecond();
    expect((await running).status).toBe('cancelled');
  });

  it('runs a request through another provider in the same conversation', async () => {
    const echo = (prefix: string) =>
      createLocalAgentProvider({
        script: (input) => ({ steps: [{ type: 'text', deltas: [`${prefix} ${input.prompt}`] }] }),
      });
    const chat = createXChatRuntime({ provider: echo('first:') });
    await chat.request({ prompt: 'a' });
    const result = await chat.request({ prompt: 'b' }, { provider: echo('second:') });
    expect(result.status).toBe('completed');
    expect(chat.getSnapshot().messages.map(({ message }) => message.content)).toEqual([
      'a',
      'first: a',
      'b',
      'second: b',
    ]);
    await expect(chat.request({ prompt: 'c' }, { provider: { id: 'x' } as never })).rejects.toThrow(AgentProviderError);
    expect(chat.getSnapshot().isRequesting).toBe(false);
  });

  it('records a protocol issue, or in strict mode rejects with the store error unchanged', async () => {
    const ghostDelta = createLocalAgentProvider({
      runtime: async function* (): AsyncGenerator<LocalAgentChunk> {
        yield { type: 'text.delta', id: 'ghost', delta: 'boo' };
        yield { type: 'done' };
      },
    });
    const recording = createXChatRuntime({ provider: ghostDelta });
    // The run completed, but not as the provider told it: the result says so.
    const recorded = await recording.request({ prompt: 'Go' });
    expect([recorded.status, recorded.refused?.map((issue) => issue.code)]).toEqual(['refused', ['missing_entity']]);
    expect(recording.getSnapshot().agentState.issues.map((issue) => issue.code)).toEqual(['missing_entity']);

    const strict = createXChatRuntime({ provider: ghostDelta, store: { protocolMode: 'strict' } });
    const failure = await strict.request({ prompt: 'Go' }).catch((error: unknown) => error);
    expect(AgentProtocolError.isInstance(failure)).toBe(true);
    expect((failure as AgentProtocolError).issue.code).toBe('missing_entity');
    expect(strict.getSnapshot().isRequesting).toBe(false);
  });

  it('refuses a provider that does not speak agent-event', () => {
    const chatProvider = { id: 'plain-chat', protocol: { name: 'chat', version: '1' } };
    expect(() => createXChatRuntime({ provider: chatProvider as never })).toThrow(AgentProviderError);
    expect(() => createXChatRuntime({ provider: chatProvider as never })).toThrow(/plain-chat.*agent-event/);
  });
});

describe('parseXChatMessages', () => {
  it('parses each message once and splits one into several with indexed ids', async () => {
    const provider = createLocalAgentProvider({
      script: { steps: [{ type: 'text', deltas: ['a', 'b'] }] },
    });
    const chat = createXChatRuntime({ provider });
    await chat.request({ prompt: 'Hi' });
    const parsed: string[] = [];
    const parser = (message: { role: string; content: unknown }) => {
      parsed.push(message.role);
      return message.role === 'user' ? [`> ${message.content}`, '---'] : String(message.content);
    };
    const cache = new WeakMap();
    const { messages } = chat.getSnapshot();
    const first = parseXChatMessages(messages, parser, cache);
    const again = parseXChatMessages(messages, parser, cache);
    const userKey = messages[0]?.id;
    expect(first.map(({ id, message, status }) => [id, message, status])).toEqual([
      [`${userKey}:0`, '> Hi', 'local'],
      [`${userKey}:1`, '---', 'local'],
      [messages[1]?.id, 'ab', 'success'],
    ]);
    expect(again[2]).toBe(first[2]);
    expect(parsed).toEqual(['user', 'assistant']);
  });
});

describe('XChatRuntime.destroy', () => {
  /** A remote runtime whose commands wait until their signal aborts; `signals` holds each command's. */
  function stallingCommands() {
    const signals: AbortSignal[] = [];
    const remote = createRemoteRuntime({
      onCommand: async function* (_command, _run, signal) {
        signals.push(signal);
        await new Promise((_resolve, reject) => {
          signal.addEventListener('abort', () => reject(signal.reason), { once: true });
        });
      },
    });
    return { remote, signals };
  }

  it('aborts the streams, interrupts the commands in flight and stops the actor; a second call does nothing', async () => {
    const { remote, signals } = stallingCommands();
    const chat = createXChatRuntime({ provider: remote.provider, sessionId: 'trip' });
    const started = remote.nextRun();
    const running = chat.request({ prompt: 'Pay the invoice' });
    const run = await started;
    run.push((events) => [events.emit('approval.requested', { approvalId: 'pay' })]);
    await nextTask();
    const approving = chat.agentActions
      .resolveApproval({ runId: run.runId, approvalId: 'pay', decision: 'approved' })
      .then(
        () => undefined,
        (error: unknown) => error,
      );
    await nextTask();
    expect(signals).toHaveLength(1);
    expect(chat.destroyed).toBe(false);
    const heard: Array<[boolean, string | undefined]> = [];
    chat.subscribe(() => {
      const { isRequesting, agentState } = chat.getSnapshot();
      heard.push([isRequesting, agentState.runs[run.runId]?.status]);
    });

    chat.destroy();
    chat.destroy();
    expect(chat.destroyed).toBe(true);
    expect(run.aborted).toBe(true);
    expect(signals[0]?.aborted).toBe(true);
    expect((await running).status).toBe('cancelled');
    const failure = await approving;
    expect(AgentCommandError.isInstance(failure) && failure.code).toBe('interrupted');
    // Stopped once its stream and its command have ended, in the task after.
    await nextTask();
    expect(chat.actor.getSnapshot().status).toBe('stopped');
    expect(chat.getSnapshot().isRequesting).toBe(false);
    // Its listeners heard of the runs it ended, and then of nothing more.
    expect(heard.at(-1)).toEqual([false, 'cancelled']);
    const heardCount = heard.length;
    await nextTask();
    expect(heard).toHaveLength(heardCount);
  });

  it('interrupts a command waiting in its lane behind one in flight too', async () => {
    const { remote, signals } = stallingCommands();
    const chat = createXChatRuntime({ provider: remote.provider });
    const started = remote.nextRun();
    const running = chat.request({ prompt: 'Book both' });
    const run = await started;
    run.push((events) => [
      events.emit('approval.requested', { approvalId: 'flight' }),
      events.emit('approval.requested', { approvalId: 'hotel' }),
    ]);
    await nextTask();
    const settled = (approvalId: string) =>
      chat.agentActions.resolveApproval({ runId: run.runId, approvalId, decision: 'approved' }).then(
        () => 'succeeded',
        (error: unknown) => (AgentCommandError.isInstance(error) ? error.code : 'other'),
      );
    const flight = settled('flight');
    const hotel = settled('hotel');
    await nextTask();
    expect(signals).toHaveLength(1);

    chat.destroy();
    expect(await flight).toBe('interrupted');
    expect(await hotel).toBe('interrupted');
    expect((await running).status).toBe('cancelled');
    // The queued command was never sent: it failed before reaching the provider.
    expect(remote.calls.map((command) => command.payload)).toEqual([{ approvalId: 'flight', decision: 'approved' }]);
    await nextTask();
    expect(chat.actor.getSnapshot().status).toBe('stopped');
  });

  it('does not wait for an answer kept for a waiting run: no run will carry it', async () => {
    const remote = createRemoteRuntime();
    const chat = createXChatRuntime({ provider: remote.provider });
    const started = remote.nextRun();
    const result = chat.request({ prompt: 'Weather, then book?' });
    const run = await started;
    run.push((events) => [
      events.emit('approval.requested', { approvalId: 'book' }),
      ...waitingOnTool(events).slice(0, 2),
      events.emit('run.completed', { pendingToolCallIds: ['call-1'], pendingApprovalIds: ['book'] }),
    ]);
    run.end();
    await result;
    let answer = 'pending';
    void chat.agentActions.resolveApproval({ runId: run.runId, approvalId: 'book', decision: 'approved' }).then(
      () => {
        answer = 'succeeded';
      },
      () => {
        answer = 'failed';
      },
    );
    await nextTask();
    expect(Object.values(chat.getSnapshot().commandStates).map(({ status }) => status)).toEqual(['submitting']);

    chat.destroy();
    await nextTask();
    expect(chat.actor.getSnapshot().status).toBe('stopped');
    expect(answer).toBe('pending');
    expect(remote.runs).toHaveLength(1);
  });

  it('refuses requests and actions afterwards with a typed error; the rest do nothing and the last view stays', async () => {
    const remote = createRemoteRuntime();
    const chat = createXChatRuntime({ provider: remote.provider });
    const run = await requestCompletedRun(chat, remote, 'Hello');
    const heard: number[] = [];
    chat.subscribe(() => heard.push(1));
    const view = chat.getSnapshot();
    chat.destroy();

    const refusal = await chat.request({ prompt: 'Again' }).catch((error: unknown) => error);
    expect(AgentError.isInstance(refusal) && refusal.code).toBe('runtime_destroyed');
    expect(String((refusal as Error).message)).toContain(chat.sessionId);
    const refusedAction = await chat.agentActions
      .retryTool({ runId: run.runId, toolCallId: 'search' })
      .catch((error: unknown) => error);
    expect(AgentCommandError.isInstance(refusedAction) && refusedAction.code).toBe('runtime_destroyed');
    const refusedContinue = await chat.agentActions.continueRun({ runId: run.runId }).catch((error: unknown) => error);
    expect(AgentError.isInstance(refusedContinue) && refusedContinue.code).toBe('runtime_destroyed');
    expect(remote.runs).toHaveLength(1);
    expect(remote.calls).toEqual([]);

    chat.abort();
    chat.retain()();
    chat.subscribe(() => heard.push(2))();
    await chat.flushCheckpoint();
    await nextTask();
    expect(heard).toEqual([]);
    expect(chat.getSnapshot()).toBe(view);
    expect(chat.getSnapshot().messages.map(({ message }) => message.content)).toEqual(['Hello']);
  });

  it('saves nothing after: what its checkpoint had scheduled is dropped, the storage keeps the last save', async () => {
    const storage = createMemoryAgentCheckpointStorage();
    const saves: string[] = [];
    const counting = {
      ...storage,
      save: (checkpoint: Parameters<typeof storage.save>[0]) => {
        saves.push(checkpoint.sessionId);
        return storage.save(checkpoint);
      },
    };
    const { remote } = stallingCommands();
    const chat = createXChatRuntime({
      provider: remote.provider,
      sessionId: 'saved',
      checkpointStorage: counting,
      checkpoint: { throttleMs: 60_000 },
    });
    await chat.restored;
    const started = remote.nextRun();
    const running = chat.request({ prompt: 'Go' });
    const run = await started;
    run.push((events) => [events.emit('message.started', { messageId: 'answer', role: 'assistant' })]);
    await nextTask();
    await chat.flushCheckpoint();
    const savedBefore = saves.length;
    expect(savedBefore).toBeGreaterThan(0);
    run.push((events) => [events.emit('message.delta', { messageId: 'answer', delta: 'Not saved' })]);
    await nextTask();
    chat.destroy();
    expect((await running).status).toBe('cancelled');
    await nextTask();
    await chat.flushCheckpoint();
    // The run cancelled by the destroy is not saved: the storage keeps the conversation as it was.
    expect(saves).toHaveLength(savedBefore);
    const saved = (await storage.load('saved')) as AgentCheckpoint | undefined;
    expect(saved?.state.runs[run.runId]?.status).toBe('running');
    expect(Object.values(saved?.state.messages ?? {}).map((message) => message.content)).toEqual(['Go', '']);
    expect(chat.getSnapshot().agentState.runs[run.runId]?.status).toBe('cancelled');
  });
});
