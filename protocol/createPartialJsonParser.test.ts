import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createPartialJsonParser } from './createPartialJsonParser';

function previews(pieces: string[]): unknown[] {
  const parser = createPartialJsonParser();
  return pieces.map((piece) => {
    parser.feed(piece);
    return parser.value();
  });
}

describe('createPartialJsonParser', () => {
  it('previews an object as it streams', () => {
    expect(previews(['{"ci', 'ty":"Par', 'is","days":[1,', '2.5,tr', 'ue],"note":"a\\', 'nb\\u00e9"}'])).toEqual([
      {},
      { city: 'Par' },
      { city: 'Paris', days: [1] },
      { city: 'Paris', days: [1, 2.5] },
      { city: 'Paris', days: [1, 2.5, true], note: 'a' },
      { city: 'Paris', days: [1, 2.5, true], note: 'a\nbé' },
    ]);
  });

  it('reaches exactly JSON.parse for any JSON value split anywhere', () => {
    fc.assert(
      fc.property(fc.jsonValue(), fc.array(fc.nat(), { maxLength: 8 }), (value, cuts) => {
        const text = JSON.stringify(value);
        const points = [...new Set(cuts.map((cut) => cut % (text.length + 1)))].sort((a, b) => a - b);
        const parser = createPartialJsonParser();
        let previous = 0;
        for (const point of [...points, text.length]) {
          parser.feed(text.slice(previous, point));
          previous = point;
          parser.value();
        }
        parser.end();
        expect(parser.error).toBeUndefined();
        expect(parser.done).toBe(true);
        expect(parser.value()).toEqual(JSON.parse(text));
      }),
      { numRuns: 500 },
    );
  });

  it('never changes a preview it handed out', () => {
    const parser = createPartialJsonParser();
    parser.feed('{"a":[1');
    const first = parser.value();
    parser.feed(',2],"b":{"c":');
    expect(first).toEqual({ a: [1] });
    parser.feed('3}}');
    expect(parser.value()).toEqual({ a: [1, 2], b: { c: 3 } });
  });

  it('stops at invalid JSON and says where', () => {
    const parser = createPartialJsonParser();
    parser.feed('{"a":1,}');
    expect(parser.error).toBe('at 7: expected a key, got "}"');
    expect(parser.value()).toEqual({ a: 1 });
    const trailing = createPartialJsonParser();
    trailing.feed('[1] x');
    expect(trailing.error).toMatch(/after the value/);
    const unfinished = createPartialJsonParser();
    unfinished.feed('{"a":');
    unfinished.end();
    expect(unfinished.error).toMatch(/ended before the value/);
  });

  it('keeps a __proto__ key as data', () => {
    const parser = createPartialJsonParser();
    parser.feed('{"__proto__":{"polluted":true}}');
    expect(Object.hasOwn(parser.value() as object, '__proto__')).toBe(true);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
});
