import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { checkPlainJson, DEFAULT_MAX_JSON_DEPTH, measureJsonSize } from './plainJson';

function nested(depth: number): Record<string, unknown> {
  let value: Record<string, unknown> = {};
  for (let level = 1; level < depth; level += 1) value = { a: value };
  return value;
}

class Point {
  constructor(readonly x: number) {}
}

describe('checkPlainJson', () => {
  it('accepts what JSON.parse makes, and null-prototype objects; a "__proto__" key only when allowed', () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 6 }), (value) => {
        // fast-check's JSON values include -0, which JSON.stringify writes as 0; that is not the point here.
        const text = JSON.stringify(value);
        const parsed = JSON.parse(text);
        expect(checkPlainJson(parsed, { allowProtoKeys: true })).toBeUndefined();
        // A key is written `"__proto__":`; inside a string value the quotes would be escaped.
        const protoKey = text.includes('"__proto__":');
        expect(checkPlainJson(parsed)?.reason).toBe(
          protoKey ? 'is a "__proto__" key, which is not allowed' : undefined,
        );
      }),
    );
    const bare = Object.assign(Object.create(null), { a: [1, 'two', null, { b: true }] });
    expect(checkPlainJson(bare)).toBeUndefined();
  });

  it.each([
    ['a Date', { at: new Date(0) }, 'at', 'is a Date, not a plain object'],
    ['a Map', { list: [1, new Map()] }, 'list.1', 'is a Map, not a plain object'],
    ['a Set', { s: new Set() }, 's', 'is a Set, not a plain object'],
    ['a class instance', { p: new Point(1) }, 'p', 'is a Point, not a plain object'],
    ['a bigint', { n: 1n }, 'n', 'is a bigint, which JSON cannot hold'],
    ['NaN', { n: [Number.NaN] }, 'n.0', 'is NaN, which JSON cannot hold'],
    ['Infinity', { n: Number.POSITIVE_INFINITY }, 'n', 'is Infinity, which JSON cannot hold'],
    ['a function', { f: () => 1 }, 'f', 'is a function, which JSON cannot hold'],
    ['a symbol', { s: Symbol('s') }, 's', 'is a symbol, which JSON cannot hold'],
    ['undefined in an array', { a: [1, undefined] }, 'a.1', 'is undefined, which JSON cannot hold'],
    // biome-ignore lint/suspicious/noSparseArray: the hole is what is tested
    ['a hole in an array', { a: [1, , 3] }, 'a.1', 'is undefined, which JSON cannot hold'],
    ['an undefined field', { a: { b: undefined } }, 'a.b', 'is undefined, which JSON cannot hold'],
    ['a symbol key', { a: { [Symbol('k')]: 1 } }, 'a', 'has symbol keys, which JSON cannot hold'],
    [
      'a __proto__ key',
      JSON.parse('{"a":{"__proto__":{"x":1}}}'),
      'a.__proto__',
      'is a "__proto__" key, which is not allowed',
    ],
    ['an array subclass', { a: new (class List extends Array {})() }, 'a', 'is a List, not an array'],
  ])('refuses %s and says where', (_name, value, path, reason) => {
    expect(checkPlainJson(value)).toEqual({ path, reason });
  });

  it('refuses values that are not JSON at the top', () => {
    expect(checkPlainJson(undefined)).toEqual({ path: '', reason: 'is undefined, which JSON cannot hold' });
    expect(checkPlainJson(new Date(0))).toEqual({ path: '', reason: 'is a Date, not a plain object' });
    expect(checkPlainJson('text')).toBeUndefined();
  });

  it('refuses a cycle, and says it is one', () => {
    const value: Record<string, unknown> = { a: { b: {} } };
    (value.a as { b: Record<string, unknown> }).b.back = value;
    expect(checkPlainJson(value)).toEqual({
      path: 'a.b.back',
      reason: 'contains itself (a cycle), which JSON cannot hold',
    });
    const list: unknown[] = [1];
    list.push([list]);
    expect(checkPlainJson(list)).toEqual({ path: '1.0', reason: 'contains itself (a cycle), which JSON cannot hold' });
  });

  it('allows the same value twice where it is not its own ancestor', () => {
    const shared = { x: 1 };
    expect(checkPlainJson({ a: shared, b: [shared, shared] })).toBeUndefined();
  });

  it('limits nesting without recursion, so a 100,000-deep value is refused, not a stack overflow', () => {
    expect(DEFAULT_MAX_JSON_DEPTH).toBe(100);
    expect(checkPlainJson(nested(100))).toBeUndefined();
    const failure = checkPlainJson(nested(101));
    expect(failure).toEqual({ path: Array(100).fill('a').join('.'), reason: 'nested deeper than 100 levels' });
    expect(checkPlainJson(nested(100_000))?.reason).toBe('nested deeper than 100 levels');
    expect(checkPlainJson([[[1]]], { maxDepth: 2 })).toEqual({ path: '0.0', reason: 'nested deeper than 2 levels' });
    expect(checkPlainJson([[1]], { maxDepth: 2 })).toBeUndefined();
  });

  it('reports a value that throws when read', () => {
    const hostile = new Proxy(
      {},
      {
        getPrototypeOf() {
          throw new Error('no');
        },
      },
    );
    expect(checkPlainJson({ a: hostile })).toEqual({ path: '', reason: 'could not be read (no)' });
  });
});

describe('measureJsonSize', () => {
  it('is the length JSON.stringify writes, for strings without escapes', () => {
    const text = fc.string({ unit: fc.constantFrom('a', 'b', ' ', 'é') });
    const json = fc.letrec((tie) => ({
      value: fc.oneof(
        { depthSize: 'small' },
        text,
        fc.integer(),
        fc.double({ noNaN: true, noDefaultInfinity: true }).filter((n) => !Object.is(n, -0)),
        fc.boolean(),
        fc.constant(null),
        fc.array(tie('value'), { maxLength: 4 }),
        fc.dictionary(text, tie('value'), { maxKeys: 4 }),
      ),
    })).value;
    fc.assert(
      fc.property(json, (value) => {
        expect(measureJsonSize(value, Number.POSITIVE_INFINITY)).toBe(JSON.stringify(value).length);
      }),
    );
  });

  it('stops once past the limit, even on a cycle', () => {
    const cyclic: unknown[] = ['x'.repeat(100)];
    cyclic.push(cyclic);
    const size = measureJsonSize(cyclic, 1_000);
    expect(size).toBeGreaterThan(1_000);
    expect(size).toBeLessThan(1_200);
  });

  it('remembers the size of unchanged containers, and never of the ones a patch is still writing', () => {
    const big = { text: 'x'.repeat(1_000) };
    expect(measureJsonSize({ a: big }, Number.POSITIVE_INFINITY)).toBe(1_017);
    const mutable = new WeakSet<object>([big]);
    big.text = 'y';
    expect(measureJsonSize({ a: big }, Number.POSITIVE_INFINITY, mutable)).toBe(18);
  });
});
