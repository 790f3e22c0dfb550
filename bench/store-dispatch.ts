// Throughput of store.dispatch on two shapes of work. Run with `npm run bench`.
// Events are built before timing; each figure is the median of several runs after a warm-up.
import os from 'node:os';
import { createAgentStore } from '../machines/createAgentStore';
import { createAgentEventFactory } from '../protocol/createAgentEventFactory';
import type { AgentEvent } from '../protocol/eventSchemas';
import { getAgentEntityKey } from '../protocol/getAgentEntityKey';

function factory(runId: string) {
  return createAgentEventFactory({ sessionId: 's1', runId, now: () => 1, createEventId: (n) => `${runId}-${n}` });
}

function oneLongMessage(deltas: number): AgentEvent[] {
  const events = factory('r1');
  const out: AgentEvent[] = [
    events.create('run.started', {}),
    events.create('message.started', { messageId: 'm1', role: 'assistant' }),
  ];
  for (let index = 0; index < deltas; index += 1)
    out.push(events.create('message.delta', { messageId: 'm1', delta: 'tok ' }));
  out.push(events.create('message.completed', { messageId: 'm1' }), events.create('run.completed', {}));
  return out;
}

function manyEntities(count: number): AgentEvent[] {
  const events = factory('r1');
  const out: AgentEvent[] = [events.create('run.started', {})];
  for (let index = 0; index < count; index += 1) {
    const messageId = `m${index}`;
    out.push(
      events.create('message.started', { messageId, role: 'assistant' }),
      events.create('message.delta', { messageId, delta: 'hello ' }),
      events.create('message.delta', { messageId, delta: 'world' }),
      events.create('message.completed', { messageId }),
    );
  }
  out.push(events.create('run.completed', {}));
  return out;
}

function measure(name: string, build: () => AgentEvent[], check: (store: ReturnType<typeof createAgentStore>) => void) {
  const times: number[] = [];
  let eventCount = 0;
  for (let round = 0; round < 6; round += 1) {
    const events = build();
    eventCount = events.length;
    const store = createAgentStore();
    const start = performance.now();
    for (const event of events) store.dispatch(event);
    store.getSnapshot();
    const elapsed = performance.now() - start;
    check(store);
    store.destroy();
    if (round > 0) times.push(elapsed);
  }
  times.sort((a, b) => a - b);
  const median = times[Math.floor(times.length / 2)] as number;
  const perSecond = Math.round(eventCount / (median / 1000));
  console.log(
    `${name.padEnd(48)} ${String(eventCount).padStart(8)} events  ${median.toFixed(1).padStart(8)} ms  ${perSecond.toLocaleString('en-US').padStart(12)} events/s  ${((median * 1000) / eventCount).toFixed(2)} µs/event`,
  );
}

console.log(
  `node ${process.version}, ${os.cpus()[0]?.model ?? 'cpu'} x${os.cpus().length}, ${new Date().toISOString().slice(0, 10)}`,
);
measure(
  '200,000 message.delta into one message',
  () => oneLongMessage(200_000),
  (store) => {
    const message = store.getSnapshot().messages[getAgentEntityKey('r1', 'm1')];
    if (message?.content.length !== 800_000) throw new Error('wrong content length');
  },
);
measure(
  'one run with 10,000 messages (start, 2 deltas, done)',
  () => manyEntities(10_000),
  (store) => {
    const state = store.getSnapshot();
    if (Object.keys(state.messages).length !== 10_000 || state.issues.length !== 0) throw new Error('wrong state');
  },
);
measure(
  'one run with 1,000 messages (start, 2 deltas, done)',
  () => manyEntities(1_000),
  (store) => {
    if (Object.keys(store.getSnapshot().messages).length !== 1_000) throw new Error('wrong state');
  },
);
