import { describe, expect, it } from 'vitest';
import { validateJsonSchema } from './validateJsonSchema';

const city = {
  type: 'object',
  properties: {
    city: { type: 'string', minLength: 2, maxLength: 20, pattern: '^[A-Z]' },
    days: { type: 'integer', minimum: 1, maximum: 7 },
    unit: { enum: ['C', 'F'] },
  },
  required: ['city'],
  additionalProperties: false,
};

describe('validateJsonSchema', () => {
  it('accepts a value that matches', () => {
    expect(validateJsonSchema(city, { city: 'Paris', days: 3, unit: 'C' })).toEqual([]);
    expect(validateJsonSchema(city, { city: 'Zürich' })).toEqual([]);
  });

  it('names each property that does not match, with its path', () => {
    expect(validateJsonSchema(city, { days: 0.5, unit: 'K', extra: true })).toEqual([
      { path: 'city', message: 'is required' },
      { path: 'days', message: 'expected integer, got number' },
      { path: 'unit', message: 'must be one of "C", "F"' },
      { path: 'extra', message: 'is not allowed' },
    ]);
  });

  it('checks string and number bounds, and patterns', () => {
    expect(validateJsonSchema(city, { city: 'p', days: 9 })).toEqual([
      { path: 'city', message: 'must be at least 2 characters long' },
      { path: 'city', message: 'must match the pattern "^[A-Z]"' },
      { path: 'days', message: 'must be <= 7' },
    ]);
    // Characters are code points: four emoji are four characters, not eight UTF-16 units.
    expect(validateJsonSchema({ type: 'string', maxLength: 4 }, '🌧🌧🌧🌧')).toEqual([]);
    expect(validateJsonSchema({ type: 'number', exclusiveMinimum: 0, multipleOf: 0.1 }, 0.3)).toEqual([]);
    expect(validateJsonSchema({ type: 'number', exclusiveMinimum: 0, multipleOf: 0.1 }, 0)).toEqual([
      { path: '', message: 'must be > 0' },
    ]);
    expect(validateJsonSchema({ type: 'number', multipleOf: 0.1 }, 0.35)).toEqual([
      { path: '', message: 'must be a multiple of 0.1' },
    ]);
  });

  it('says the value is of the wrong type, and nothing more about it', () => {
    expect(validateJsonSchema(city, 'Paris')).toEqual([{ path: '', message: 'expected object, got string' }]);
    expect(validateJsonSchema(city, null)).toEqual([{ path: '', message: 'expected object, got null' }]);
    expect(validateJsonSchema(city, [])).toEqual([{ path: '', message: 'expected object, got array' }]);
    expect(validateJsonSchema({ type: ['string', 'null'] }, null)).toEqual([]);
    expect(validateJsonSchema({ type: 'number' }, 3)).toEqual([]);
  });

  it('checks array items, tuples and lengths', () => {
    const schema = { type: 'array', items: { type: 'string' }, minItems: 1, maxItems: 2 };
    expect(validateJsonSchema(schema, ['a', 3, 'c'])).toEqual([
      { path: '', message: 'must have at most 2 items' },
      { path: '1', message: 'expected string, got integer' },
    ]);
    expect(validateJsonSchema(schema, [])).toEqual([{ path: '', message: 'must have at least 1 items' }]);
    const tuple = { type: 'array', prefixItems: [{ type: 'number' }, { type: 'string' }], items: false };
    expect(validateJsonSchema(tuple, [1, 'a'])).toEqual([]);
    expect(validateJsonSchema(tuple, [1, 'a', true])).toEqual([{ path: '2', message: 'no value is allowed here' }]);
  });

  it('checks additionalProperties given as a schema, and const', () => {
    const schema = { type: 'object', additionalProperties: { type: 'number' }, properties: { kind: { const: 'sum' } } };
    expect(validateJsonSchema(schema, { kind: 'sum', a: 1, b: 2 })).toEqual([]);
    expect(validateJsonSchema(schema, { kind: 'product', a: 'x' })).toEqual([
      { path: 'kind', message: 'must be "sum"' },
      { path: 'a', message: 'expected number, got string' },
    ]);
    expect(validateJsonSchema({ const: { a: [1, 2] } }, { a: [1, 2] })).toEqual([]);
    expect(validateJsonSchema({ const: { a: [1, 2] } }, { a: [2, 1] })).toEqual([
      { path: '', message: 'must be {"a":[1,2]}' },
    ]);
  });

  it('checks anyOf, oneOf and allOf', () => {
    const anyOf = { anyOf: [{ type: 'string' }, { type: 'integer', minimum: 0 }] };
    expect(validateJsonSchema(anyOf, 'x')).toEqual([]);
    expect(validateJsonSchema(anyOf, -1)).toEqual([
      { path: '', message: 'matches none of the allowed schemas (expected string, got integer; must be >= 0)' },
    ]);
    const oneOf = { oneOf: [{ type: 'number' }, { type: 'integer' }] };
    expect(validateJsonSchema(oneOf, 1.5)).toEqual([]);
    expect(validateJsonSchema(oneOf, 2)).toEqual([
      { path: '', message: 'matches 2 of the schemas; exactly one is allowed' },
    ]);
    const allOf = { allOf: [{ type: 'string' }, { minLength: 3 }] };
    expect(validateJsonSchema(allOf, 'ab')).toEqual([{ path: '', message: 'must be at least 3 characters long' }]);
  });

  it('follows local $refs, and stops a $ref that loops', () => {
    const schema = {
      type: 'object',
      properties: { from: { $ref: '#/$defs/place' }, to: { $ref: '#/definitions/place' } },
      $defs: { place: { type: 'string' } },
      definitions: { place: { type: 'string', minLength: 2 } },
    };
    expect(validateJsonSchema(schema, { from: 'Paris', to: 'Rome' })).toEqual([]);
    expect(validateJsonSchema(schema, { from: 1, to: 'R' })).toEqual([
      { path: 'from', message: 'expected string, got integer' },
      { path: 'to', message: 'must be at least 2 characters long' },
    ]);
    expect(validateJsonSchema({ $ref: '#/$defs/missing' }, 1)).toEqual([
      { path: '', message: 'the schema\'s $ref "#/$defs/missing" does not resolve' },
    ]);
    const loop = validateJsonSchema({ $defs: { a: { $ref: '#/$defs/a' } }, $ref: '#/$defs/a' }, 1);
    expect(loop).toEqual([{ path: '', message: 'the schema\'s $ref "#/$defs/a" loops' }]);
    // A recursive schema ends with the value it descends into.
    const tree = { type: 'object', properties: { children: { type: 'array', items: { $ref: '#' } } } };
    expect(validateJsonSchema(tree, { children: [{ children: [] }, { children: [{ children: 'x' }] }] })).toEqual([
      { path: 'children.1.children.0.children', message: 'expected array, got string' },
    ]);
  });

  it('reports a pattern that is not a regular expression, and leaves keywords it does not check alone', () => {
    expect(validateJsonSchema({ type: 'string', pattern: '(' }, 'a')).toEqual([
      { path: '', message: 'the schema\'s pattern "(" is not a valid regular expression' },
    ]);
    expect(validateJsonSchema({ type: 'string', format: 'email', not: { type: 'string' } }, 'not an email')).toEqual(
      [],
    );
  });
});
