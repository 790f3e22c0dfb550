import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import * as z from 'zod/mini';
import { agentStateSchema } from '../machines/agentStateSchema';
import { replayAgentEvents } from '../machines/replayAgentEvents';
import { buildScenario } from '../tests/support/scenarios';
import { agentMessageContentSchema } from './contentSchemas';
import { createQuickAccept } from './createQuickAccept';

/** One schema of every kind the quick check knows, and some it hands back to zod. */
const mixed = z.object({
  id: z.string().check(z.minLength(1)),
  count: z.number().check(z.int(), z.gte(-1)),
  ratio: z.optional(z.number()),
  flag: z.boolean(),
  status: z.enum(['open', 'done']),
  kind: z.literal('x'),
  anything: z.unknown(),
  maybe: z.optional(z.unknown()),
  tags: z.array(z.string()),
  byKey: z.record(z.string(), z.number()),
  either: z.union([z.string(), z.number()]),
  content: agentMessageContentSchema,
  // Kinds and checks it leaves to zod:
  short: z.optional(z.string().check(z.maxLength(3))),
  nullable: z.optional(z.nullable(z.string())),
  strict: z.optional(z.strictObject({ a: z.string() })),
});

const valid = {
  id: 'a',
  count: 0,
  flag: true,
  status: 'open',
  kind: 'x',
  anything: null,
  tags: ['t'],
  byKey: { one: 1 },
  either: 2,
  content: [
    { type: 'text', text: 'hi' },
    { type: 'acme.chart', data: { points: [] } },
  ],
};

/** Values that sit on the edges of what the schemas accept. */
const edgeValue = fc.oneof(
  fc.constantFrom(undefined, null, '', 'x', 'open', 0, -1, -2, 1.5, Number.NaN, Number.POSITIVE_INFINITY, 2 ** 53),
  fc.constantFrom(true, false, [], {}, ['t'], [1], { a: 'b' }, { one: 'x' }, Object.create(null)),
  fc.constantFrom({ type: 'text', text: 1 }, [{ type: 'nope' }], [{ type: 'a.b', data: 1 }], [{ type: 'a.', data: 1 }]),
  fc.jsonValue({ maxDepth: 2 }),
);

/** Every path of containers in a value, for mutations. */
function paths(value: unknown, prefix: Array<string | number> = [], out: Array<Array<string | number>> = []) {
  if (typeof value !== 'object' || value === null) return out;
  for (const key of Object.keys(value)) {
    const path = [...prefix, Array.isArray(value) ? Number(key) : key];
    out.push(path);
    paths((value as Record<string, unknown>)[key], path, out);
  }
  return out;
}

function mutate(root: unknown, path: Array<string | number>, replacement: unknown, remove: boolean): unknown {
  const copy = structuredClone(root);
  let container = copy as Record<string | number, unknown>;
  for (const key of path.slice(0, -1)) container = container[key] as Record<string | number, unknown>;
  const last = path[path.length - 1] as string | number;
  if (remove && !Array.isArray(container)) delete container[last];
  else container[last] = replacement;
  return copy;
}

describe('createQuickAccept', () => {
  it('accepts only what the schema accepts, and everything it accepts in plain JSON', () => {
    const quick = createQuickAccept(mixed);
    expect(quick(valid)).toBe(true);
    const candidates = paths(valid);
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.nat(), edgeValue, fc.boolean()), { minLength: 1, maxLength: 3 }), (changes) => {
        let value: unknown = valid;
        for (const [index, replacement, remove] of changes) {
          const path = paths(value)[index % Math.max(1, paths(value).length)] ?? candidates[0];
          if (path !== undefined) value = mutate(value, path, replacement, remove);
        }
        if (JSON.stringify(value).includes('"__proto__"')) {
          if (quick(value)) expect(mixed.safeParse(value).success).toBe(true);
        } else {
          expect(quick(value)).toBe(mixed.safeParse(value).success);
        }
      }),
      { numRuns: 2_000 },
    );
  });

  it('never accepts what the schema refuses, for any value at all', () => {
    const schemas = [mixed, agentMessageContentSchema, z.record(z.string(), z.unknown()), z.array(z.number())];
    const quicks = schemas.map((schema) => createQuickAccept(schema));
    fc.assert(
      fc.property(fc.anything({ withNullPrototype: true, withObjectString: true }), (value) => {
        for (const [index, quick] of quicks.entries()) {
          if (quick(value)) expect((schemas[index] as z.ZodMiniType).safeParse(value).success).toBe(true);
        }
      }),
      { numRuns: 1_000 },
    );
  });

  it('leaves a record with an own constructor or a symbol key to zod', () => {
    const quick = createQuickAccept(z.record(z.string(), z.unknown()));
    const schema = z.record(z.string(), z.unknown());
    for (const value of [{ constructor: { a: 1 } }, { constructor: 1 }, { [Symbol('s')]: 1 }]) {
      expect(quick(value)).toBe(schema.safeParse(value).success);
    }
  });

  it('agrees with the AgentState schema on replayed states and on their mutations', () => {
    const quick = createQuickAccept(agentStateSchema);
    fc.assert(
      fc.property(
        fc.array(fc.nat({ max: 10_000 }), { maxLength: 40 }),
        fc.nat(),
        edgeValue,
        fc.boolean(),
        (choices, index, replacement, remove) => {
          const state = JSON.parse(JSON.stringify(replayAgentEvents(buildScenario(choices, false))));
          expect(quick(state)).toBe(true);
          const candidates = paths(state);
          const path = candidates[index % candidates.length];
          if (path === undefined) return;
          const mutated = mutate(state, path, replacement, remove);
          const accepted = agentStateSchema.safeParse(mutated).success;
          // zod skips a record's own "__proto__" entry (the scenarios have a run of that
          // id); the quick check, like parseAgentState, still checks it.
          if (path.includes('__proto__')) {
            if (quick(mutated)) expect(accepted).toBe(true);
          } else {
            expect(quick(mutated)).toBe(accepted);
          }
        },
      ),
      { numRuns: 300 },
    );
  });
});
