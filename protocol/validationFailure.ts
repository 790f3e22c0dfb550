import type { AgentValidationFailure } from './errors';

interface SchemaIssue {
  code: string;
  path: PropertyKey[];
  expected?: unknown;
  values?: readonly unknown[];
  options?: readonly unknown[];
  note?: string;
  minimum?: unknown;
  maximum?: unknown;
  format?: string;
  origin?: string;
}

/** A value as a message shows it: JSON where it can be, never a throw (a BigInt, a cycle). */
function show(value: unknown): string {
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return typeof value === 'bigint' ? `${value}n` : kindOf(value);
  }
}

function describe(issue: SchemaIssue, input: unknown): string {
  switch (issue.code) {
    case 'invalid_type':
      return `expected ${issue.format ?? issue.expected}, got ${kindOf(valueAt(input, issue.path))}`;
    case 'invalid_value':
      return `expected one of ${show(issue.values)}, got ${show(valueAt(input, issue.path))}`;
    case 'invalid_union':
      if (issue.note === 'No matching discriminator') {
        return `unknown value ${show(valueAt(input, issue.path))}, expected one of ${show(issue.options)}`;
      }
      return 'matches none of the allowed shapes';
    case 'too_small':
      return issue.origin === 'string' ? 'must not be empty' : `must be at least ${String(issue.minimum)}`;
    case 'too_big':
      return `must be at most ${String(issue.maximum)}`;
    case 'invalid_format':
      return `is not a valid ${issue.format ?? 'value'}`;
    default:
      return issue.code.replaceAll('_', ' ');
  }
}

/** The value at a schema issue's path in the input, or undefined where the path leaves it. */
export function valueAt(input: unknown, path: readonly PropertyKey[]): unknown {
  let value = input;
  for (const key of path) {
    if (typeof value !== 'object' || value === null) return undefined;
    value = (value as Record<PropertyKey, unknown>)[key];
  }
  return value;
}

function kindOf(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  if (typeof value === 'number' && !Number.isFinite(value)) return String(value);
  return typeof value;
}

/** Turns the first schema issue into a path (`payload.delta`) and a reason a person can act on. */
export function toValidationFailure(issues: readonly SchemaIssue[], input: unknown): AgentValidationFailure {
  const issue = issues[0];
  if (!issue) return { path: '', reason: 'invalid', message: 'invalid' };
  const path = issue.path.map(String).join('.');
  const reason = describe(issue, input);
  return { path, reason, message: path ? `${path}: ${reason}` : reason };
}
