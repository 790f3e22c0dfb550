import { describe, expect, it } from 'vitest';
import type { AgentState } from '../machines/agentState';
import { createAgentStore } from '../machines/createAgentStore';
import { type AgentEventFactory, createAgentEventFactory } from '../protocol/createAgentEventFactory';
import type { AgentEvent, AgentEventType } from '../protocol/eventSchemas';
import { getAgentEntityKey } from '../protocol/getAgentEntityKey';
import type { AgentProvider } from '../providers/AgentProvider';
import { AgentProviderError } from '../providers/AgentProviderError';
import { type AgentRunEmitter, createAgentRunEmitter } from '../providers/createAgentRunEmitter';
import { runAgentProvider } from '../providers/runAgentProvider';
import { createXChatRuntime } from '../runtime/createXChatRuntime';
import { isAbortError } from '../transports/AgentTransportError';
import { createAsyncIterableTransport } from '../transports/createAsyncIterableTransport';
import { until } from './support/until';

/** Seed 000's `LocalAgentProvider` capability list, exactly: no message.cancelled, no message.failed. */
const SEED_000_EVENT_TYPES: AgentEventType[] = [
  'run.started',
  'run.completed',
  'run.failed',
  'run.cancelled',
  'message.started',
  'message.delta',
  'message.completed',
];

type Chunk = { delta: string } | { done: true } | { fail: string } | { raw: (events: AgentEventFactory) => unknown[] };

/**
 * A provider written from seed 000's example: it declares only the event types it emits
 * on the happy path, its `flush` and `transformError` return nothing, and its runtime says
 * `chunks`, then waits until aborted (`stall`) or ends.
 */
function seedProvider(
  chunks: Chunk[],
  options: { stall?: boolean; eventTypes?: AgentEventType[] } = {},
): AgentProvider<{ prompt: string }, { prompt: string }, Chunk, { events: AgentEventFactory }> {
  const transport = createAsyncIterableTransport<{ prompt: string }, Chunk>(async function* (_request, signal) {
    for (const chunk of chunks) {
      if ('fail' in chunk) throw new Error(chunk.fail);
      yield chunk;
    }
    if (!options.stall) return;
    await new Promise((_resolve, reject) => {
      if (signal.aborted) reject(signal.reason);
      signal.addEventListener('abort', () => reject(signal.reason), { once: true });
    });
  });
  return {
    id: 'local-agent',
    protocol: { name: 'agent-event', version: '0.1' },
    capabilities: { eventTypes: options.eventTypes ?? SEED_000_EVENT_TYPES, transports: [transport.kind] },
    transport,
    createContext: (context) => ({ events: createAgentEventFactory(context) }),
    start: (input, { events }) => [
      events.create('run.started', { input }),
      events.create('message.started', { messageId: 'answer', role: 'assistant' }),
    ],
    prepareRequest: (input) => input,
    transformChunk(chunk, { events }) {
      if ('raw' in chunk) return chunk.raw(events) as AgentEvent[];
      if ('done' in chunk) {
        return [events.create('message.completed', { messageId: 'answer' }), events.create('run.completed', {})];
      }
      if ('delta' in chunk) return [events.create('message.delta', { messageId: 'answer', delta: chunk.delta })];
      return [];
    },
    flush: () => [],
    transformError: () => [],
  };
}

async function run(
  provider: Parameters<typeof runAgentProvider>[0]['provider'],
  options: { abortAfter?: number; protocolMode?: 'record' | 'strict' } = {},
) {
  const store = createAgentStore({ protocolMode: options.protocolMode ?? 'record' });
  const controller = new AbortController();
  const events: AgentEvent[] = [];
  const cursors: string[] = [];
  const settled = runAgentProvider({
    provider,
    input: { prompt: 'hi' },
    sessionId: 's1',
    runId: 'r1',
    signal: controller.signal,
    onEvent: (event, admission) => {
      events.push(event);
      const issue = store.dispatch(event, admission);
      if (options.abortAfter !== undefined && events.length === options.abortAfter) controller.abort();
      return issue;
    },
    onCursor: (cursor) => cursors.push(cursor),
  }).then(
    (result) => ({ result, error: undefined }),
    (error: unknown) => ({ result: undefined, error }),
  );
  const { result, error } = await settled;
  return { result, error, events, cursors, state: store.getSnapshot() };
}

const answer = (state: AgentState) => state.messages[getAgentEntityKey('r1', 'answer')];

describe('the runner never strands a run (seed 000 §10)', () => {
  it("Stop mid-message ends the run cancelled with the runner's own events, though the provider declares no cancelled type", async () => {
    const { result, error, events, state } = await run(seedProvider([{ delta: 'Half an ' }], { stall: true }), {
      abortAfter: 3,
    });
    expect(error).toBeUndefined();
    expect(result).toEqual({ runId: 'r1', status: 'cancelled' });
    expect(events.map((event) => event.type)).toEqual([
      'run.started',
      'message.started',
      'message.delta',
      'message.cancelled',
      'run.cancelled',
    ]);
    expect(state.runs.r1?.status).toBe('cancelled');
    expect(answer(state)).toMatchObject({ status: 'cancelled', content: 'Half an ' });
    expect(state.issues).toEqual([]);
  });

  it('a transport failure ends the run failed with exactly one run terminal', async () => {
    const { result, events, state } = await run(seedProvider([{ delta: 'Half' }, { fail: 'socket hang up' }]));
    expect(result).toMatchObject({ runId: 'r1', status: 'failed' });
    expect(events.map((event) => event.type)).toEqual([
      'run.started',
      'message.started',
      'message.delta',
      'message.failed',
      'run.failed',
    ]);
    expect(state.runs.r1).toMatchObject({ status: 'failed', error: { message: 'socket hang up' } });
    expect(state.issues).toEqual([]);
  });

  it('a stream that ends without a run terminal is failed by the runner', async () => {
    const { result, events, state } = await run(seedProvider([{ delta: 'Half' }]));
    expect(result).toMatchObject({ runId: 'r1', status: 'failed' });
    expect(events.slice(-2).map((event) => event.type)).toEqual(['message.failed', 'run.failed']);
    expect(state.runs.r1).toMatchObject({ status: 'failed', error: { code: 'missing_run_terminal' } });
  });

  it('a contract error mid-message rejects and still ends the run, failed', async () => {
    const provider = seedProvider([
      { delta: 'Half' },
      { raw: (events) => [events.create('reasoning.started', { reasoningId: 'x' })] },
    ]);
    const { error, events, state } = await run(provider);
    expect(AgentProviderError.isInstance(error) && error.code).toBe('invalid_event');
    expect(events.slice(-2).map((event) => event.type)).toEqual(['message.failed', 'run.failed']);
    expect(state.runs.r1).toMatchObject({ status: 'failed', error: { code: 'provider_error' } });
  });

  it('Stop is a cancellation even when the provider breaks the contract while closing', async () => {
    const provider = {
      ...seedProvider([{ delta: 'Half' }], { stall: true }),
      transformError: (_error: unknown, { events }: { events: AgentEventFactory }) => [
        events.create('message.cancelled', { messageId: 'answer', reason: 'aborted' }),
      ],
    };
    const { error, events, state } = await run(provider, { abortAfter: 3 });
    expect(AgentProviderError.isInstance(error) && error.code).toBe('invalid_event');
    expect(events.slice(-2).map((event) => event.type)).toEqual(['message.cancelled', 'run.cancelled']);
    expect(state.runs.r1?.status).toBe('cancelled');
  });
});

describe('an approval still waiting when the runner ends the run', () => {
  /** Opens an approval and a message, then waits to be stopped; closes with the run emitter (`AgentRunTracker.close`). */
  function approvalProvider(): AgentProvider<
    { prompt: string },
    { prompt: string },
    Chunk,
    { events: AgentRunEmitter }
  > {
    const transport = createAsyncIterableTransport<{ prompt: string }, Chunk>(async function* (_request, signal) {
      yield { delta: 'Deploy?' };
      await new Promise((_resolve, reject) => signal.addEventListener('abort', () => reject(signal.reason)));
    });
    return {
      id: 'approvals',
      protocol: { name: 'agent-event', version: '0.1' },
      capabilities: {
        eventTypes: [...SEED_000_EVENT_TYPES, 'message.cancelled', 'message.failed', 'approval.requested'],
        transports: [transport.kind],
      },
      transport,
      createContext: (context) => ({ events: createAgentRunEmitter(context) }),
      start: (input, { events }) => [
        events.emit('run.started', { input }),
        events.emit('approval.requested', { approvalId: 'a1', description: 'Deploy to prod?' }),
        events.emit('message.started', { messageId: 'answer', role: 'assistant' }),
      ],
      prepareRequest: (input) => input,
      transformChunk: (chunk, { events }) =>
        'delta' in chunk ? [events.emit('message.delta', { messageId: 'answer', delta: chunk.delta })] : [],
      flush: ({ events }) => events.close({ type: 'failed', error: { message: 'ended', code: 'incomplete_stream' } }),
      transformError: (error, { events }) =>
        events.close(
          isAbortError(error)
            ? { type: 'cancelled', reason: 'aborted' }
            : { type: 'failed', error: { message: 'broke', code: 'runtime_error' } },
        ),
    };
  }

  it('is cancelled with reason run_terminated, as the store closes it, never resolved expired', async () => {
    const { result, events, state } = await run(approvalProvider(), { abortAfter: 4 });
    expect(result).toEqual({ runId: 'r1', status: 'cancelled' });
    expect(events.some((event) => event.type === 'approval.resolved')).toBe(false);
    expect(state.approvals[getAgentEntityKey('r1', 'a1')]).toMatchObject({
      status: 'cancelled',
      reason: 'run_terminated',
    });
    expect(state.approvals[getAgentEntityKey('r1', 'a1')]).not.toHaveProperty('decision');
    expect(state.runs.r1?.status).toBe('cancelled');
    // The store's end-of-run policy, whoever ended the run; no event could have closed the
    // approval before the terminal, so that is no protocol issue.
    expect(state.issues).toEqual([]);
  });
});

describe('event ids within a run', () => {
  it('refuses an id reused for another event as duplicate_event_id, and the run ends failed', async () => {
    const provider = seedProvider([
      {
        raw: (events) => {
          const first = events.create('message.delta', { messageId: 'answer', delta: 'one' });
          const second = events.create('message.delta', { messageId: 'answer', delta: 'two' });
          return [first, { ...second, eventId: first.eventId }];
        },
      },
      { done: true },
    ]);
    const { error, events, state } = await run(provider);
    expect(AgentProviderError.isInstance(error) && error.code).toBe('duplicate_event_id');
    expect(AgentProviderError.isInstance(error) && (error.event as AgentEvent).payload).toEqual({
      messageId: 'answer',
      delta: 'two',
    });
    expect(events.filter((event) => event.type === 'message.delta')).toHaveLength(1);
    expect(state.runs.r1).toMatchObject({ status: 'failed', error: { code: 'provider_error' } });
  });

  it('tells a repeat from a reused id: the same event again mid-stream is a sequence that does not increase', async () => {
    const provider = seedProvider([
      {
        raw: (events) => {
          const delta = events.create('message.delta', { messageId: 'answer', delta: 'once' });
          return [delta, structuredClone(delta)];
        },
      },
      { done: true },
    ]);
    const { error, events } = await run(provider);
    expect(AgentProviderError.isInstance(error) && [error.code, error.reason]).toEqual([
      'invalid_event',
      'emitted sequence 3 after 3',
    ]);
    expect(events.filter((event) => event.type === 'message.delta')).toHaveLength(1);
  });
});

describe('Stop through the interaction runtime', () => {
  it('ends the run cancelled and stops requesting, with a provider that declares no cancelled type', async () => {
    const chat = createXChatRuntime({ provider: seedProvider([{ delta: 'Half an ' }], { stall: true }) });
    const running = chat.request({ prompt: 'Go' });
    await until(() => chat.getSnapshot().messages.at(-1)?.message.content === 'Half an ', 'the first delta');
    expect(chat.getSnapshot().isRequesting).toBe(true);
    chat.abort();
    const result = await running;
    expect(result.status).toBe('cancelled');
    const { isRequesting, agentState, messages, error } = chat.getSnapshot();
    expect(isRequesting).toBe(false);
    expect(error).toBeUndefined();
    expect(agentState.runs[result.runId]?.status).toBe('cancelled');
    expect(messages.at(-1)).toMatchObject({ status: 'abort', message: { content: 'Half an ' } });
    expect(chat.getSnapshot().connectionState).toBe('idle');
  });
});

describe('cursors', () => {
  it('calls onCursor only for a non-empty cursor (seed 003 §13.2)', async () => {
    const base = seedProvider([{ delta: 'a' }, { delta: 'b' }, { delta: 'c' }, { done: true }]);
    const cursorOf = new Map<Chunk, string | undefined>();
    const transport = {
      ...base.transport,
      getCursor: (chunk: Chunk) => cursorOf.get(chunk),
      open(request: { prompt: string }, signal: AbortSignal) {
        const chunks = base.transport.open(request, signal);
        return (async function* () {
          const cursors = ['', '2', undefined, '4'];
          for await (const chunk of chunks) {
            cursorOf.set(chunk, cursors.shift());
            yield chunk;
          }
        })();
      },
    };
    const { result, cursors } = await run({ ...base, transport });
    expect(result?.status).toBe('completed');
    expect(cursors).toEqual(['2', '4']);
  });
});

describe('events of the run the consumer refused', () => {
  /** A run whose provider sends a delta after the message completed: the store refuses it (invalid_transition). */
  const lateDelta = () =>
    seedProvider([
      { delta: 'Done' },
      {
        raw: (events) => [
          events.create('message.completed', { messageId: 'answer' }),
          events.create('message.delta', { messageId: 'answer', delta: ' and more' }),
          events.create('run.completed', {}),
        ],
      },
    ]);

  it('never resolves completed: the result is refused and lists what the store refused in record mode', async () => {
    const { result, error, state } = await run(lateDelta());
    expect(error).toBeUndefined();
    expect(result?.status).toBe('refused');
    expect(result?.refused?.map((issue) => [issue.code, issue.entityId])).toEqual([['invalid_transition', 'answer']]);
    expect(result?.refused).toEqual(state.issues);
    expect(state.runs.r1?.status).toBe('completed');
  });

  it('through the runtime, a request resolves refused too', async () => {
    const chat = createXChatRuntime({ provider: lateDelta() });
    const result = await chat.request({ prompt: 'Go' });
    expect(result.status).toBe('refused');
    expect(result.refused?.map((issue) => issue.code)).toEqual(['invalid_transition']);
    expect(chat.getSnapshot().agentState.runs[result.runId]?.status).toBe('completed');
  });

  it('a run with nothing refused has no refused list', async () => {
    const { result } = await run(seedProvider([{ delta: 'All' }, { done: true }]));
    expect(result).toEqual({ runId: 'r1', status: 'completed' });
  });
});
