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
function knownFields(schema: SchemaLike): Map<string, SchemaLike[]> | undefined {
  const def = defOf(schema);
  if (def.type === 'optional' && def.innerType !== undefined) return knownFields(def.innerType);
  if (def.type === 'object' && def.shape !== undefined) {
    return new Map(Object.entries(def.shape).map(([key, field]) => [key, [field]]));
  }
  if (def.type !== 'union' || def.options === undefined) return undefined;
  const fields = new Map<string, SchemaLike[]>();
  for (const option of def.options) {
    const optionFields = knownFields(option);
    if (optionFields === undefined) return undefined;
    for (const [key, schemas] of optionFields) fields.set(key, [...(fields.get(key) ?? []), ...schemas]);
  }
  return fields;
}

/**
 * Deletes, in place, the fields of `value` that its (already validated) schema does not
 * know, as zod's own parse would leave them out; values under `unknown` are kept whole.
 * `value` must be a fresh copy: this mutates it.
 */
export function stripUnknownKeys(schema: SchemaLike, value: unknown): unknown {
  if (typeof value !== 'object' || value === null) return value;
  const def = defOf(schema);
  if (def.type === 'optional' && def.innerType !== undefined) return stripUnknownKeys(def.innerType, value);
  if (def.type === 'array' && def.element !== undefined && Array.isArray(value)) {
    for (const element of value) stripUnknownKeys(def.element, element);
    return value;
  }
  if (def.type === 'record' && def.valueType !== undefined) {
    for (const entry of Object.values(value)) stripUnknownKeys(def.valueType, entry);
    return value;
  }
  const fields = knownFields(schema);
  if (fields === undefined || Array.isArray(value)) return value;
  const record = value as Record<string, unknown>;
  for (const key of Object.keys(record)) {
    const schemas = fields.get(key);
    if (schemas === undefined) delete record[key];
    // A field of a union's options: stripped by the first option that knows it.
    else if (schemas.length === 1) stripUnknownKeys(schemas[0] as SchemaLike, record[key]);
  }
  return value;
}
