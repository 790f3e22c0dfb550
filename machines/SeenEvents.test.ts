import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { SeenEvents } from './SeenEvents';

describe('SeenEvents', () => {
  it('behaves like a set of strings through growth and deletions', () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.constantFrom('add', 'delete', 'has'), fc.string({ maxLength: 6 })), { maxLength: 3_000 }),
        (operations) => {
          const seen = new SeenEvents();
          const model = new Set<string>();
          for (const [operation, id] of operations) {
            if (operation === 'add') {
              seen.add(id);
              model.add(id);
            } else if (operation === 'delete') {
              seen.delete(id);
              model.delete(id);
            }
            expect(seen.has(id)).toBe(model.has(id));
          }
          for (const id of model) expect(seen.has(id)).toBe(true);
        },
      ),
      { numRuns: 100 },
    );
  });

  it('keeps 200,000 distinct ids apart', () => {
    const seen = new SeenEvents();
    for (let index = 0; index < 200_000; index += 1) seen.add(`run-${index}`);
    let found = 0;
    for (let index = 0; index < 200_000; index += 1) if (seen.has(`run-${index}`)) found += 1;
    expect(found).toBe(200_000);
    expect(seen.has('run-200000')).toBe(false);
  });
});
