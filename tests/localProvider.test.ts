import { describe, expect, it } from 'vitest';
import { createLocalAgentProvider } from '../providers/local/createLocalAgentProvider';
import type { LocalAgentScript } from '../providers/local/localAgentChunks';
import { describeAgentProviderContract } from '../providers/testing/describeAgentProviderContract';
import { runAgentProviderFixture } from '../providers/testing/runAgentProviderFixture';

const scripts: Record<string, LocalAgentScript> = {
  everything: {
    steps: [
      { type: 'reasoning', deltas: ['Two cities, ', 'two lookups.'] },
      { type: 'task', title: 'Forecasts', progress: [0.5, 1] },
      { type: 'tool', name: 'weather', argumentDeltas: ['{"city":', '"Paris"}'], result: { celsius: 14 } },
      {
        type: 'tool',
        name: 'weather',
        argumentDeltas: ['{"city":"Rome"}'],
        error: { message: 'timeout', code: 'timeout', retryable: true },
      },
      { type: 'approval', description: 'Send the email?', risk: 'low', decision: 'approved' },
      { type: 'artifact', mediaType: 'text/markdown', title: 'Report', versions: ['# Draft', '# Final'] },
      { type: 'text', deltas: ['Paris: 14 °C. ', 'Rome: unknown.'] },
    ],
    usage: { inputTokens: 10, outputTokens: 20 },
  },
  'client tools': {
    steps: [
      { type: 'text', deltas: ['Let me check.'] },
      { type: 'tool', name: 'read_file', argumentDeltas: ['{"path":"a.txt"}'] },
      { type: 'tool', name: 'read_file', argumentDeltas: ['{"path":"b.txt"}'] },
    ],
  },
  'redacted reasoning': {
    steps: [
      { type: 'reasoning', deltas: ['c2VjcmV0'], redacted: true },
      { type: 'text', deltas: ['Done.'] },
    ],
  },
  'runtime crash': {
    steps: [
      { type: 'text', deltas: ['Start'] },
      { type: 'fail', error: { message: 'GPU fell over', code: 'internal' } },
    ],
  },
  'error in stream': {
    steps: [
      { type: 'tool', name: 'x', argumentDeltas: ['{}'] },
      { type: 'error', error: { message: 'overloaded', code: 'overloaded', retryable: true } },
    ],
  },
  'slow stream': { steps: [{ type: 'text', deltas: ['a', 'b', 'c'] }], delayMs: 5 },
  'waiting approval': {
    steps: [
      { type: 'tool', name: 'send_email', argumentDeltas: ['{"to":"team"}'] },
      { type: 'approval', description: 'Send the email?', risk: 'medium', toolCallId: 'tool-0' },
      { type: 'text', deltas: ['Waiting for your approval.'] },
    ],
  },
};

const provider = createLocalAgentProvider({ script: (input) => scripts[input.prompt] ?? { steps: [] } });

describeAgentProviderContract('local', {
  provider,
  fixtures: [
    { name: 'everything', input: { prompt: 'everything' } },
    { name: 'client tools', input: { prompt: 'client tools' } },
    { name: 'redacted reasoning', input: { prompt: 'redacted reasoning' } },
    { name: 'runtime crash', input: { prompt: 'runtime crash' }, status: 'failed' },
    { name: 'error in stream', input: { prompt: 'error in stream' }, status: 'failed' },
    { name: 'slow stream', input: { prompt: 'slow stream' } },
    { name: 'empty script', input: { prompt: 'nothing' } },
    { name: 'waiting approval', input: { prompt: 'waiting approval' } },
  ],
});

// Seed 001's tool lifecycle: no `tool.arguments_completed`, the arguments are complete at `tool.running`.
describeAgentProviderContract('local, seed tool lifecycle', {
  provider: createLocalAgentProvider({
    runtime: async function* () {
      yield { type: 'tool.start', id: 'search', name: 'search' } as const;
      yield { type: 'tool.args', id: 'search', delta: '{"q":"x"}' } as const;
      yield { type: 'tool.running', id: 'search' } as const;
      yield { type: 'tool.result', id: 'search', result: { hits: 3 } } as const;
      yield { type: 'tool.start', id: 'lookup', name: 'lookup' } as const;
      yield { type: 'tool.running', id: 'lookup' } as const;
      yield { type: 'tool.error', id: 'lookup', error: { message: 'not found' } } as const;
      yield { type: 'done' } as const;
    },
  }),
  fixtures: [{ name: 'requested, arguments, running, completed; requested, running, failed', input: { prompt: 'x' } }],
});

describe('local provider: what each script path produces', () => {
  it('plays every entity kind to its end', async () => {
    const { state } = await runAgentProviderFixture(provider, { prompt: 'everything' });
    const run = state.runs['contract-run'];
    expect(run).toMatchObject({
      status: 'completed',
      usage: { inputTokens: 10, outputTokens: 20 },
      input: { prompt: 'everything' },
    });
    expect(
      Object.values(state.toolCalls).map((tool) => [
        tool.status,
        tool.parsedArguments,
        tool.result ?? tool.error?.code,
      ]),
    ).toEqual([
      ['completed', { city: 'Paris' }, { celsius: 14 }],
      ['failed', { city: 'Rome' }, 'timeout'],
    ]);
    expect(Object.values(state.artifacts)[0]).toMatchObject({ status: 'completed', version: 2, content: '# Final' });
    expect(Object.values(state.tasks)[0]).toMatchObject({ status: 'completed', progress: 1 });
    expect(Object.values(state.approvals)[0]).toMatchObject({ status: 'resolved', decision: 'approved' });
    expect(Object.values(state.messages).map((message) => [message.role, message.content])).toEqual([
      ['user', 'everything'],
      ['assistant', 'Paris: 14 °C. Rome: unknown.'],
    ]);
  });

  it('ends with client tools awaiting execution, listed as pending', async () => {
    const { state } = await runAgentProviderFixture(provider, { prompt: 'client tools' });
    expect(state.runs['contract-run']?.pendingToolCallIds).toEqual(['tool-1', 'tool-2']);
    expect(Object.values(state.toolCalls).map((tool) => tool.status)).toEqual([
      'awaiting_execution',
      'awaiting_execution',
    ]);
  });

  it('ends with an approval that has no decision waiting for the user, listed as pending', async () => {
    const { result, events, state } = await runAgentProviderFixture(provider, { prompt: 'waiting approval' });
    expect(result.status).toBe('completed');
    expect(events.at(-1)).toMatchObject({
      type: 'run.completed',
      payload: { pendingToolCallIds: ['tool-0'], pendingApprovalIds: ['approval-1'] },
    });
    expect(events.map((event) => event.type).filter((type) => type.startsWith('approval.'))).toEqual([
      'approval.requested',
    ]);
    expect(state.runs['contract-run']?.pendingApprovalIds).toEqual(['approval-1']);
    expect(Object.values(state.approvals)).toMatchObject([
      { id: 'approval-1', status: 'waiting', toolCallId: 'tool-0', description: 'Send the email?', risk: 'medium' },
    ]);
    expect(state.issues).toEqual([]);
  });

  it('fails the run with the runtime error, and with the error reported in the stream', async () => {
    const crash = await runAgentProviderFixture(provider, { prompt: 'runtime crash' });
    expect(crash.state.runs['contract-run']?.error).toEqual({ message: 'GPU fell over', code: 'internal' });
    const unnamed = createLocalAgentProvider({ script: { steps: [{ type: 'fail', error: { message: 'down' } }] } });
    const unnamedCrash = await runAgentProviderFixture(unnamed, { prompt: 'x' });
    expect(unnamedCrash.state.runs['contract-run']?.error).toEqual({ message: 'down', code: 'runtime_error' });
    expect(Object.values(crash.state.messages)[1]?.status).toBe('completed');
    const reported = await runAgentProviderFixture(provider, { prompt: 'error in stream' });
    expect(reported.state.runs['contract-run']?.error).toEqual({
      message: 'overloaded',
      code: 'overloaded',
      retryable: true,
    });
    expect(Object.values(reported.state.toolCalls)[0]?.status).toBe('failed');
  });

  it('cancels a stalled runtime on abort', async () => {
    const stalling = createLocalAgentProvider({
      script: { steps: [{ type: 'text', deltas: ['waiting'] }, { type: 'stall' }] },
    });
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 30);
    const { result, state } = await runAgentProviderFixture(stalling, { prompt: 'x' }, { signal: controller.signal });
    expect(result.status).toBe('cancelled');
    expect(state.runs['contract-run']).toMatchObject({ status: 'cancelled', reason: 'aborted' });
  });

  it('fails a custom runtime that stops without finishing', async () => {
    const truncated = createLocalAgentProvider({
      runtime: async function* () {
        yield { type: 'text.start', id: 'm' } as const;
        yield { type: 'text.delta', id: 'm', delta: 'cut' } as const;
      },
    });
    const { result, state, validation } = await runAgentProviderFixture(truncated, { prompt: 'x' });
    expect(result.status).toBe('failed');
    expect(state.runs['contract-run']?.error?.code).toBe('incomplete_stream');
    expect(validation).toEqual([]);
  });
});
