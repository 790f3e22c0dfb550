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

function defOf(schema: SchemaLike): SchemaDef {
  return (schema as { _zod: { def: SchemaDef } })._zod.def;
}

/** The fields an object schema, or a union of object schemas, knows; undefined when it is not one. */
function collectFields(schema: SchemaLike): Map<string, SchemaLike[]> | undefined {
  const def = defOf(schema);
  if (def.type === 'optional' && def.innerType !== undefined) return collectFields(def.innerType);
  if (def.type === 'object' && def.shape !== undefined) {
    return new Map(Object.entries(def.shape).map(([key, field]) => [key, [field]]));
  }
  if (def.type !== 'union' || def.options === undefined) return undefined;
  const fields = new Map<string, SchemaLike[]>();
  for (const option of def.options) {
    const optionFields = collectFields(option);
    if (optionFields === undefined) return undefined;
    for (const [key, schemas] of optionFields) fields.set(key, [...(fields.get(key) ?? []), ...schemas]);
  }
  return fields;
}

const fieldsBySchema = new WeakMap<object, Map<string, SchemaLike[]> | null>();

/** `collectFields`, once per schema: a state holds thousands of records of a few schemas. */
function knownFields(schema: SchemaLike): Map<string, SchemaLike[]> | undefined {
  let fields = fieldsBySchema.get(schema);
  if (fields === undefined) {
    fields = collectFields(schema) ?? null;
    fieldsBySchema.set(schema, fields);
  }
  return fields ?? undefined;
}

/** Sets an own field, even one named `__proto__`. */
function setField(record: Record<string, unknown>, key: string, value: unknown): void {
  if (key === '__proto__')
    Object.defineProperty(record, key, { value, enumerable: true, writable: true, configurable: true });
  else record[key] = value;
}

/**
 * A fresh copy of plain JSON `value` (already validated against `schema`) with only the
 * fields its schema knows, as zod's own parse would leave them; values under `unknown`
 * are copied whole. Shares nothing with `value`.
 */
export function copyKnownFields(schema: SchemaLike, value: unknown): unknown {
  if (typeof value !== 'object' || value === null) return value;
  const def = defOf(schema);
  if (def.type === 'optional' && def.innerType !== undefined) return copyKnownFields(def.innerType, value);
  if (def.type === 'array' && def.element !== undefined && Array.isArray(value)) {
    const element = def.element;
    return value.map((entry) => copyKnownFields(element, entry));
  }
  if (def.type === 'record' && def.valueType !== undefined) {
    const copy: Record<string, unknown> = {};
    for (const key of Object.keys(value)) {
      setField(copy, key, copyKnownFields(def.valueType, (value as Record<string, unknown>)[key]));
    }
    return copy;
  }
  const fields = knownFields(schema);
  if (fields === undefined || Array.isArray(value)) return JSON.parse(JSON.stringify(value));
  const copy: Record<string, unknown> = {};
  for (const key of Object.keys(value)) {
    const schemas = fields.get(key);
    if (schemas === undefined) continue;
    // A field of a union's options: copied by the schema of the first option that knows it.
    setField(copy, key, copyKnownFields(schemas[0] as SchemaLike, (value as Record<string, unknown>)[key]));
  }
  return copy;
}
