// A run resumed after a restore, by a provider that numbers its own events: what the run
// left open before the restore is closed once when the resumed stream fails.
import { describe, expect, it } from 'vitest';
import { createAgentStore } from '../machines/createAgentStore';
import { getAgentEntityKey } from '../protocol/getAgentEntityKey';
import { defineAgentProvider } from '../providers/defineAgentProvider';
import { eventTypesOf } from '../providers/eventTypeGroups';
import { runAgentProvider } from '../providers/runAgentProvider';
import { AgentTransportError } from '../transports/AgentTransportError';

type Chunk = { cursor: string; delta: string };

function typingProvider(resumed: () => AsyncIterable<Chunk>) {
  return defineAgentProvider({
    id: 'typing',
    capabilities: { eventTypes: eventTypesOf(['run', 'message']), resumable: true },
    transport: {
      kind: 'async-iterable',
      async *open() {
        yield { cursor: '1', delta: 'Hel' };
        throw new AgentTransportError('network_error', 'The page was closed');
      },
      resume: () => resumed(),
      getCursor: (chunk: Chunk) => chunk.cursor,
    },
    createContext: (events) => ({ events }),
    start: (_input: { prompt: string }, { events }) => [
      events.emit('run.started', {}),
      events.emit('message.started', { messageId: 'answer', role: 'assistant' }),
    ],
    prepareRequest: (input) => input,
    transformChunk: (chunk, { events }) => [events.emit('message.delta', { messageId: 'answer', delta: chunk.delta })],
    incompleteStream: { message: 'The stream ended early', code: 'incomplete_stream' },
  });
}

describe('a run resumed after a restore', () => {
  it('closes what it left open, once, when the resumed stream fails', async () => {
    let cursor: string | undefined;
    const provider = typingProvider(async function* () {
      yield { cursor: '2', delta: 'lo' };
      throw new AgentTransportError('http_error', 'The server refused the rest', { status: 400 });
    });
    const before = createAgentStore({ protocolMode: 'strict' });
    // The page closes mid-run: the first stream delivered one chunk, and its failure never arrived.
    await runAgentProvider({
      provider,
      input: { prompt: 'Hi' },
      sessionId: 's1',
      runId: 'r1',
      reconnect: false,
      onEvent: (event) => {
        if (event.type !== 'message.failed' && event.type !== 'run.failed') before.dispatch(event);
      },
      onCursor: (next) => {
        cursor = next;
      },
    });
    const saved = JSON.parse(JSON.stringify(before.getSnapshot()));
    expect(saved.messages[getAgentEntityKey('r1', 'answer')]).toMatchObject({ status: 'streaming', content: 'Hel' });

    const restored = createAgentStore({ protocolMode: 'strict' });
    restored.reset(saved);
    const result = await runAgentProvider({
      provider,
      input: { prompt: 'Hi' },
      sessionId: 's1',
      runId: 'r1',
      resume: { cursor: cursor as string, lastSequence: saved.lastSequenceByRun.r1 },
      history: restored.getSnapshot(),
      reconnect: false,
      onEvent: restored.dispatch,
    });
    expect(result.status).toBe('failed');
    const state = restored.getSnapshot();
    expect(state.messages[getAgentEntityKey('r1', 'answer')]).toMatchObject({ status: 'failed', content: 'Hello' });
    expect(state.runs.r1).toMatchObject({ status: 'failed', error: { message: 'The server refused the rest' } });
    expect(state.issues).toEqual([]);
  });
});
