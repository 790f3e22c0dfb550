import { afterEach, beforeEach } from 'vitest';
import type { AgentEventFactory } from '../../protocol/createAgentEventFactory';
import {
  answerRunScript,
  type FakeAgentHost,
  type FakeRunStart,
  startFakeAgentHost,
} from '../../tests/support/fakeAgentHost';
import { describeAgentProviderContract } from '../testing/describeAgentProviderContract';
import { createAgentEventProvider } from './createAgentEventProvider';

/** The contract suite's runs all have the id `contract-run`: each test gets a host of its own. */
let host: FakeAgentHost;
beforeEach(async () => {
  host = await startFakeAgentHost({ sessionId: 'contract-session', runScript });
});
afterEach(() => host.close());

/** Answers, or ends the run as `input.outcome` says. */
function runScript(events: AgentEventFactory, run: FakeRunStart) {
  const { outcome } = run.input as { outcome?: 'failed' | 'cancelled' };
  if (outcome === undefined) return answerRunScript(events, run);
  return [
    events.create('run.started', { input: run.input }),
    events.create('message.started', { messageId: 'answer', role: 'assistant' }),
    events.create('message.delta', { messageId: 'answer', delta: 'Working' }),
    outcome === 'failed'
      ? events.create('message.failed', { messageId: 'answer', error: { message: 'model overloaded' } })
      : events.create('message.cancelled', { messageId: 'answer', reason: 'user' }),
    outcome === 'failed'
      ? events.create('run.failed', { error: { message: 'model overloaded', code: 'overloaded' } })
      : events.create('run.cancelled', { reason: 'user' }),
  ];
}

// The provider is made before any host is: its fetch sends each request to the current one.
const PLACEHOLDER = 'http://host.invalid/api/agent';

describeAgentProviderContract('agent-event', {
  provider: createAgentEventProvider({
    baseURL: PLACEHOLDER,
    sessionId: 'contract-session',
    fetch: (url, init) => fetch(String(url).replace(PLACEHOLDER, host.baseURL), init),
  }),
  fixtures: [
    { name: 'an answered prompt', input: { provider: 'openai', input: { prompt: 'Summarize the log' } } },
    { name: 'a failed run', input: { provider: 'openai', input: { outcome: 'failed' } }, status: 'failed' },
    { name: 'a cancelled run', input: { provider: 'openai', input: { outcome: 'cancelled' } }, status: 'cancelled' },
  ],
});
