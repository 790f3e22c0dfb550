import { describe, expect, it } from 'vitest';
import { AgentTransportError } from '../transports/AgentTransportError';
import { createAsyncIterableTransport } from '../transports/createAsyncIterableTransport';
import { defineAgentProvider } from './defineAgentProvider';
import { eventTypesOf } from './eventTypeGroups';

const options = {
  sessionId: 's1',
  runId: 'r1',
  initialSequence: 0,
  now: () => 1,
  signal: new AbortController().signal,
};

function echo(extra: { isRetryable?: (error: unknown) => boolean } = {}) {
  return defineAgentProvider({
    id: 'echo',
    transport: createAsyncIterableTransport(async function* (_request: string) {
      yield 'hi';
    }),
    capabilities: { eventTypes: eventTypesOf(['run', 'message']) },
    createContext: (events) => ({ events }),
    start: (input: string, { events }) => [
      events.emit('run.started', { input }),
      events.emit('message.started', { messageId: 'm1', role: 'assistant' }),
    ],
    prepareRequest: (input) => input,
    transformChunk: (chunk, { events }) => [events.emit('message.delta', { messageId: 'm1', delta: chunk })],
    finish: ({ events }) => [events.emit('message.completed', { messageId: 'm1' })],
    incompleteStream: { message: 'ended early', code: 'incomplete_stream' },
    ...extra,
  });
}

describe('defineAgentProvider', () => {
  it('supplies the protocol and the transport kind', () => {
    const provider = echo();
    expect(provider.protocol).toEqual({ name: 'agent-event', version: '0.1' });
    expect(provider.capabilities.transports).toEqual(['async-iterable']);
    expect(provider.classifyError).toBeUndefined();
  });

  it('flushes with `finish` first, then fails the run the stream left open', () => {
    const provider = echo();
    const context = provider.createContext(options);
    provider.start('hi', context);
    expect(provider.flush(context).map((event) => [event.type, event.payload])).toEqual([
      ['message.completed', { messageId: 'm1' }],
      ['run.failed', { error: { message: 'ended early', code: 'incomplete_stream' } }],
    ]);
  });

  it('cancels what is open on an abort', () => {
    const provider = echo({ isRetryable: () => true });
    const context = provider.createContext(options);
    provider.start('hi', context);
    const error = new AgentTransportError('aborted', 'The run was aborted');
    expect(provider.transformError(error, context).map((event) => [event.type, event.payload])).toEqual([
      ['message.cancelled', { messageId: 'm1', reason: 'aborted' }],
      ['run.cancelled', { reason: 'aborted' }],
    ]);
  });

  it('fails what is open on an error, retryable as `isRetryable` says, and absent without it', () => {
    const retrying = echo({ isRetryable: (error) => (error as Error).message === 'overloaded' });
    const context = retrying.createContext(options);
    retrying.start('hi', context);
    expect(retrying.classifyError?.(new Error('overloaded'), context)).toEqual({ retryable: true });
    expect(retrying.transformError(new Error('overloaded'), context).at(-1)?.payload).toEqual({
      error: { message: 'overloaded', retryable: true },
    });
    const plain = echo();
    const plainContext = plain.createContext(options);
    plain.start('hi', plainContext);
    expect(plain.transformError(new Error('overloaded'), plainContext).at(-1)?.payload).toEqual({
      error: { message: 'overloaded' },
    });
  });
});
