// @vitest-environment jsdom
import { act, cleanup, render, waitFor } from '@testing-library/react';
import { afterEach, describe, expect, it } from 'vitest';
import type { AgentMessageState } from '../machines/agentState';
import { type AgentEventFactory, createAgentEventFactory } from '../protocol/createAgentEventFactory';
import type { AgentProvider } from '../providers/AgentProvider';
import { createAsyncIterableTransport } from '../transports/createAsyncIterableTransport';
import { type UseXChatResult, useXChat } from './useXChat';

afterEach(cleanup);

type Input = { prompt: string };

/**
 * Seed 000's `LocalAgentProvider`, as a user writes it from the seed: it declares only
 * run.* and message.started/delta/completed, its `flush` and `transformError` return
 * nothing, and its runtime says "Half an " and then waits until it is stopped.
 */
function seedLocalAgentProvider(): AgentProvider<Input, Input, string, { events: AgentEventFactory }> {
  const transport = createAsyncIterableTransport<Input, string>(async function* (_request, signal) {
    yield 'Half an ';
    await new Promise((_resolve, reject) => {
      if (signal.aborted) reject(signal.reason);
      signal.addEventListener('abort', () => reject(signal.reason), { once: true });
    });
  });
  return {
    id: 'local-agent',
    protocol: { name: 'agent-event', version: '0.1' },
    capabilities: {
      eventTypes: [
        'run.started',
        'run.completed',
        'run.failed',
        'run.cancelled',
        'message.started',
        'message.delta',
        'message.completed',
      ],
      transports: [transport.kind],
    },
    transport,
    createContext: (options) => ({ events: createAgentEventFactory(options) }),
    start: (input, { events }) => [
      events.create('run.started', { input }),
      events.create('message.started', { messageId: 'answer', role: 'assistant' }),
    ],
    prepareRequest: (input) => input,
    transformChunk: (delta, { events }) => [events.create('message.delta', { messageId: 'answer', delta })],
    flush: () => [],
    transformError: () => [],
  };
}

type Chat = UseXChatResult<Input, AgentMessageState>;
type SeedProvider = ReturnType<typeof seedLocalAgentProvider>;

/** A chat that hands its latest result to `latest`. */
function Probe(props: { provider: SeedProvider; latest: { current?: Chat } }) {
  const chat = useXChat({ provider: props.provider });
  props.latest.current = chat;
  return <p>{chat.isRequesting ? 'requesting' : 'idle'}</p>;
}

function renderChat(provider: SeedProvider) {
  const latest: { current?: Chat } = {};
  const view = render(<Probe provider={provider} latest={latest} />);
  return {
    view,
    get chat() {
      return latest.current as Chat;
    },
  };
}

describe('useXChat: Stop with a provider written from seed 000', () => {
  it('ends the run cancelled and isRequesting goes back to false', async () => {
    const rendered = renderChat(seedLocalAgentProvider());
    let request: Promise<unknown> | undefined;
    act(() => {
      request = rendered.chat.onRequest({ prompt: 'Go' });
    });
    await waitFor(() => expect(rendered.chat.messages.at(-1)?.message.content).toBe('Half an '));
    expect(rendered.chat.isRequesting).toBe(true);
    await act(async () => {
      rendered.chat.abort();
      await request;
    });
    await expect(request).resolves.toMatchObject({ status: 'cancelled' });
    // The view is told in the task after the run ended (the runtime's one notification scheduler).
    await waitFor(() => expect(rendered.view.container.textContent).toBe('idle'));
    expect(rendered.chat.isRequesting).toBe(false);
    expect(Object.values(rendered.chat.agentState.runs).map((run) => run.status)).toEqual(['cancelled']);
    expect(rendered.chat.messages.at(-1)).toMatchObject({ status: 'abort', message: { content: 'Half an ' } });
  });
});
