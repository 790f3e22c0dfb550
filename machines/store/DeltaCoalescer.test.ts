import { describe, expect, it, vi } from 'vitest';
import type { AnyActorRef } from 'xstate';
import type { AgentEvent } from '../../protocol/eventSchemas';
import { runEvents } from '../../tests/support/events';
import { DeltaCoalescer } from './DeltaCoalescer';
import type { EntityHandle, RunHandle } from './handles';

/** An entity handle whose actor is a `send` spy (or none). */
function fakeHandle(id: string, withActor = true) {
  const send = vi.fn();
  const handle: EntityHandle = {
    kind: 'message',
    id,
    key: `r1:${id}`,
    actorId: `message:${id}`,
    run: {} as RunHandle,
    ref: withActor ? ({ send } as unknown as AnyActorRef) : undefined,
    pendingDelta: [],
    pendingEvent: undefined,
  };
  return { handle, send };
}

function deltas(messageId: string, ...texts: string[]): AgentEvent[] {
  const events = runEvents('r1');
  return texts.map((delta) => events.create('message.delta', { messageId, delta }));
}

describe('DeltaCoalescer', () => {
  it('hands one entity its pushed deltas as one event, the last one with the joined delta', () => {
    const record = vi.fn();
    const coalescer = new DeltaCoalescer(record);
    const { handle, send } = fakeHandle('m1');
    const [a, b, c] = deltas('m1', 'Hel', 'lo', '!') as [AgentEvent, AgentEvent, AgentEvent];
    coalescer.push(handle, a, 'Hel');
    coalescer.push(handle, b, 'lo');
    coalescer.push(handle, c, '!');
    expect(send).not.toHaveBeenCalled();
    coalescer.flushEntity(handle);
    expect(send.mock.calls).toEqual([[{ ...c, payload: { messageId: 'm1', delta: 'Hello!' } }]]);
    expect(record.mock.calls).toEqual([[handle]]);
    expect(handle.pendingDelta).toEqual([]);
    expect(handle.pendingEvent).toBeUndefined();
    // Already handed over: neither flush sends it again.
    coalescer.flushEntity(handle);
    coalescer.flush();
    expect(send).toHaveBeenCalledTimes(1);
    expect(record).toHaveBeenCalledTimes(1);
  });

  it('flushes every entity with pending deltas, once each', () => {
    const record = vi.fn();
    const coalescer = new DeltaCoalescer(record);
    const first = fakeHandle('m1');
    const second = fakeHandle('m2');
    const [a1, a2] = deltas('m1', 'a', 'b') as [AgentEvent, AgentEvent];
    const [b1] = deltas('m2', 'x') as [AgentEvent];
    coalescer.push(first.handle, a1, 'a');
    coalescer.push(second.handle, b1, 'x');
    coalescer.push(first.handle, a2, 'b');
    coalescer.flush();
    expect(first.send.mock.calls).toEqual([[{ ...a2, payload: { messageId: 'm1', delta: 'ab' } }]]);
    expect(second.send.mock.calls).toEqual([[b1]]);
    expect(record.mock.calls).toEqual([[first.handle], [second.handle]]);
    coalescer.flush();
    expect(record).toHaveBeenCalledTimes(2);
  });

  it('leaves a handle with no actor alone', () => {
    const record = vi.fn();
    const coalescer = new DeltaCoalescer(record);
    const { handle } = fakeHandle('m1', false);
    const [a] = deltas('m1', 'a') as [AgentEvent];
    coalescer.push(handle, a, 'a');
    coalescer.flushEntity(handle);
    coalescer.flush();
    expect(record).not.toHaveBeenCalled();
    expect(handle.pendingDelta).toEqual(['a']);
    expect(handle.pendingEvent).toBe(a);
  });

  it('drops pending deltas on clear', () => {
    const record = vi.fn();
    const coalescer = new DeltaCoalescer(record);
    const { handle, send } = fakeHandle('m1');
    const [a] = deltas('m1', 'a') as [AgentEvent];
    coalescer.push(handle, a, 'a');
    coalescer.clear();
    coalescer.flush();
    expect(send).not.toHaveBeenCalled();
    expect(record).not.toHaveBeenCalled();
    // The handle holds nothing stale: a later delta is queued and sent alone.
    expect([handle.pendingDelta, handle.pendingEvent]).toEqual([[], undefined]);
    const [b] = deltas('m1', 'b') as [AgentEvent];
    coalescer.push(handle, b, 'b');
    coalescer.flush();
    expect(send).toHaveBeenCalledTimes(1);
    expect(send.mock.calls[0]?.[0]).toMatchObject({ payload: { delta: 'b' } });
  });
});
