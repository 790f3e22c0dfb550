import type * as z from 'zod/mini';

/** A check that answers true only for values its schema accepts; false means the schema may refuse it. */
export type QuickAccept = (value: unknown) => boolean;

interface SchemaInternals {
  _zod: {
    def: {
      type: string;
      checks?: ReadonlyArray<{ _zod: { def: Record<string, unknown> } }>;
      innerType?: SchemaLike;
      element?: SchemaLike;
      keyType?: SchemaLike;
      valueType?: SchemaLike;
      shape?: Record<string, SchemaLike>;
      options?: readonly SchemaLike[];
      catchall?: SchemaLike;
    };
    values?: ReadonlySet<unknown>;
  };
}
type SchemaLike = z.ZodMiniType | SchemaInternals;

function internals(schema: SchemaLike): SchemaInternals['_zod'] {
  return (schema as SchemaInternals)._zod;
}

/** The schema's own verdict, for what the quick check does not cover. */
function exactly(schema: SchemaLike): QuickAccept {
  return (value) => (schema as z.ZodMiniType).safeParse(value).success;
}

const objectPrototype = Object.prototype;

/** A plain JSON-like object: not null, not an array, with Object's prototype or none. */
function isPlainRecord(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const prototype = Object.getPrototypeOf(value);
  return prototype === objectPrototype || prototype === null;
}

/** The string and number checks this understands; any other check leaves the decision to the schema. */
function compileChecks(schema: SchemaLike): ((value: never) => boolean) | undefined | false {
  const checks = internals(schema).def.checks;
  if (checks === undefined || checks.length === 0) return undefined;
  const tests: Array<(value: never) => boolean> = [];
  for (const check of checks) {
    const def = check._zod.def;
    if (def.check === 'min_length' && typeof def.minimum === 'number') {
      const minimum = def.minimum;
      tests.push((value: string) => value.length >= minimum);
    } else if (def.check === 'number_format' && def.format === 'safeint') {
      tests.push((value: number) => Number.isSafeInteger(value));
    } else if (def.check === 'greater_than' && def.inclusive === true && typeof def.value === 'number') {
      const minimum = def.value;
      tests.push((value: number) => value >= minimum);
    } else {
      return false;
    }
  }
  return (value) => tests.every((test) => test(value));
}

/**
 * Compiles a zod/mini schema into a check that allocates nothing on plain JSON data and
 * returns true only where the schema accepts the value. Schema kinds and checks it does
 * not know, and values it cannot judge alone (an unusual prototype, a symbol key, a union
 * that none of its known options accepts), are handed to that part's schema. It may be
 * stricter than the schema in corners (it also checks a record's own `__proto__` entry),
 * so callers run the schema itself when it says false, for the verdict and the message.
 *
 * zod/mini builds a result object and a payload per field, about 5 µs per record of a
 * dozen fields, which made validating a 10,000-entity AgentState most of `reset`.
 *
 * @example
 * const quick = createQuickAccept(agentStateSchema);
 * if (!quick(input)) agentStateSchema.parse(input); // throws with the path when it is wrong
 */
export function createQuickAccept(schema: z.ZodMiniType): QuickAccept {
  return compile(schema);
}

function compile(schema: SchemaLike): QuickAccept {
  const zod = internals(schema);
  const def = zod.def;
  const checks = compileChecks(schema);
  if (checks === false) return exactly(schema);
  const withChecks = (test: QuickAccept): QuickAccept =>
    checks === undefined ? test : (value) => test(value) && checks(value as never);
  switch (def.type) {
    case 'string':
      return withChecks((value) => typeof value === 'string');
    case 'number':
      return withChecks((value) => typeof value === 'number' && Number.isFinite(value));
    case 'boolean':
      return withChecks((value) => typeof value === 'boolean');
    case 'unknown':
    case 'any':
      return withChecks(() => true);
    case 'enum':
    case 'literal': {
      const values = zod.values;
      if (values === undefined || checks !== undefined) return exactly(schema);
      return (value) => values.has(value);
    }
    case 'optional': {
      if (def.innerType === undefined || checks !== undefined) return exactly(schema);
      const inner = compile(def.innerType);
      return (value) => value === undefined || inner(value);
    }
    case 'array': {
      if (def.element === undefined || checks !== undefined) return exactly(schema);
      const element = compile(def.element);
      return (value) => {
        if (!Array.isArray(value)) return false;
        for (let index = 0; index < value.length; index += 1) if (!element(value[index])) return false;
        return true;
      };
    }
    case 'union': {
      if (def.options === undefined || checks !== undefined) return exactly(schema);
      const options = def.options.map(compile);
      const exact = exactly(schema);
      return (value) => options.some((option) => option(value)) || exact(value);
    }
    case 'record':
      return compileRecord(schema);
    case 'object':
      return compileObject(schema);
    default:
      return exactly(schema);
  }
}

function compileRecord(schema: SchemaLike): QuickAccept {
  const def = internals(schema).def;
  // Only string keys of any value: a key schema with values or checks decides more than this does.
  const keyType = def.keyType === undefined ? undefined : internals(def.keyType);
  if (
    keyType?.def.type !== 'string' ||
    keyType.def.checks?.length ||
    def.valueType === undefined ||
    def.checks?.length
  ) {
    return exactly(schema);
  }
  const entry = compile(def.valueType);
  const exact = exactly(schema);
  return (value) => {
    // zod's record reads an own `constructor` as a sign of a class instance; leave that to it.
    if (!isPlainRecord(value) || Object.hasOwn(value, 'constructor')) return exact(value);
    if (Object.getOwnPropertySymbols(value).length > 0) return exact(value);
    for (const key in value) if (!entry(value[key])) return false;
    return true;
  };
}

function compileObject(schema: SchemaLike): QuickAccept {
  const def = internals(schema).def;
  if (def.shape === undefined || def.catchall !== undefined || def.checks?.length) return exactly(schema);
  const fields = Object.entries(def.shape).map(([key, field]) => ({
    key,
    optional: internals(field).def.type === 'optional',
    accepts: compile(field),
  }));
  const exact = exactly(schema);
  return (value) => {
    if (!isPlainRecord(value)) return typeof value === 'object' && value !== null && exact(value);
    for (let index = 0; index < fields.length; index += 1) {
      const field = fields[index] as (typeof fields)[number];
      const fieldValue = value[field.key];
      // A required field must be present, even when its schema accepts undefined.
      if (fieldValue === undefined && !field.optional && !Object.hasOwn(value, field.key)) return false;
      if (!field.accepts(fieldValue)) return false;
    }
    return true;
  };
}
