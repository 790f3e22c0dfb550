import { createInspector } from '@statelyai/inspect';
import { describe, expect, it } from 'vitest';
import type { AnyActorRef, InspectionEvent } from 'xstate';
import { createXChatRuntime } from '../runtime/createXChatRuntime';
import { runEvents } from '../tests/support/events';
import { createRemoteRuntime } from '../tests/support/remoteRuntime';
import { until } from '../tests/support/until';
import { createAgentStore } from './createAgentStore';
import { sanitizeInspection, summarizeInspectedValue } from './sanitizeInspection';

type StatelyEvent = Parameters<Parameters<typeof createInspector>[0]['send']>[0];

/** The Stately inspector's own event pipeline, with an adapter that keeps what it would send. */
function capturingInspector() {
  const sent: StatelyEvent[] = [];
  const inspector = createInspector({ send: (event) => sent.push(event) });
  return { sent, inspect: inspector.inspect };
}

describe('summarizeInspectedValue', () => {
  it('keeps statuses, ids, numbers and short strings, and gives sizes for the rest', () => {
    const long = 'x'.repeat(5_000);
    expect(
      summarizeInspectedValue({
        entity: { id: 'm1', status: 'streaming', content: long, parts: [1, 2], done: false, missing: null },
        many: Object.fromEntries(Array.from({ length: 30 }, (_, index) => [`k${index}`, index])),
        list: Array.from({ length: 20 }, (_, index) => index),
        deep: { a: { b: { c: { d: 1 } } } },
        call: () => undefined,
      }),
    ).toEqual({
      entity: { id: 'm1', status: 'streaming', content: { length: 5_000 }, parts: [1, 2], done: false, missing: null },
      many: { keys: 30 },
      list: { items: 20 },
      deep: { a: { b: { keys: 1 } } },
      call: undefined,
    });
  });
});

describe('sanitizeInspection', () => {
  it("shows the Stately inspector one tree per conversation, xChat > session > run > entity, with each entity's final state", async () => {
    const { sent, inspect } = capturingInspector();
    const given = { count: 0 };
    const counting = (event: InspectionEvent) => {
      if (['@xstate.actor', '@xstate.event', '@xstate.snapshot'].includes(event.type)) given.count += 1;
      inspect.next?.(event);
    };
    const remote = createRemoteRuntime();
    const chat = createXChatRuntime({
      provider: remote.provider,
      sessionId: 'session-1',
      inspect: sanitizeInspection(counting),
    });
    const started = remote.nextRun();
    const result = chat.request({ prompt: 'Go' });
    const run = await started;
    const answer = 'token '.repeat(2_000);
    run.push((events) => [
      events.emit('message.started', { messageId: 'm1', role: 'assistant' }),
      events.emit('message.delta', { messageId: 'm1', delta: answer }),
      events.emit('message.completed', { messageId: 'm1' }),
      events.emit('run.completed', {}),
    ]);
    run.end();
    await result;
    // The Stately inspector converts what it is given when idle (in Node, in a later task),
    // each actor, event and snapshot event into one of its own.
    await until(() => sent.length === given.count, 'the inspector to convert what it was given');

    const actors = sent.filter((event) => event.type === '@xstate.actor');
    const byId = new Map(actors.map((event) => [event.sessionId, event]));
    const path = (name: string) => {
      const names: string[] = [];
      let event = actors.find((candidate) => candidate.name === name);
      while (event !== undefined) {
        names.unshift(event.name);
        event = event.parentId === undefined ? undefined : byId.get(event.parentId);
      }
      return names;
    };
    expect(path('message:m1')).toEqual(['xChat', 'session', `run:${run.runId}`, 'message:m1']);
    expect(path('connection')).toEqual(['xChat', 'connection']);
    // Every actor of the conversation is in the one tree.
    const rootId = byId.get(actors[0]?.sessionId as string)?.rootId;
    for (const actor of actors) expect(actor.rootId).toBe(rootId);

    // The message's last snapshot is its final state, its content a size, not the text.
    const messageSessionId = actors.find((event) => event.name === 'message:m1')?.sessionId;
    const lastOfMessage = sent
      .filter((event) => event.type === '@xstate.snapshot' && event.sessionId === messageSessionId)
      .at(-1);
    expect(lastOfMessage?.type === '@xstate.snapshot' && lastOfMessage.snapshot).toMatchObject({
      status: 'done',
      value: 'completed',
      context: { entity: { id: 'm1', status: 'completed', content: { length: answer.length } } },
    });
    // Nothing sent carries the answer: every event stays small (but the machines' definitions).
    for (const event of sent) expect(JSON.stringify({ ...event, definition: undefined }).length).toBeLessThan(2_000);
    expect(JSON.stringify(sent)).not.toContain('token token');
  });

  it('takes an observer as XState does, and a store passes one through as it is', () => {
    const seen: InspectionEvent[] = [];
    const store = createAgentStore({ inspect: sanitizeInspection({ next: (event) => seen.push(event) }) });
    const events = runEvents('r1');
    store.batch([
      events.create('run.started', {}),
      events.create('message.started', { messageId: 'm1', role: 'assistant', content: 'y'.repeat(500) }),
    ]);
    const snapshots = seen.filter((event) => event.type === '@xstate.snapshot');
    const message = snapshots.find((event) => (event.actorRef as AnyActorRef).id === 'message:m1');
    expect(message?.type === '@xstate.snapshot' && message.snapshot).toMatchObject({
      status: 'active',
      context: { entity: { content: { length: 500 } } },
    });
    const direct: InspectionEvent[] = [];
    createAgentStore({ inspect: { next: (event) => direct.push(event) } }).batch([events.create('run.started', {})]);
    expect(
      direct.some((event) => event.type === '@xstate.actor' && (event.actorRef as AnyActorRef).id === 'session'),
    ).toBe(true);
  });
});
