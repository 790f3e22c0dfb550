// The whole backend path on loopback, real wire formats at each hop: an OpenAI-compatible
// upstream serving recorded chunks -> createAgentHost (its log in memory) over node:http ->
// createAgentEventProvider -> the client's runtime and store.
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { createAgentStore } from '../machines/createAgentStore';
import { selectPendingInput } from '../machines/selectors';
import type { AgentEvent } from '../protocol/eventSchemas';
import { createAgentEventProvider } from '../providers/agent-event/createAgentEventProvider';
import { createLocalAgentProvider } from '../providers/local/createLocalAgentProvider';
import { createOpenAICompatibleAgentProvider } from '../providers/openai/createOpenAICompatibleAgentProvider';
import type { AgentConnectionChange } from '../providers/reconnect';
import { runAgentProvider } from '../providers/runAgentProvider';
import { createXChatRuntime } from '../runtime/createXChatRuntime';
import { createAgentHost } from '../server/createAgentHost';
import { startFixtureServer } from './support/fixtureServer';
import { type ServedHost, serveHost } from './support/hostClient';

const replies: string[] = [];
const upstream = await startFixtureServer(
  fileURLToPath(new URL('../providers/openai/__fixtures__', import.meta.url)),
  () => {
    const reply = replies.shift();
    if (reply === undefined) throw new Error('The upstream got a request it has no reply for');
    return reply;
  },
);
const host = createAgentHost({
  providers: {
    assistant: createOpenAICompatibleAgentProvider({ baseURL: `${upstream.url}/v1`, model: 'gpt-4o-mini' }),
    // Sixty words, 15 ms apart: long enough to cut the client's connection in the middle.
    slow: createLocalAgentProvider({
      script: { steps: [{ type: 'text', deltas: Array.from({ length: 60 }, (_, i) => `w${i} `) }], delayMs: 15 },
    }),
  },
  onError: () => {},
});
const served: ServedHost = await serveHost(host.fetch);
afterAll(async () => {
  await served.close();
  await host.close();
  await upstream.close();
});
afterEach(() => {
  replies.length = 0;
});

const plain = (value: unknown) => JSON.parse(JSON.stringify(value));

describe('upstream -> host -> createAgentEventProvider -> runtime', () => {
  it("streams an OpenAI-compatible answer through the host; the client's AgentState equals the host's", async () => {
    replies.push('text.sse');
    const sessionId = 'e2e-text';
    const chat = createXChatRuntime({
      provider: createAgentEventProvider({ baseURL: served.url, sessionId }),
      sessionId,
    });
    const result = await chat.request({ provider: 'assistant', input: { prompt: 'Say hello' } });
    expect(result.status).toBe('completed');
    const client = chat.getSnapshot().agentState;
    const { state } = await host.getState(sessionId);
    expect(client.issues).toEqual([]);
    expect(plain(client)).toEqual(plain(state));
    expect(JSON.parse(upstream.requests[0]?.body ?? '{}').messages).toEqual([{ role: 'user', content: 'Say hello' }]);
    chat.abort();
  });

  it('runs the tool loop through the host: client tool results reach the continuing run on the wire', async () => {
    replies.push('scenario.sse', 'text.sse');
    const before = upstream.requests.length;
    const sessionId = 'e2e-tools';
    const chat = createXChatRuntime({
      provider: createAgentEventProvider({ baseURL: served.url, sessionId }),
      sessionId,
    });
    const first = await chat.request({ provider: 'assistant', input: { prompt: 'Weather in Paris and Rome?' } });
    const pending = selectPendingInput(chat.getSnapshot().agentState, first.runId).toolCalls;
    expect(pending.map((call) => call.id)).toEqual(['call_a', 'call_b']);
    for (const [call, celsius] of [
      [pending[0], 14],
      [pending[1], 21],
    ] as const) {
      await chat.agentActions.submitToolResult({
        runId: first.runId,
        toolCallId: call?.id as string,
        result: { celsius },
      });
    }
    const deadline = Date.now() + 5_000;
    while (Object.keys((await host.getState(sessionId)).state.runs).length < 2 || chat.getSnapshot().isRequesting) {
      if (Date.now() > deadline) throw new Error('The continuation did not finish in 5 s');
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    const second = JSON.parse(upstream.requests[before + 1]?.body ?? '{}');
    expect(second.messages.slice(2)).toEqual([
      { role: 'tool', tool_call_id: 'call_a', content: '{"celsius":14}' },
      { role: 'tool', tool_call_id: 'call_b', content: '{"celsius":21}' },
    ]);
    const { state } = await host.getState(sessionId);
    const runs = Object.values(state.runs);
    expect(runs.map((run) => run.status)).toEqual(['completed', 'completed']);
    expect(runs[1]?.continuesRunId).toBe(first.runId);
    // The host settled the calls from the results the client sent; both sides agree on them.
    const results = (snapshot: typeof state) =>
      Object.values(snapshot.toolCalls).map((call) => [call.id, call.status, call.result]);
    expect(results(state)).toEqual([
      ['call_a', 'completed', { celsius: 14 }],
      ['call_b', 'completed', { celsius: 21 }],
    ]);
    // The host wrote the very events the client applied for them: the two states are equal.
    expect(chat.getSnapshot().agentState.issues).toEqual([]);
    expect(plain(chat.getSnapshot().agentState)).toEqual(plain(state));
    chat.abort();
  });

  it('resumes from its cursor after the connection drops mid-run: nothing missed, nothing twice', async () => {
    const sessionId = 'e2e-drop';
    const provider = createAgentEventProvider({ baseURL: served.url, sessionId });
    const store = createAgentStore();
    const received: AgentEvent[] = [];
    const connection: AgentConnectionChange['type'][] = [];
    let cut = false;
    const result = await runAgentProvider({
      provider,
      input: { provider: 'slow', input: { prompt: 'Count' } },
      sessionId,
      runId: 'r-drop',
      reconnect: { maxAttempts: 3, initialDelay: 20, maxDelay: 50 },
      onConnection: (change) => connection.push(change.type),
      onEvent: (event, admission) => {
        received.push(event);
        store.dispatch(event, admission);
        if (!cut && received.length === 12) {
          cut = true;
          // Every open connection to the host goes, as a network failure would take them.
          served.server.closeAllConnections();
        }
      },
    });
    expect(result.status).toBe('completed');
    expect(cut).toBe(true);
    expect(connection.filter((type) => type === 'reconnecting')).toHaveLength(1);
    expect(received.map((event) => event.sequence)).toEqual(received.map((_, index) => index + 1));
    expect(new Set(received.map((event) => event.eventId)).size).toBe(received.length);
    const { state } = await host.getState(sessionId);
    expect(plain(store.getSnapshot())).toEqual(plain(state));
    const text = Object.values(state.messages).find((message) => message.role === 'assistant')?.content;
    expect(text).toBe(Array.from({ length: 60 }, (_, i) => `w${i} `).join(''));
  });

  it('cancels the run on the host when the client aborts it, unless told to leave it running', async () => {
    const waitFor = async (check: () => Promise<boolean>) => {
      const deadline = Date.now() + 5_000;
      while (!(await check())) {
        if (Date.now() > deadline) throw new Error('not reached in 5 s');
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
    };
    const statuses: Record<string, string | undefined> = {};
    for (const cancelOnAbort of [true, false]) {
      const sessionId = `e2e-abort-${cancelOnAbort}`;
      const chat = createXChatRuntime({
        provider: createAgentEventProvider({ baseURL: served.url, sessionId, cancelOnAbort }),
        sessionId,
      });
      const running = chat.request({ provider: 'slow', input: { prompt: 'Count' } });
      await waitFor(async () => Object.keys(chat.getSnapshot().agentState.messages).length >= 2);
      chat.abort();
      const result = await running;
      expect(result.status).toBe('cancelled');
      await waitFor(async () => (await host.getState(sessionId)).state.runs[result.runId]?.status !== 'running');
      statuses[String(cancelOnAbort)] = (await host.getState(sessionId)).state.runs[result.runId]?.status;
    }
    expect(statuses).toEqual({ true: 'cancelled', false: 'completed' });
  });
});
