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

  it('behaves like a set of strings for factory-shaped ids in any order, with deletions', () => {
    const counterIds = fc.integer({ min: 0, max: 12 }).map((counter) => `p-${counter.toString(36)}`);
    // Ids near the counter shape that must not be mistaken for a counter.
    const lookalikes = fc.constantFrom(
      'p-',
      'p-00',
      'p-01',
      'p-A',
      'p-1-2',
      'q-3',
      'p-zzzzzzzzzzz',
      'p-0',
      'P-1',
      '-1',
    );
    fc.assert(
      fc.property(
        fc.array(
          fc.tuple(
            fc.constantFrom('add', 'add', 'add', 'delete', 'has'),
            fc.oneof({ weight: 6, arbitrary: counterIds }, { weight: 1, arbitrary: lookalikes }),
          ),
          { maxLength: 400 },
        ),
        (operations) => {
          const seen = new SeenEvents();
          const model = new Set<string>(['p-1']);
          expect(seen.tryAdd('p-1')).toBe(true);
          for (const [operation, id] of operations) {
            if (operation === 'add') {
              expect(seen.tryAdd(id)).toBe(!model.has(id));
              model.add(id);
            } else if (operation === 'delete') {
              seen.delete(id);
              model.delete(id);
            }
            expect(seen.has(id)).toBe(model.has(id));
          }
          for (let counter = 0; counter <= 12; counter += 1) {
            const id = `p-${counter.toString(36)}`;
            expect(seen.has(id)).toBe(model.has(id));
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it('remembers a late id after deletions lowered the highest counter below it', () => {
    const seen = new SeenEvents();
    for (const id of ['p-1', 'p-2', 'p-3', 'p-4']) seen.add(id);
    seen.delete('p-2');
    expect(seen.tryAdd('p-2')).toBe(true);
    seen.delete('p-4');
    seen.delete('p-3');
    expect(seen.has('p-2')).toBe(true);
    expect(seen.tryAdd('p-2')).toBe(false);
    expect(seen.tryAdd('p-3')).toBe(true);
  });

  it('takes the counter shape from the first id only', () => {
    const seen = new SeenEvents();
    expect(seen.tryAdd('first')).toBe(true);
    expect(seen.tryAdd('p-1')).toBe(true);
    expect(seen.tryAdd('p-2')).toBe(true);
    expect(seen.tryAdd('p-1')).toBe(false);
    expect(seen.has('p-3')).toBe(false);
  });

  it('keeps 200,000 distinct ids apart', () => {
    const seen = new SeenEvents();
    for (let index = 0; index < 200_000; index += 1) seen.add(`run-${index}`);
    let found = 0;
    for (let index = 0; index < 200_000; index += 1) if (seen.has(`run-${index}`)) found += 1;
    expect(found).toBe(200_000);
    expect(seen.has('run-200000')).toBe(false);
    expect(seen.has('run-0')).toBe(true);
    expect(seen.tryAdd('run-199999')).toBe(false);
  });

  it('keeps ids of a stream with gaps and late arrivals apart', () => {
    const seen = new SeenEvents();
    for (let counter = 1; counter <= 50_000; counter += 2) seen.add(`s-${counter.toString(36)}`);
    for (let counter = 50_000; counter >= 2; counter -= 2) expect(seen.tryAdd(`s-${counter.toString(36)}`)).toBe(true);
    for (let counter = 1; counter <= 50_000; counter += 1) expect(seen.tryAdd(`s-${counter.toString(36)}`)).toBe(false);
    expect(seen.has('s-0')).toBe(false);
  });
});
