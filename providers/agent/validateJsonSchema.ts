/** A JSON Schema, as a tool's `inputSchema` gives it: a plain JSON object. */
export type AgentJsonSchema = { readonly [keyword: string]: unknown };

/** Where a value does not match its schema: a dotted path (`items.0.city`, empty for the value itself) and why. */
export interface JsonSchemaIssue {
  path: string;
  message: string;
}

/**
 * The keywords `validateJsonSchema` checks. Any other keyword (`format`, `if`/`then`/`else`,
 * `not`, `patternProperties`, `dependentRequired`, ...) is not checked: a value that only
 * breaks one of those passes.
 */
export const CHECKED_JSON_SCHEMA_KEYWORDS = [
  'type',
  'enum',
  'const',
  'properties',
  'required',
  'additionalProperties',
  'items',
  'prefixItems',
  'minItems',
  'maxItems',
  'minLength',
  'maxLength',
  'pattern',
  'minimum',
  'maximum',
  'exclusiveMinimum',
  'exclusiveMaximum',
  'multipleOf',
  'anyOf',
  'oneOf',
  'allOf',
  '$ref',
] as const;

/** `$ref` hops allowed without descending into the value: a schema that refers to itself in a loop stops here. */
const MAX_REF_HOPS = 32;

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

function typeOf(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  if (typeof value === 'number') return Number.isInteger(value) ? 'integer' : 'number';
  return typeof value;
}

function matchesType(value: unknown, type: string): boolean {
  const actual = typeOf(value);
  return actual === type || (type === 'number' && actual === 'integer');
}

function jsonEqual(left: unknown, right: unknown): boolean {
  if (left === right) return true;
  if (Array.isArray(left) && Array.isArray(right)) {
    return left.length === right.length && left.every((item, index) => jsonEqual(item, right[index]));
  }
  if (!isObject(left) || !isObject(right)) return false;
  const keys = Object.keys(left);
  return (
    keys.length === Object.keys(right).length &&
    keys.every((key) => Object.hasOwn(right, key) && jsonEqual(left[key], right[key]))
  );
}

const describe = (value: unknown): string => JSON.stringify(value) ?? String(value);
const join = (path: string, key: string | number): string => (path === '' ? String(key) : `${path}.${key}`);

/** Follows a local `$ref` (`#`, `#/$defs/city`, `#/definitions/city`) from the root schema. */
function resolveRef(root: AgentJsonSchema, ref: string): unknown {
  if (ref !== '#' && !ref.startsWith('#/')) return undefined;
  let target: unknown = root;
  for (const raw of ref === '#' ? [] : ref.slice(2).split('/')) {
    const key = decodeURIComponent(raw).replaceAll('~1', '/').replaceAll('~0', '~');
    if (!isObject(target) || !Object.hasOwn(target, key)) return undefined;
    target = target[key];
  }
  return target;
}

class Validator {
  constructor(private readonly root: AgentJsonSchema) {}

  check(schema: unknown, value: unknown, path: string, issues: JsonSchemaIssue[], hops = 0): void {
    if (schema === true || schema === undefined) return;
    if (schema === false) {
      issues.push({ path, message: 'no value is allowed here' });
      return;
    }
    if (!isObject(schema)) return;
    if (typeof schema.$ref === 'string') {
      const target = resolveRef(this.root, schema.$ref);
      if (target === undefined) issues.push({ path, message: `the schema's $ref "${schema.$ref}" does not resolve` });
      else if (hops >= MAX_REF_HOPS) issues.push({ path, message: `the schema's $ref "${schema.$ref}" loops` });
      else this.check(target, value, path, issues, hops + 1);
    }
    const before = issues.length;
    this.checkType(schema, value, path, issues);
    // A value of the wrong type has nothing more worth saying about it.
    if (issues.length > before) return;
    if (Array.isArray(schema.enum) && !schema.enum.some((allowed) => jsonEqual(allowed, value))) {
      issues.push({ path, message: `must be one of ${schema.enum.map(describe).join(', ')}` });
    }
    if ('const' in schema && !jsonEqual(schema.const, value)) {
      issues.push({ path, message: `must be ${describe(schema.const)}` });
    }
    if (typeof value === 'string') this.checkString(schema, value, path, issues);
    else if (typeof value === 'number') this.checkNumber(schema, value, path, issues);
    else if (Array.isArray(value)) this.checkArray(schema, value, path, issues);
    else if (isObject(value)) this.checkObject(schema, value, path, issues);
    this.checkCombinators(schema, value, path, issues, hops);
  }

  private checkType(schema: Record<string, unknown>, value: unknown, path: string, issues: JsonSchemaIssue[]): void {
    const { type } = schema;
    const types =
      typeof type === 'string' ? [type] : Array.isArray(type) ? type.filter((t) => typeof t === 'string') : [];
    if (types.length === 0 || types.some((t) => matchesType(value, t))) return;
    issues.push({ path, message: `expected ${types.join(' or ')}, got ${typeOf(value)}` });
  }

  private checkString(schema: Record<string, unknown>, value: string, path: string, issues: JsonSchemaIssue[]): void {
    // JSON Schema counts characters (code points), not UTF-16 units.
    const length = [...value].length;
    const { minLength, maxLength, pattern } = schema;
    if (typeof minLength === 'number' && length < minLength) {
      issues.push({ path, message: `must be at least ${minLength} characters long` });
    }
    if (typeof maxLength === 'number' && length > maxLength) {
      issues.push({ path, message: `must be at most ${maxLength} characters long` });
    }
    if (typeof pattern === 'string') {
      let regex: RegExp;
      try {
        regex = new RegExp(pattern, 'u');
      } catch {
        issues.push({ path, message: `the schema's pattern ${describe(pattern)} is not a valid regular expression` });
        return;
      }
      if (!regex.test(value)) issues.push({ path, message: `must match the pattern ${describe(pattern)}` });
    }
  }

  private checkNumber(schema: Record<string, unknown>, value: number, path: string, issues: JsonSchemaIssue[]): void {
    const { minimum, maximum, exclusiveMinimum, exclusiveMaximum, multipleOf } = schema;
    if (typeof minimum === 'number' && value < minimum) issues.push({ path, message: `must be >= ${minimum}` });
    if (typeof maximum === 'number' && value > maximum) issues.push({ path, message: `must be <= ${maximum}` });
    if (typeof exclusiveMinimum === 'number' && value <= exclusiveMinimum) {
      issues.push({ path, message: `must be > ${exclusiveMinimum}` });
    }
    if (typeof exclusiveMaximum === 'number' && value >= exclusiveMaximum) {
      issues.push({ path, message: `must be < ${exclusiveMaximum}` });
    }
    if (typeof multipleOf === 'number' && multipleOf > 0) {
      const quotient = value / multipleOf;
      // Within floating-point error of a whole number: 0.3 is a multiple of 0.1.
      if (Math.abs(quotient - Math.round(quotient)) > 1e-9) {
        issues.push({ path, message: `must be a multiple of ${multipleOf}` });
      }
    }
  }

  private checkArray(schema: Record<string, unknown>, value: unknown[], path: string, issues: JsonSchemaIssue[]): void {
    const { minItems, maxItems, items, prefixItems } = schema;
    if (typeof minItems === 'number' && value.length < minItems) {
      issues.push({ path, message: `must have at least ${minItems} items` });
    }
    if (typeof maxItems === 'number' && value.length > maxItems) {
      issues.push({ path, message: `must have at most ${maxItems} items` });
    }
    const prefix = Array.isArray(prefixItems) ? prefixItems : [];
    for (const [index, item] of value.entries()) {
      const itemSchema = index < prefix.length ? prefix[index] : items;
      this.check(itemSchema, item, join(path, index), issues);
    }
  }

  private checkObject(
    schema: Record<string, unknown>,
    value: Record<string, unknown>,
    path: string,
    issues: JsonSchemaIssue[],
  ): void {
    const properties = isObject(schema.properties) ? schema.properties : {};
    if (Array.isArray(schema.required)) {
      for (const name of schema.required) {
        if (typeof name === 'string' && !Object.hasOwn(value, name)) {
          issues.push({ path: join(path, name), message: 'is required' });
        }
      }
    }
    const { additionalProperties } = schema;
    for (const [name, item] of Object.entries(value)) {
      if (Object.hasOwn(properties, name)) this.check(properties[name], item, join(path, name), issues);
      else if (additionalProperties === false) issues.push({ path: join(path, name), message: 'is not allowed' });
      else if (isObject(additionalProperties)) this.check(additionalProperties, item, join(path, name), issues);
    }
  }

  private checkCombinators(
    schema: Record<string, unknown>,
    value: unknown,
    path: string,
    issues: JsonSchemaIssue[],
    hops: number,
  ): void {
    const { allOf, anyOf, oneOf } = schema;
    if (Array.isArray(allOf)) for (const part of allOf) this.check(part, value, path, issues, hops);
    const attempts = (options: unknown[]) =>
      options.map((option) => {
        const found: JsonSchemaIssue[] = [];
        this.check(option, value, path, found, hops);
        return found;
      });
    if (Array.isArray(anyOf)) {
      const tried = attempts(anyOf);
      if (!tried.some((found) => found.length === 0)) {
        issues.push({ path, message: `matches none of the allowed schemas (${summarize(tried)})` });
      }
    }
    if (Array.isArray(oneOf)) {
      const tried = attempts(oneOf);
      const matched = tried.filter((found) => found.length === 0).length;
      if (matched === 0) issues.push({ path, message: `matches none of the allowed schemas (${summarize(tried)})` });
      else if (matched > 1) issues.push({ path, message: `matches ${matched} of the schemas; exactly one is allowed` });
    }
  }
}

/** The first issue of each failed option, so the message says what each option wanted. */
function summarize(tried: JsonSchemaIssue[][]): string {
  return tried
    .map((found) => found[0])
    .filter((issue) => issue !== undefined)
    .map((issue) => (issue.path === '' ? issue.message : `${issue.path} ${issue.message}`))
    .join('; ');
}

/**
 * Checks a JSON value against a JSON Schema, for the keywords in
 * `CHECKED_JSON_SCHEMA_KEYWORDS` (types, enums and constants, object properties, required
 * and additional properties, array items, string, number and array bounds, string
 * patterns, `anyOf`/`oneOf`/`allOf`, and local `$ref`s such as `#/$defs/city`); other
 * keywords are not checked. Returns the issues found, none when the value matches. Cost is
 * linear in the size of the value (times the options of `anyOf` and `oneOf`).
 *
 * @example
 * validateJsonSchema({ type: 'object', properties: { city: { type: 'string' } }, required: ['city'] }, { city: 3 });
 * // [{ path: 'city', message: 'expected string, got integer' }]
 */
export function validateJsonSchema(schema: AgentJsonSchema, value: unknown): JsonSchemaIssue[] {
  const issues: JsonSchemaIssue[] = [];
  new Validator(schema).check(schema, value, '', issues);
  return issues;
}
