import { describe, expect, it } from 'vitest';
import { createAgentEventFactory } from '../protocol/createAgentEventFactory';
import type { AgentEvent } from '../protocol/eventSchemas';
import { createMemoryEventLog } from './createMemoryEventLog';
import { EventAppender, MAX_APPEND_EVENTS } from './EventAppender';

function deltas(count: number): AgentEvent[] {
  const events = createAgentEventFactory({ sessionId: 's1', runId: 'r1', now: () => 1 });
  const out: AgentEvent[] = [
    events.create('run.started', {}),
    events.create('message.started', { messageId: 'm1', role: 'assistant' }),
  ];
  for (let index = 0; out.length < count; index += 1) {
    out.push(events.create('message.delta', { messageId: 'm1', delta: `word${index} ` }));
  }
  return out;
}

describe('EventAppender', () => {
  it('appends a run pushed all at once in batches of at most MAX_APPEND_EVENTS, in order', async () => {
    const log = createMemoryEventLog();
    const batches: number[] = [];
    const append = log.append.bind(log);
    log.append = (sessionId, events) => {
      batches.push(events.length);
      return append(sessionId, events);
    };
    const appender = new EventAppender(log, 's1', (error) => {
      throw error;
    });
    const run = deltas(MAX_APPEND_EVENTS * 3 + 10);
    for (const event of run) appender.push(event);
    await appender.drain();
    expect(batches).toEqual([MAX_APPEND_EVENTS, MAX_APPEND_EVENTS, MAX_APPEND_EVENTS, 10]);
    const read = await log.read('s1', { limit: run.length + 1 });
    expect(read.map((entry) => entry.event.sequence)).toEqual(run.map((event) => event.sequence));
    await log.close();
  });
});
