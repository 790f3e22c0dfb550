import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { createAgentStore } from '../../machines/createAgentStore';
import { getAgentEntityKey } from '../../protocol/getAgentEntityKey';
import { createAgUIAgentProvider } from '../../providers/agui/createAgUIAgentProvider';
import { runAgentProvider } from '../../providers/runAgentProvider';
import { runAgentProviderFixture } from '../../providers/testing/runAgentProviderFixture';
import { validateAgentProviderEvents } from '../../providers/testing/validateAgentProviderEvents';
import { createXChatRuntime } from '../../runtime/createXChatRuntime';
import { startFixtureServer } from '../support/fixtureServer';
import { startHttpServer } from '../support/httpServer';

const fixtures = fileURLToPath(new URL('../../providers/agui/__fixtures__', import.meta.url));
const server = await startFixtureServer(
  fixtures,
  (body) => (body as { forwardedProps: { fixture: string } }).forwardedProps.fixture,
);
afterAll(() => server.close());

const provider = createAgUIAgentProvider({ url: server.url });

describe('AG-UI: a stream that carries more than one run (over SSE from a loopback server)', () => {
  it('makes a RUN_STARTED after RUN_FINISHED a run of its own, under the AG-UI runId, its message kept', async () => {
    const run = await runAgentProviderFixture(provider, {
      prompt: 'Book a table',
      forwardedProps: { fixture: 'two-runs.sse' },
    });
    expect(run.result).toEqual({
      runId: 'contract-run',
      status: 'completed',
      followOnRuns: [{ runId: 'agui-run-2', status: 'completed' }],
    });
    expect(run.state.issues).toEqual([]);
    // Each run's events pass the contract on their own.
    for (const runId of ['contract-run', 'agui-run-2']) {
      const events = run.events.filter((event) => event.runId === runId);
      expect(validateAgentProviderEvents(provider.capabilities, events)).toEqual([]);
    }
    const runs = Object.values(run.state.runs).map((entry) => [entry.id, entry.status, entry.output]);
    expect(runs).toEqual([
      ['contract-run', 'completed', undefined],
      ['agui-run-2', 'completed', { booked: true }],
    ]);
    const second = run.state.messages[getAgentEntityKey('agui-run-2', 'msg-2')];
    expect([second?.runId, second?.role, second?.content, second?.status]).toEqual([
      'agui-run-2',
      'assistant',
      'Booked for 8 pm.',
      'completed',
    ]);
    const first = run.state.messages[getAgentEntityKey('contract-run', 'msg-1')];
    expect(first?.content).toBe('Booking the table.');
    // The second run's events are numbered on their own, from 1, and name the AG-UI run.
    const started = run.events.filter((event) => event.type === 'run.started');
    expect(started.map((event) => [event.runId, event.sequence, event.meta?.agui])).toEqual([
      ['contract-run', 1, { threadId: 'contract-session', runId: 'contract-run' }],
      ['agui-run-2', 1, { threadId: 'thread-1', runId: 'agui-run-2' }],
    ]);
    expect(run.state.lastSequenceByRun['agui-run-2']).toBe(5);
    // The stream's input, so a run that continues the second builds its request as for the first.
    expect(run.state.runs['agui-run-2']?.input).toEqual(run.state.runs['contract-run']?.input);
    expect(run.state.runs['agui-run-2']?.input).toMatchObject({ prompt: 'Book a table' });
  });

  it('gives a follow-on run that repeats an AG-UI runId an id of its own, and fails it alone when the stream is cut', async () => {
    const run = await runAgentProviderFixture(provider, {
      prompt: 'Go on',
      forwardedProps: { fixture: 'two-runs-second-fails.sse' },
    });
    expect(run.result).toEqual({
      runId: 'contract-run',
      status: 'completed',
      followOnRuns: [{ runId: 'contract-run-2', status: 'failed' }],
    });
    expect(run.state.issues).toEqual([]);
    expect(run.state.runs['contract-run']?.status).toBe('completed');
    const second = run.state.runs['contract-run-2'];
    expect([second?.status, second?.error?.code]).toEqual(['failed', 'missing_run_finished']);
    const message = run.state.messages[getAgentEntityKey('contract-run-2', 'msg-2')];
    expect([message?.content, message?.status]).toEqual(['Half an ans', 'failed']);
  });

  it('keeps a stream of one run as it was: no followOnRuns in the result', async () => {
    const run = await runAgentProviderFixture(provider, {
      prompt: 'Stop',
      forwardedProps: { fixture: 'cancelled.sse' },
    });
    expect(run.result).toEqual({ runId: 'contract-run', status: 'cancelled' });
  });

  it('cancels the follow-on run, not the finished one, when the caller stops the stream during it', async () => {
    const frames = [
      { type: 'RUN_STARTED', threadId: 't', runId: 'agui-run-1' },
      { type: 'RUN_FINISHED', threadId: 't', runId: 'agui-run-1' },
      { type: 'RUN_STARTED', threadId: 't', runId: 'agui-run-2' },
      { type: 'TEXT_MESSAGE_START', messageId: 'msg-2', role: 'assistant' },
      { type: 'TEXT_MESSAGE_CONTENT', messageId: 'msg-2', delta: 'Still ' },
    ];
    // Streams the frames, then keeps the connection open, as an agent still at work.
    const open = await startHttpServer((_request, response) => {
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      for (const frame of frames) response.write(`data: ${JSON.stringify(frame)}\n\n`);
    });
    try {
      const store = createAgentStore();
      const controller = new AbortController();
      const result = await runAgentProvider({
        provider: createAgUIAgentProvider({ url: open.url }),
        input: { prompt: 'Go' },
        sessionId: 's',
        runId: 'run-1',
        signal: controller.signal,
        onEvent: (event, admission) => {
          store.dispatch(event, admission);
          if (event.type === 'message.delta' && event.runId === 'agui-run-2') controller.abort();
        },
      });
      expect(result).toEqual({
        runId: 'run-1',
        status: 'completed',
        followOnRuns: [{ runId: 'agui-run-2', status: 'cancelled' }],
      });
      const state = store.getSnapshot();
      expect([state.runs['run-1']?.status, state.runs['agui-run-2']?.status]).toEqual(['completed', 'cancelled']);
      const message = state.messages[getAgentEntityKey('agui-run-2', 'msg-2')];
      expect([message?.content, message?.status]).toEqual(['Still ', 'cancelled']);
      expect(state.issues).toEqual([]);
      store.destroy();
    } finally {
      await open.close();
    }
  });

  it('through the runtime: an interrupt of the follow-on run is answered and continued like any waiting run', async () => {
    const replies = [
      [
        { type: 'RUN_STARTED', threadId: 'trip', runId: 'agui-run-1' },
        { type: 'TEXT_MESSAGE_START', messageId: 'msg-1', role: 'assistant' },
        { type: 'TEXT_MESSAGE_CONTENT', messageId: 'msg-1', delta: 'Found a flight.' },
        { type: 'TEXT_MESSAGE_END', messageId: 'msg-1' },
        { type: 'RUN_FINISHED', threadId: 'trip', runId: 'agui-run-1' },
        { type: 'RUN_STARTED', threadId: 'trip', runId: 'agui-run-2' },
        {
          type: 'RUN_FINISHED',
          threadId: 'trip',
          runId: 'agui-run-2',
          outcome: { type: 'interrupt', interrupts: [{ id: 'book', reason: 'confirmation', message: 'Book it?' }] },
        },
      ],
      [
        { type: 'RUN_STARTED', threadId: 'trip', runId: 'agui-run-3' },
        { type: 'TEXT_MESSAGE_START', messageId: 'msg-3', role: 'assistant' },
        { type: 'TEXT_MESSAGE_CONTENT', messageId: 'msg-3', delta: 'Booked.' },
        { type: 'TEXT_MESSAGE_END', messageId: 'msg-3' },
        { type: 'RUN_FINISHED', threadId: 'trip', runId: 'agui-run-3' },
      ],
    ];
    const agent = await startHttpServer((_request, response) => {
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      for (const frame of replies.shift() ?? []) response.write(`data: ${JSON.stringify(frame)}\n\n`);
      response.end();
    });
    try {
      const chat = createXChatRuntime({ provider: createAgUIAgentProvider({ url: agent.url }), sessionId: 'trip' });
      const first = await chat.request({ prompt: 'Find and book a flight' });
      expect(first.followOnRuns).toEqual([{ runId: 'agui-run-2', status: 'completed' }]);
      expect(chat.getSnapshot().agentState.runs['agui-run-2']?.pendingApprovalIds).toEqual(['book']);
      await chat.agentActions.resolveApproval({ runId: 'agui-run-2', approvalId: 'book', decision: 'approved' });
      const state = chat.getSnapshot().agentState;
      expect(state.approvals[getAgentEntityKey('agui-run-2', 'book')]).toMatchObject({
        status: 'resolved',
        decision: 'approved',
      });
      const continuing = Object.values(state.runs).find((run) => run.continuesRunId === 'agui-run-2');
      expect(continuing?.status).toBe('completed');
      const request = JSON.parse(agent.requests[1]?.body ?? '{}');
      expect(request.resume).toEqual([{ interruptId: 'book', status: 'resolved', payload: { decision: 'approved' } }]);
      expect(request.messages.map((message: { id: string }) => message.id)).toEqual([`prompt-${first.runId}`, 'msg-1']);
      expect(state.issues).toEqual([]);
    } finally {
      await agent.close();
    }
  });
});
