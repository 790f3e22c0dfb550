import { describe, expect, it, vi } from 'vitest';
import type { AgentState } from '../machines/agentState';
import { createAgentStore } from '../machines/createAgentStore';
import type { AgentEvent } from '../protocol/eventSchemas';
import { AgentProviderError } from '../providers/AgentProviderError';
import { AgentRunTracker } from '../providers/AgentRunTracker';
import { AgentTransportError } from '../transports/AgentTransportError';
import {
  answerRun,
  eventLogProvider,
  eventLogServers,
  frame,
  SSE_HEADERS,
  serveFrames,
} from './support/eventLogServer';
import { runEvents } from './support/events';
import { describeChanges, runLog } from './support/runLog';

const server = eventLogServers();

const run = answerRun();
/** Events `from` to `to` (sequences, inclusive). */
const slice = (from: number, to: number) => run.slice(from - 1, to);
const opaque = (event: AgentEvent) => frame(event, `evt-${event.sequence}`);

/** The AgentState of the same run streamed without a break. */
async function uninterrupted(): Promise<AgentState> {
  const whole = await server((response) => serveFrames(response, run.map(opaque), 'end'));
  const { result, state } = await runLog(eventLogProvider(whole.url));
  expect(result?.status).toBe('completed');
  return state;
}

describe('a resumed stream absorbs what it sends again', () => {
  it('reconnects after a drop with Last-Event-ID and ends in the AgentState of an uninterrupted run', async () => {
    const expected = await uninterrupted();
    const log = await server(
      (response) => serveFrames(response, slice(1, 5).map(opaque), 'drop'),
      // Sends 3 and 4 again with their ids (skipped by cursor), 5 again without one
      // (absorbed by sequence), then the rest.
      (response) =>
        serveFrames(
          response,
          [...slice(3, 4).map(opaque), frame(run[4] as AgentEvent, null), ...slice(6, 10).map(opaque)],
          'end',
        ),
    );
    const provider = eventLogProvider(log.url);
    const transformChunk = vi.spyOn(provider, 'transformChunk');
    const outcome = await runLog(provider);

    expect(outcome.result).toEqual({ runId: 'r1', status: 'completed' });
    expect(outcome.state).toEqual(expected);
    expect(outcome.state.issues).toEqual([]);
    expect(outcome.events).toEqual(run);
    expect(outcome.cursors).toEqual(run.map((event) => `evt-${event.sequence}`));
    expect(log.requests.map((request) => request.headers['last-event-id'])).toEqual([undefined, 'evt-5']);
    expect(log.requests[1]?.body).toBe(log.requests[0]?.body);
    // 5 chunks, then 5 again (no id) and 6 to 10: the two repeats with ids were never mapped.
    expect(transformChunk).toHaveBeenCalledTimes(11);
    expect(describeChanges(outcome.changes)).toEqual([
      'connecting 0',
      'connected',
      'reconnecting 1 2',
      'connecting 1',
      'connected',
      'closed',
    ]);
    expect(outcome.changes[2]).toMatchObject({ error: { code: 'network_error' } });
  });

  it('resumes a restored run from a decimal cursor, skipping chunks not past it', async () => {
    const expected = await uninterrupted();
    // The server ignores part of the cursor and starts at 3; ids are decimal offsets.
    const log = await server((response) =>
      serveFrames(
        response,
        slice(3, 10).map((event) => frame(event)),
        'end',
      ),
    );
    const store = createAgentStore({ protocolMode: 'strict' });
    for (const event of slice(1, 5)) store.dispatch(event);
    const provider = eventLogProvider(log.url);
    const transformChunk = vi.spyOn(provider, 'transformChunk');
    const outcome = await runLog(
      provider,
      { resume: { cursor: '5', lastSequence: 5 }, history: store.getSnapshot() },
      store,
    );

    expect(outcome.result?.status).toBe('completed');
    expect(outcome.events).toEqual(slice(6, 10));
    expect(transformChunk).toHaveBeenCalledTimes(5);
    expect(outcome.state).toEqual(expected);
    expect(log.requests[0]?.headers['last-event-id']).toBe('5');
    expect(describeChanges(outcome.changes)).toEqual(['connecting 0', 'connected', 'closed']);
  });

  it('closes what a resumed run left open, once, when its stream ends without a terminal', async () => {
    const log = await server((response) =>
      serveFrames(
        response,
        slice(5, 6).map((event) => frame(event)),
        'end',
      ),
    );
    const store = createAgentStore({ protocolMode: 'strict' });
    for (const event of slice(1, 4)) store.dispatch(event);
    const outcome = await runLog(
      eventLogProvider(log.url),
      { resume: { cursor: '4', lastSequence: 4 }, history: store.getSnapshot() },
      store,
    );

    expect(outcome.result?.status).toBe('failed');
    expect(outcome.events.map((event) => [event.type, event.sequence])).toEqual([
      ['message.delta', 5],
      ['message.delta', 6],
      ['message.failed', 7],
      ['run.failed', 8],
    ]);
    expect(outcome.events.at(-1)?.payload).toMatchObject({ error: { code: 'missing_run_terminal' } });
    expect(outcome.state.messages['r1:answer']).toMatchObject({ status: 'failed', content: 'The log has three ' });
    expect(outcome.state.runs.r1?.status).toBe('failed');
    expect(outcome.state.issues).toEqual([]);
  });

  it('still refuses a sequence that does not increase in the middle of a stream', async () => {
    const log = await server((response) =>
      serveFrames(response, [...slice(1, 3).map(opaque), frame(run[1] as AgentEvent, null)], 'end'),
    );
    const outcome = await runLog(eventLogProvider(log.url));
    expect(outcome.error).toMatchObject({ name: 'AgentProviderError', code: 'invalid_event' });
    expect((outcome.error as AgentProviderError).reason).toContain('sequence 2 after 3');
    expect(outcome.events.at(-1)).toMatchObject({ type: 'run.failed', payload: { error: { code: 'provider_error' } } });
    expect(describeChanges(outcome.changes).at(-1)).toBe('failed');
  });
});

describe('a resumed stream that cannot continue the run', () => {
  it('refuses a sequence gap after a reconnect as resume_gap, leaving the AgentState as it was', async () => {
    const log = await server(
      (response) => serveFrames(response, slice(1, 5).map(opaque), 'drop'),
      // 4 and 5 are repeats; 6 and 7 were lost.
      (response) =>
        serveFrames(
          response,
          [...slice(4, 5), ...slice(8, 10)].map((event) => frame(event, null)),
          'end',
        ),
    );
    const provider = eventLogProvider(log.url);
    const transformError = vi.spyOn(provider, 'transformError');
    let beforeReconnect: AgentState | undefined;
    const store = createAgentStore({ protocolMode: 'strict' });
    const outcome = await runLog(
      provider,
      {
        onConnection: (change) => {
          if (change.type === 'reconnecting') beforeReconnect = store.getSnapshot();
        },
      },
      store,
    );

    expect(AgentProviderError.isInstance(outcome.error)).toBe(true);
    expect(outcome.error).toMatchObject({ code: 'resume_gap', event: { sequence: 8 } });
    expect((outcome.error as AgentProviderError).reason).toContain(
      'resumed at sequence 8 after 5: 2 events are missing',
    );
    expect(outcome.events).toEqual(slice(1, 5));
    expect(outcome.events.some((event) => event.type === 'run.failed')).toBe(false);
    expect(outcome.state).toEqual(beforeReconnect);
    expect(outcome.state.runs.r1?.status).toBe('running');
    expect(transformError).not.toHaveBeenCalled();
    expect(describeChanges(outcome.changes)).toEqual([
      'connecting 0',
      'connected',
      'reconnecting 1 2',
      'connecting 1',
      'connected',
      'unrecoverable',
    ]);
    expect(outcome.changes.at(-1)).toEqual({ type: 'unrecoverable', error: outcome.error });
  });

  it('turns a cursor the server answers 410 to into invalid_cursor, without retrying it', async () => {
    const log = await server(
      (response) => serveFrames(response, slice(1, 5).map(opaque), 'drop'),
      (response) => {
        response.writeHead(410, { 'content-type': 'application/json' });
        response.end('{"error":"cursor expired"}');
      },
    );
    const outcome = await runLog(eventLogProvider(log.url));

    expect(outcome.error).toMatchObject({ name: 'AgentProviderError', code: 'invalid_cursor' });
    const cause = (outcome.error as AgentProviderError).cause;
    expect(AgentTransportError.isInstance(cause) && [cause.code, cause.status, cause.bodyExcerpt]).toEqual([
      'invalid_cursor',
      410,
      '{"error":"cursor expired"}',
    ]);
    expect(outcome.events).toEqual(slice(1, 5));
    expect(outcome.state.runs.r1?.status).toBe('running');
    expect(describeChanges(outcome.changes)).toEqual([
      'connecting 0',
      'connected',
      'reconnecting 1 2',
      'connecting 1',
      'unrecoverable',
    ]);
    await new Promise((resolve) => setTimeout(resolve, 30));
    expect(log.requests).toHaveLength(2);
  });

  it('reports an unknown cursor given as `resume` as unrecoverable, before any event', async () => {
    const log = await server((response) => {
      response.writeHead(404, SSE_HEADERS);
      response.end();
    });
    const store = createAgentStore({ protocolMode: 'strict' });
    for (const event of slice(1, 5)) store.dispatch(event);
    const before = store.getSnapshot();
    const outcome = await runLog(
      eventLogProvider(log.url),
      { resume: { cursor: 'evt-5', lastSequence: 5 }, history: before },
      store,
    );
    expect(outcome.error).toMatchObject({ code: 'invalid_cursor' });
    expect(outcome.events).toEqual([]);
    expect(outcome.state).toEqual(before);
    expect(describeChanges(outcome.changes)).toEqual(['connecting 0', 'unrecoverable']);
    expect(log.requests.map((request) => request.headers['last-event-id'])).toEqual(['evt-5']);
  });
});

describe('the tracker of a resumed run', () => {
  it('knows the run started and which of its entities the AgentState holds open', () => {
    const store = createAgentStore({ protocolMode: 'strict' });
    for (const runId of ['r0', 'r1']) {
      const events = runEvents(runId);
      store.dispatch(events.create('run.started', {}));
      store.dispatch(events.create('message.started', { messageId: 'answer', role: 'assistant' }));
      store.dispatch(events.create('tool.requested', { toolCallId: 'search', name: 'search' }));
      store.dispatch(events.create('tool.arguments_completed', { toolCallId: 'search', arguments: '{}' }));
      store.dispatch(events.create('tool.requested', { toolCallId: 'fetch', name: 'fetch' }));
      store.dispatch(events.create('tool.requested', { toolCallId: 'done', name: 'done', arguments: '{}' }));
      store.dispatch(events.create('tool.completed', { toolCallId: 'done', result: 1 }));
    }
    const tracker = new AgentRunTracker();
    tracker.resume('r1', store.getSnapshot());

    expect(tracker.hasStarted).toBe(true);
    expect(tracker.hasEnded).toBe(false);
    expect([tracker.isOpen('message', 'answer'), tracker.isOpen('toolCall', 'fetch')]).toEqual([true, true]);
    expect(tracker.isOpen('toolCall', 'done')).toBe(false);
    expect(tracker.toolCallsAwaitingExecution()).toEqual(['search']);
    const closing = tracker.close(runEvents('r1', 's1', 7), { type: 'cancelled', reason: 'aborted' });
    expect(closing.map((event) => [event.type, event.runId])).toEqual([
      ['message.cancelled', 'r1'],
      ['tool.cancelled', 'r1'],
      ['tool.cancelled', 'r1'],
      ['run.cancelled', 'r1'],
    ]);
  });
});
