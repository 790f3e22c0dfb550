import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createAgentStore } from '../machines/createAgentStore';
import { replayAgentEvents } from '../machines/replayAgentEvents';
import { AgentProtocolError } from '../protocol/errors';
import { agentEventSchema } from '../protocol/eventSchemas';
import { checkAgentEvent, checkStreamedDelta, isAgentEvent, parseAgentEvent } from '../protocol/parseAgentEvent';
import { runEvents } from './support/events';
import { buildScenario, corrupt, corruptionArbitrary } from './support/scenarios';

const RUNS = 200;
const choices = fc.array(fc.nat({ max: 10_000 }), { maxLength: 60 });
const corruptions = fc.array(corruptionArbitrary, { maxLength: 6 });

class Point {
  constructor(readonly x: number) {}
}

/** Values that are not plain JSON, made fresh for each use. */
const notPlain = fc.constantFrom(
  () => new Date(0),
  () => new Map([['a', 1]]),
  () => new Set([1]),
  () => new Point(1),
  () => [Number.NaN],
  () => [1, undefined],
  () => 10n,
  () => () => 1,
  () => JSON.parse('{"__proto__":{"polluted":true}}'),
  () => ({ [Symbol('key')]: 1 }),
  () => {
    const cycle: Record<string, unknown> = {};
    cycle.self = cycle;
    return cycle;
  },
  () => {
    let deep: unknown = 'bottom';
    for (let level = 0; level < 150; level += 1) deep = { deep };
    return deep;
  },
);

const plainLeaf = fc.oneof(fc.string({ maxLength: 3 }), fc.integer(), fc.boolean(), fc.constant(null));
const nullPrototype = (entries: Record<string, unknown>) => Object.assign(Object.create(null), entries);

/** Meta-shaped values: plain ones, non-plain ones, and plain containers with something non-plain inside. */
const metaLike: fc.Arbitrary<unknown> = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', maxDepth: 3 },
    plainLeaf,
    notPlain.map((make) => make()),
    fc.array(tie('value'), { maxLength: 2 }),
    fc.dictionary(fc.string({ maxLength: 3 }), tie('value'), { maxKeys: 2 }),
    fc.dictionary(fc.string({ maxLength: 3 }), tie('value'), { maxKeys: 2 }).map(nullPrototype),
  ),
})).value;

describe('properties', () => {
  it('the store check accepts and rejects exactly what the schema does', () => {
    const base = runEvents('r1').create('message.delta', { messageId: 'm1', delta: 'x' }) as unknown as Record<
      string,
      unknown
    >;
    const anyValue = fc.oneof(
      fc.string(),
      fc.constant(''),
      fc.integer(),
      fc.double(),
      fc.constant(undefined),
      fc.constant(null),
      fc.boolean(),
      fc.array(fc.string(), { maxLength: 2 }),
      fc.dictionary(fc.string(), fc.string(), { maxKeys: 2 }),
    );
    const types = fc.constantFrom(
      'message.delta',
      'reasoning.delta',
      'tool.arguments_delta',
      'message.started',
      'nope',
    );
    const fields = fc.constantFrom(
      'protocolVersion',
      'eventId',
      'sessionId',
      'runId',
      'sequence',
      'timestamp',
      'parentId',
      'meta',
      'payload',
    );
    const payloadFields = fc.constantFrom('messageId', 'reasoningId', 'toolCallId', 'delta');
    fc.assert(
      fc.property(
        types,
        fc.array(fc.tuple(fields, anyValue), { maxLength: 3 }),
        fc.array(fc.tuple(payloadFields, anyValue), { maxLength: 3 }),
        fc.option(metaLike, { nil: undefined }),
        (type, changes, payloadChanges, meta) => {
          const payload: Record<string, unknown> = { messageId: 'm1', reasoningId: 'r1', toolCallId: 't1', delta: 'x' };
          for (const [field, value] of payloadChanges) payload[field] = value;
          const event: Record<string, unknown> = { ...base, type, payload };
          if (meta !== undefined) event.meta = meta;
          for (const [field, value] of changes) event[field] = value;
          const accepted = checkAgentEvent(event) === undefined;
          expect(accepted).toBe(isAgentEvent(event));
          expect(accepted).toBe(parseAgentEvent(event).success);
          // The hot path for deltas never accepts what the schema refuses.
          if (checkStreamedDelta(event) !== undefined) expect(agentEventSchema.safeParse(event).success).toBe(true);
          expect(checkStreamedDelta(event) !== undefined).toBe(accepted && type.endsWith('delta'));
        },
      ),
      { numRuns: 2_000 },
    );
  });

  it('the store check refuses a meta that is not plain JSON, which would leave AgentState plain JSON no more', () => {
    const base = runEvents('r1').create('message.delta', { messageId: 'm1', delta: 'x' });
    fc.assert(
      fc.property(metaLike, fc.constantFrom('message.delta', 'message.started'), (meta, type) => {
        const payload = type === 'message.delta' ? base.payload : { messageId: 'm1', role: 'assistant' };
        const event = { ...base, type, payload, meta };
        const accepted = checkAgentEvent(event) === undefined;
        expect(accepted).toBe(isAgentEvent(event));
        if (accepted) {
          expect(JSON.parse(JSON.stringify(meta))).toEqual(meta);
        }
      }),
      { numRuns: 1_000 },
    );
  });

  it('record mode never throws, and the state is plain JSON', () => {
    fc.assert(
      fc.property(choices, fc.boolean(), corruptions, (picked, end, broken) => {
        const state = replayAgentEvents(corrupt(buildScenario(picked, end), broken));
        expect(JSON.parse(JSON.stringify(state))).toEqual(state);
      }),
      { numRuns: RUNS },
    );
  });

  it('dispatching a sequence twice equals dispatching it once', () => {
    fc.assert(
      fc.property(choices, fc.boolean(), corruptions, (picked, end, broken) => {
        const events = corrupt(buildScenario(picked, end), broken);
        expect(replayAgentEvents([...events, ...events])).toEqual(replayAgentEvents(events));
      }),
      { numRuns: RUNS },
    );
  });

  it('a failed strict batch leaves the state and the listeners untouched', () => {
    fc.assert(
      fc.property(choices, corruptions, fc.nat(), (picked, broken, split) => {
        const events = corrupt(buildScenario(picked, true), broken);
        const cut = split % (events.length + 1);
        const store = createAgentStore({ protocolMode: 'strict' });
        try {
          store.batch(events.slice(0, cut));
        } catch {
          store.reset();
        }
        const before = store.getSnapshot();
        const beforeJson = JSON.stringify(before);
        let notified = 0;
        store.subscribe(() => notified++);
        try {
          store.batch(events.slice(cut));
        } catch (error) {
          expect(AgentProtocolError.isInstance(error)).toBe(true);
          expect(notified).toBe(0);
          expect(JSON.stringify(store.getSnapshot())).toBe(beforeJson);
          return;
        }
        // A successful batch notifies once when it changed something, never otherwise.
        expect(notified).toBe(store.getSnapshot() === before ? 0 : 1);
      }),
      { numRuns: RUNS },
    );
  });

  it('reset from a saved state, then the rest of the stream, equals replaying it all', () => {
    fc.assert(
      fc.property(
        choices,
        fc.nat(),
        corruptions,
        corruptions,
        fc.array(fc.nat(), { maxLength: 5 }),
        (picked, split, early, late, redeliver) => {
          const scenario = buildScenario(picked, true);
          const cut = split % (scenario.length + 1);
          const first = corrupt(scenario.slice(0, cut), early);
          const saved = replayAgentEvents(first);
          // A resumed stream may deliver again what the checkpoint already applied.
          const refused = new Set(saved.issues.map((issue) => (issue.event as { eventId?: string } | null)?.eventId));
          const applied = first.filter((event) => isAgentEvent(event) && !refused.has(event.eventId));
          const again = applied.length === 0 ? [] : redeliver.map((index) => applied[index % applied.length]);
          const rest = [...again, ...corrupt(scenario.slice(cut), late)];

          const restored = createAgentStore();
          restored.reset(JSON.parse(JSON.stringify(saved)));
          restored.batch(rest);
          expect(restored.getSnapshot()).toEqual(replayAgentEvents([...first, ...rest]));
        },
      ),
      { numRuns: RUNS },
    );
  });
});
