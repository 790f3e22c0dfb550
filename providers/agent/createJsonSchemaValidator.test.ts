import { describe, expect, it } from 'vitest';
import { createJsonSchemaValidator } from './createJsonSchemaValidator';

const weather = {
  type: 'object',
  properties: {
    city: { type: 'string', minLength: 2, pattern: '^[A-Z]' },
    days: { type: 'integer', minimum: 1, maximum: 7 },
    stops: { type: 'array', items: { $ref: '#/$defs/stop' } },
  },
  required: ['city'],
  additionalProperties: false,
  $defs: { stop: { type: 'object', properties: { 'name/alias': { type: 'string' } } } },
};

describe('createJsonSchemaValidator', () => {
  it('finds no issue in a value that matches', () => {
    const validate = createJsonSchemaValidator(weather);
    expect(validate({ city: 'Paris', days: 3, stops: [{ 'name/alias': 'Lyon' }] })).toEqual([]);
  });

  it('lists every issue with its dotted path, leaving out the errors that only say a part had errors', () => {
    const validate = createJsonSchemaValidator(weather);
    expect(validate({ days: 0.5, stops: [{ 'name/alias': 3 }], extra: true })).toEqual([
      { path: '', message: 'Instance does not have required property "city"' },
      { path: 'days', message: 'Instance type "number" is invalid. Expected "integer"' },
      { path: 'days', message: '0.5 is less than 1' },
      // Through items and a $ref, to a key with a slash in it.
      { path: 'stops.0.name/alias', message: 'Instance type "number" is invalid. Expected "string"' },
      // additionalProperties: false says which property it refused; the false schema's own error is left out.
      { path: '', message: 'Property "extra" does not match additional properties schema' },
    ]);
  });

  it('says an anyOf or oneOf matched none of its options once, without listing each option as required', () => {
    const validate = createJsonSchemaValidator({
      type: 'object',
      properties: {
        when: { anyOf: [{ type: 'string' }, { type: 'integer', minimum: 0 }] },
        unit: { oneOf: [{ const: 'C' }, { const: 'F' }] },
      },
    });
    expect(validate({ when: 'today', unit: 'C' })).toEqual([]);
    expect(validate({ when: -1, unit: 'K' })).toEqual([
      { path: 'when', message: 'Instance does not match any subschemas' },
      { path: 'unit', message: 'Instance does not match exactly one subschema (0 matches)' },
    ]);
  });

  it("keeps the error of an if whose then failed beside the then's own, and checks format and not", () => {
    const validate = createJsonSchemaValidator({
      type: 'object',
      properties: { email: { type: 'string', format: 'email' }, name: { not: { const: 'root' } } },
      if: { required: ['email'] },
      // biome-ignore lint/suspicious/noThenProperty: JSON Schema's keyword, in a plain schema object
      then: { required: ['name'] },
    });
    expect(validate({ email: 'ada@example.com', name: 'ada' })).toEqual([]);
    expect(validate({ email: 'not an email' })).toEqual([
      { path: '', message: 'Instance does not match "then" schema' },
      { path: '', message: 'Instance does not have required property "name"' },
      { path: 'email', message: 'String does not match format "email"' },
    ]);
    expect(validate({ name: 'root' })).toEqual([{ path: 'name', message: 'Instance matched "not" schema' }]);
  });

  it('validates draft 2020-12 unless $schema names another draft', () => {
    // prefixItems is 2020-12's tuple; draft 7 writes it as an items array.
    const tuple = { type: 'array', prefixItems: [{ type: 'number' }], items: false };
    expect(createJsonSchemaValidator(tuple)([1])).toEqual([]);
    expect(createJsonSchemaValidator(tuple)([1, 2])).toEqual([{ path: '', message: 'Items did not match schema' }]);
    const draft7 = {
      $schema: 'http://json-schema.org/draft-07/schema#',
      type: 'array',
      items: [{ type: 'number' }],
      additionalItems: false,
    };
    expect(createJsonSchemaValidator(draft7)([1])).toEqual([]);
    expect(createJsonSchemaValidator(draft7)(['a'])).toEqual([
      { path: '0', message: 'Instance type "string" is invalid. Expected "number"' },
    ]);
  });

  it('turns a schema it cannot check into an issue rather than throwing, and leaves the schema untouched', () => {
    const missing = { type: 'object', properties: { a: { $ref: '#/$defs/missing' } } };
    expect(createJsonSchemaValidator(missing)({ a: 1 })).toEqual([
      { path: '', message: 'the tool\'s schema cannot be checked: Unresolved $ref "#/$defs/missing"' },
    ]);
    const pattern = Object.freeze({ type: 'string', pattern: '(' });
    expect(createJsonSchemaValidator(pattern)('a')).toMatchObject([
      { path: '', message: expect.stringMatching(/^the tool's schema cannot be checked: Invalid regular expression/) },
    ]);
    // The library marks what it reads; the frozen schema above would have made it throw.
    const schema = { type: 'object', properties: { a: { $ref: '#/$defs/a' } }, $defs: { a: { type: 'string' } } };
    createJsonSchemaValidator(schema);
    expect(Object.getOwnPropertyNames(schema)).toEqual(['type', 'properties', '$defs']);
    expect(Object.getOwnPropertyNames(schema.properties.a)).toEqual(['$ref']);
  });
});
