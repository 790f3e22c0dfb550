import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { createAgentStore } from '../../machines/createAgentStore';
import { AgentValidationError } from '../../protocol/errors';
import { createAgUIAgentProvider } from '../../providers/agui/createAgUIAgentProvider';
import { runAgentProvider } from '../../providers/runAgentProvider';
import { runAgentProviderFixture } from '../../providers/testing/runAgentProviderFixture';
import { startFixtureServer } from '../support/fixtureServer';

const fixtures = fileURLToPath(new URL('../../providers/agui/__fixtures__', import.meta.url));
const server = await startFixtureServer(
  fixtures,
  (body) => (body as { forwardedProps: { fixture: string } }).forwardedProps.fixture,
);
afterAll(() => server.close());

const provider = createAgUIAgentProvider({ url: server.url });
const sentMessages = (index: number) =>
  (JSON.parse(server.requests[index]?.body ?? '{}') as { messages: unknown[] }).messages;

describe('AG-UI: input messages without ids', () => {
  it('takes a prompt repeated as the last message, without ids, as one user message with the prompt id', async () => {
    const before = server.requests.length;
    const run = await runAgentProviderFixture(provider, {
      prompt: 'hi',
      messages: [{ role: 'user', content: 'hi' }] as never,
      forwardedProps: { fixture: 'text-and-parallel-tools.sse' },
    });
    expect(run.result.status).toBe('completed');
    expect(run.state.issues).toEqual([]);
    expect(sentMessages(before)).toEqual([{ id: 'prompt-contract-run', role: 'user', content: 'hi' }]);
    const user = Object.values(run.state.messages).filter((message) => message.role === 'user');
    expect(user.map((message) => [message.id, message.runId, message.content])).toEqual([
      ['prompt-contract-run', 'contract-run', 'hi'],
    ]);
  });

  it('gives messages without ids ids made of the run id and their place, the same on a resend', async () => {
    const input = {
      messages: [
        { role: 'user', content: 'Where is Lyon?' },
        { role: 'assistant', content: 'In France.' },
        { role: 'user', content: 'And Basel?' },
      ] as never,
      forwardedProps: { fixture: 'text-and-parallel-tools.sse' },
    };
    const before = server.requests.length;
    const run = await runAgentProviderFixture(provider, input);
    await runAgentProviderFixture(provider, input);
    const expected = [
      { id: 'input-contract-run-0', role: 'user', content: 'Where is Lyon?' },
      { id: 'input-contract-run-1', role: 'assistant', content: 'In France.' },
      { id: 'prompt-contract-run', role: 'user', content: 'And Basel?' },
    ];
    expect(sentMessages(before)).toEqual(expected);
    expect(sentMessages(before + 1)).toEqual(expected);
    expect(run.state.issues).toEqual([]);
    const user = Object.values(run.state.messages).filter((message) => message.role === 'user');
    expect(user.map((message) => [message.id, message.content])).toEqual([['prompt-contract-run', 'And Basel?']]);
  });

  it('sends a prompt that is not the last message after the messages, once', async () => {
    const before = server.requests.length;
    const run = await runAgentProviderFixture(provider, {
      prompt: 'And Basel?',
      messages: [{ id: 'u-1', role: 'user', content: 'Where is Lyon?' }],
      forwardedProps: { fixture: 'text-and-parallel-tools.sse' },
    });
    expect(sentMessages(before)).toEqual([
      { id: 'u-1', role: 'user', content: 'Where is Lyon?' },
      { id: 'prompt-contract-run', role: 'user', content: 'And Basel?' },
    ]);
    const user = Object.values(run.state.messages).filter((message) => message.role === 'user');
    expect(user.map((message) => [message.id, message.content])).toEqual([['prompt-contract-run', 'And Basel?']]);
  });

  it('refuses a message with an id that is not a non-empty string, or that is no message, as invalid_input naming the path; nothing is sent', async () => {
    for (const [messages, path] of [
      [[{ id: 7, role: 'user', content: 'hi' }], 'messages.0.id'],
      [
        [
          { id: 'u-1', role: 'user', content: 'hi' },
          { id: '', role: 'user', content: 'again' },
        ],
        'messages.1.id',
      ],
      [['hi'], 'messages.0'],
      [[{ id: 'u-1', content: 'hi' }], 'messages.0.role'],
    ] as const) {
      const before = server.requests.length;
      const run = await runAgentProviderFixture(provider, {
        messages: messages as never,
        forwardedProps: { fixture: 'text-and-parallel-tools.sse' },
      });
      expect(server.requests.length).toBe(before);
      expect(run.result.status).toBe('failed');
      expect(AgentValidationError.isInstance(run.result.error)).toBe(true);
      expect((run.result.error as AgentValidationError).failure.path).toBe(path);
      expect(run.state.runs['contract-run']?.error?.code).toBe('invalid_input');
      expect(run.state.issues).toEqual([]);
    }
  });

  it("sends a prompt again after the history's last user message: that one was an earlier run's", async () => {
    const store = createAgentStore();
    const forwardedProps = { fixture: 'run-error-at-once.sse' };
    for (const runId of ['run-a', 'run-b']) {
      await runAgentProvider({
        provider,
        input: { prompt: 'hi', forwardedProps },
        sessionId: 'retry',
        runId,
        history: store.getSnapshot(),
        onEvent: store.dispatch,
      });
    }
    const sent = sentMessages(server.requests.length - 1) as Array<{ role: string }>;
    expect(sent.filter((message) => message.role === 'user')).toEqual([
      { id: 'prompt-run-a', role: 'user', content: 'hi' },
      { id: 'prompt-run-b', role: 'user', content: 'hi' },
    ]);
    store.destroy();
  });
});
