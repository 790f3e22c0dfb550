import { type OutputUnit, type Schema, type SchemaDraft, Validator } from '@cfworker/json-schema';

/** A JSON Schema, as a tool's `inputSchema` gives it: a plain JSON object. */
export type AgentJsonSchema = { readonly [keyword: string]: unknown };

/** Where a value does not match its schema: a dotted path (`items.0.city`, empty for the value itself) and why. */
export interface JsonSchemaIssue {
  path: string;
  message: string;
}

/** The drafts a schema's `$schema` can name; any other (or none) is validated as draft 2020-12. */
const DRAFTS: ReadonlyArray<readonly [string, SchemaDraft]> = [
  ['draft-04', '4'],
  ['draft-07', '7'],
  ['2019-09', '2019-09'],
  ['2020-12', '2020-12'],
];

function draftOf(schema: AgentJsonSchema): SchemaDraft {
  const { $schema } = schema;
  if (typeof $schema !== 'string') return '2020-12';
  return DRAFTS.find(([marker]) => $schema.includes(marker))?.[1] ?? '2020-12';
}

/** `#/items/0/a~1b` as `items.0.a/b`. */
function toPath(instanceLocation: string): string {
  return instanceLocation
    .slice(2)
    .split('/')
    .map((token) => decodeURIComponent(token).replaceAll('~1', '/').replaceAll('~0', '~'))
    .join('.');
}

const isUnder = (unit: OutputUnit, parent: OutputUnit): boolean =>
  unit.keywordLocation.startsWith(`${parent.keywordLocation}/`);

/**
 * The library's errors, as issues that say what is wrong. It lists, before the errors of a
 * part of the value, an error that only says the part had errors ("Property "city" does not
 * match schema."): those are left out. An `anyOf` or `oneOf` is one issue: fixing any one of
 * its options would do, so listing each option's errors would read as if all had to be.
 * A `false` schema's error ("False boolean schema.") comes after the error of the keyword that
 * refused the value (`additionalProperties: false`), which says more, and is left out.
 */
function toIssues(units: readonly OutputUnit[]): JsonSchemaIssue[] {
  const issues: JsonSchemaIssue[] = [];
  let alternatives: OutputUnit | undefined;
  units.forEach((unit, index) => {
    if (alternatives !== undefined && isUnder(unit, alternatives)) return;
    alternatives = unit.keyword === 'anyOf' || unit.keyword === 'oneOf' ? unit : undefined;
    const next = units[index + 1];
    if (alternatives === undefined && next !== undefined && isUnder(next, unit)) return;
    if (unit.keyword === 'false' && index > 0) return;
    issues.push({ path: toPath(unit.instanceLocation), message: unit.error.replace(/\.$/, '') });
  });
  return issues;
}

/**
 * A validator for one JSON Schema, by `@cfworker/json-schema` (all of draft 2020-12, or the
 * draft the schema's `$schema` names: 4, 7 or 2019-09; no code generation, so it runs in
 * browsers and workers that forbid `eval`). It returns the issues of a value, none when the
 * value matches; every issue is listed, not only the first. A schema that cannot be checked
 * (a `$ref` that does not resolve or loops, a `pattern` that is not a regular expression)
 * gives an issue that says so, for the value as a whole, rather than throwing. Throws when
 * the schema cannot even be read (two subschemas with one `$id`).
 *
 * @example
 * const validate = createJsonSchemaValidator({ type: 'object', properties: { city: { type: 'string' } }, required: ['city'] });
 * validate({ city: 3 });
 * // [{ path: 'city', message: 'Instance type "number" is invalid. Expected "string"' }]
 */
export function createJsonSchemaValidator(schema: AgentJsonSchema): (value: unknown) => JsonSchemaIssue[] {
  // The library marks the schema objects it reads (hidden `__absolute_uri__` properties): a
  // copy keeps the application's schema, which the model is sent, as it was, frozen or not.
  const validator = new Validator(structuredClone(schema) as Schema, draftOf(schema), false);
  return (value) => {
    try {
      const result = validator.validate(value);
      return result.valid ? [] : toIssues(result.errors);
    } catch (error) {
      // The first sentence: the rest of an unresolved $ref's message lists the page's URL.
      const reason = (error instanceof Error ? error.message : String(error)).split(/\n|\.\s/)[0];
      return [{ path: '', message: `the tool's schema cannot be checked: ${reason}` }];
    }
  };
}
