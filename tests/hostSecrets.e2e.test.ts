// Upstream credentials never reach a reader: an upstream that answers 401 echoing the
// request's Authorization header fails the run with a safe error in the log and at every
// client; the details (the body, the address) reach the operator's `onError` only.
import { afterAll, describe, expect, it, vi } from 'vitest';
import type { AgentEvent } from '../protocol/eventSchemas';
import { REDACTED } from '../protocol/redactSecrets';
import { createAgentEventProvider } from '../providers/agent-event/createAgentEventProvider';
import { createAgUIAgentProvider } from '../providers/agui/createAgUIAgentProvider';
import { createOpenAICompatibleAgentProvider } from '../providers/openai/createOpenAICompatibleAgentProvider';
import { runAgentProvider } from '../providers/runAgentProvider';
import { createXChatRuntime } from '../runtime/createXChatRuntime';
import { createAgentHost } from '../server/createAgentHost';
import { AgentTransportError } from '../transports/AgentTransportError';
import { createSSETransport } from '../transports/createSSETransport';
import { readEvents, serveHost } from './support/hostClient';
import { startHttpServer } from './support/httpServer';
import { until } from './support/until';

const API_KEY = 'sk-live-0123456789abcdefSECRET';

// A gateway that answers 401 with a body echoing the request's headers.
const upstream = await startHttpServer((request, response) => {
  response.writeHead(401, { 'content-type': 'application/json' });
  response.end(
    JSON.stringify({
      error: { message: `Invalid credentials: ${request.headers.authorization}`, type: 'invalid_request_error' },
      echo: { headers: request.headers },
    }),
  );
});
const reported: Array<{ error: unknown; context: { sessionId: string; runId?: string } }> = [];
const host = createAgentHost({
  providers: {
    assistant: createOpenAICompatibleAgentProvider({
      baseURL: `${upstream.url}/v1`,
      apiKey: API_KEY,
      model: 'gpt-4o-mini',
    }),
  },
  reconnect: false,
  onError: (error, context) => reported.push({ error, context }),
});
const served = await serveHost(host.fetch);
afterAll(async () => {
  await served.close();
  await host.close();
  await upstream.close();
});

describe('a failed upstream request', () => {
  it('reaches the log and every client as a safe code and message; onError gets the details', async () => {
    const sessionId = 'secrets-1';
    const chat = createXChatRuntime({
      provider: createAgentEventProvider({ baseURL: served.url, sessionId }),
      sessionId,
    });
    const result = await chat.request({ provider: 'assistant', input: { prompt: 'Hello' } });
    expect(result.status).toBe('failed');
    expect(upstream.requests[0]?.headers.authorization).toBe(`Bearer ${API_KEY}`);

    // What the client holds, what the host's state holds, and what any reader of the log reads.
    const clientState = JSON.stringify(chat.getSnapshot().agentState);
    const { state } = await host.getState(sessionId);
    const { events } = await readEvents(`${served.url}/sessions/${sessionId}/events`, {
      stop: (frames) => frames.some((frame) => frame.data.includes('"run.failed"')),
    });
    for (const seen of [clientState, JSON.stringify(state), JSON.stringify(events)]) {
      expect(seen).not.toContain(API_KEY);
      expect(seen).not.toContain('/v1/chat/completions');
    }
    const failed = events.find((event) => event.type === 'run.failed');
    expect(failed?.payload).toEqual({
      error: { code: 'http_error', message: 'The upstream answered 401', retryable: false, data: { status: 401 } },
    });
    expect(state.runs[result.runId]?.error).toEqual(failed?.payload.error);

    // The operator gets the run's error as it was, the echoed body included.
    const ofRun = reported.filter((entry) => entry.context.runId === result.runId);
    expect(ofRun).toHaveLength(1);
    const error = ofRun[0]?.error;
    expect(AgentTransportError.isInstance(error) && error.status).toBe(401);
    expect(AgentTransportError.isInstance(error) && error.bodyExcerpt).toContain(`Bearer ${API_KEY}`);
    chat.abort();
  });
});

describe("the host's default onError", () => {
  it('logs the failure with its status and body, credentials redacted', async () => {
    const logged: unknown[][] = [];
    const spy = vi.spyOn(console, 'error').mockImplementation((...args: unknown[]) => {
      logged.push(args);
    });
    const quiet = createAgentHost({
      providers: {
        assistant: createOpenAICompatibleAgentProvider({ baseURL: `${upstream.url}/v1`, apiKey: API_KEY, model: 'm' }),
      },
      reconnect: false,
    });
    try {
      const { runId } = await quiet.startRun('default-log', { provider: 'assistant', input: { prompt: 'Hi' } });
      await until(() => logged.length > 0, "the run's failure in the log");
      const text = JSON.stringify(logged);
      expect(text).not.toContain(API_KEY);
      expect(logged[0]?.[1]).toEqual({ sessionId: 'default-log', runId });
      expect(logged[0]?.[2]).toMatchObject({ code: 'http_error', status: 401 });
      expect(text).toContain(`Bearer ${REDACTED}`);
    } finally {
      spy.mockRestore();
      await quiet.close();
    }
  });
});

describe('where the provider runs in the client itself', () => {
  it("the run's failed event carries what the upstream said, its credentials redacted", async () => {
    const events: AgentEvent[] = [];
    const result = await runAgentProvider({
      provider: createOpenAICompatibleAgentProvider({ baseURL: `${upstream.url}/v1`, apiKey: API_KEY, model: 'm' }),
      input: { prompt: 'Hello' },
      sessionId: 'local-1',
      runId: 'r1',
      reconnect: false,
      onEvent: (event) => events.push(event),
    });
    expect(result.status).toBe('failed');
    const failed = events.find((event) => event.type === 'run.failed');
    expect(JSON.stringify(events)).not.toContain(API_KEY);
    expect(failed?.payload).toMatchObject({
      error: {
        code: 'http_error',
        message: `${upstream.url}/v1/chat/completions answered 401: Invalid credentials: Bearer ${REDACTED}`,
        data: { status: 401, body: { echo: { headers: { authorization: REDACTED } } } },
      },
    });
  });

  it("an AG-UI RUN_ERROR's message is redacted in the run's failed event", async () => {
    const agui = await startHttpServer((_request, response) => {
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      const frames = [
        { type: 'RUN_STARTED', threadId: 't', runId: 'agui-run' },
        { type: 'RUN_ERROR', message: `Gateway refused Authorization: Bearer ${API_KEY}`, code: 'gateway' },
      ];
      response.end(frames.map((frame) => `data: ${JSON.stringify(frame)}\n\n`).join(''));
    });
    try {
      const events: AgentEvent[] = [];
      await runAgentProvider({
        provider: createAgUIAgentProvider({ url: agui.url }),
        input: { messages: [] },
        sessionId: 'agui-1',
        runId: 'r1',
        reconnect: false,
        onEvent: (event) => events.push(event),
      });
      expect(events.at(-1)).toMatchObject({
        type: 'run.failed',
        payload: { error: { code: 'gateway', message: `Gateway refused Authorization: ${REDACTED}` } },
      });
    } finally {
      await agui.close();
    }
  });

  it("a transport error's message names the address without its credentials; the excerpt keeps the body", async () => {
    const transport = createSSETransport<undefined>({
      url: `${upstream.url}/stream?alt=sse&key=q-secret-4242`,
      method: 'GET',
      headers: { authorization: `Bearer ${API_KEY}` },
    });
    let error: unknown;
    try {
      for await (const _ of transport.open(undefined, new AbortController().signal)) break;
    } catch (caught) {
      error = caught;
    }
    expect(AgentTransportError.isInstance(error) && error.message).toBe(
      `${upstream.url}/stream?alt=sse&key=${REDACTED} answered 401`,
    );
    expect(AgentTransportError.isInstance(error) && error.bodyExcerpt).toContain(`Bearer ${API_KEY}`);
  });
});
