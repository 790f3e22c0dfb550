import type * as z from 'zod/mini';

interface SchemaDef {
  type: string;
  innerType?: SchemaLike;
  element?: SchemaLike;
  valueType?: SchemaLike;
  shape?: Record<string, SchemaLike>;
  options?: readonly SchemaLike[];
}
type SchemaLike = z.ZodMiniType | { _zod: { def: SchemaDef } };
type Copier = (value: unknown) => unknown;

function defOf(schema: SchemaLike): SchemaDef {
  return (schema as { _zod: { def: SchemaDef } })._zod.def;
}

/** The fields an object schema, or a union of object schemas, knows; undefined when it is not one. */
function knownFields(schema: SchemaLike): Map<string, SchemaLike> | undefined {
  const def = defOf(schema);
  if (def.type === 'optional' && def.innerType !== undefined) return knownFields(def.innerType);
  if (def.type === 'object' && def.shape !== undefined) return new Map(Object.entries(def.shape));
  if (def.type !== 'union' || def.options === undefined) return undefined;
  const fields = new Map<string, SchemaLike>();
  for (const option of def.options) {
    const optionFields = knownFields(option);
    if (optionFields === undefined) return undefined;
    // A field of several options: copied by the schema of the first option that knows it.
    for (const [key, field] of optionFields) if (!fields.has(key)) fields.set(key, field);
  }
  return fields;
}

/** Sets an own field, even one named `__proto__`. */
function setField(record: Record<string, unknown>, key: string, value: unknown): void {
  if (key === '__proto__') {
    Object.defineProperty(record, key, { value, enumerable: true, writable: true, configurable: true });
  } else {
    record[key] = value;
  }
}

/** A value the schema does not describe further: copied whole, as JSON. */
const copyWhole: Copier = (value) =>
  typeof value === 'object' && value !== null ? JSON.parse(JSON.stringify(value)) : value;

function compile(schema: SchemaLike): Copier {
  const def = defOf(schema);
  if (def.type === 'optional' && def.innerType !== undefined) return compile(def.innerType);
  if (def.type === 'array' && def.element !== undefined) {
    const element = compile(def.element);
    return (value) => (Array.isArray(value) ? value.map(element) : copyWhole(value));
  }
  if (def.type === 'record' && def.valueType !== undefined) {
    const entry = compile(def.valueType);
    return (value) => {
      if (typeof value !== 'object' || value === null) return value;
      const copy: Record<string, unknown> = {};
      for (const key of Object.keys(value)) setField(copy, key, entry((value as Record<string, unknown>)[key]));
      return copy;
    };
  }
  const fields = knownFields(schema);
  if (fields === undefined) return copyWhole;
  const copiers = [...fields].map(([key, field]) => ({ key, copy: compile(field) }));
  return (value) => {
    if (typeof value !== 'object' || value === null || Array.isArray(value)) return copyWhole(value);
    const source = value as Record<string, unknown>;
    const copy: Record<string, unknown> = {};
    for (let index = 0; index < copiers.length; index += 1) {
      const { key, copy: copyField } = copiers[index] as (typeof copiers)[number];
      if (Object.hasOwn(source, key)) copy[key] = copyField(source[key]);
    }
    return copy;
  };
}

const copiers = new WeakMap<object, Copier>();

/**
 * A fresh copy of plain JSON `value` (already validated against `schema`) with only the
 * fields its schema knows, as zod's own parse would leave them; values under `unknown`
 * are copied whole. Shares nothing with `value`. The copier is compiled once per schema:
 * a state holds thousands of records of a few schemas.
 */
export function copyKnownFields(schema: SchemaLike, value: unknown): unknown {
  let copier = copiers.get(schema);
  if (copier === undefined) {
    copier = compile(schema);
    copiers.set(schema, copier);
  }
  return copier(value);
}
