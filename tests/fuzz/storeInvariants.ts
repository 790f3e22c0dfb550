import { expect } from 'vitest';
import type { AgentState } from '../../machines/agentState';
import type { AgentStore } from '../../machines/createAgentStore';
import { AgentProtocolError } from '../../protocol/errors';

/** `runId + eventId` of a value that carries both as non-empty strings, the store's redelivery key. */
export function identityOf(value: unknown): string | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const { runId, eventId } = value as Record<string, unknown>;
  if (typeof runId !== 'string' || runId === '' || typeof eventId !== 'string' || eventId === '') return undefined;
  return `${runId}\u0000${eventId}`;
}

/** The JSON form of a snapshot; a snapshot that cannot be serialised fails the property with that reason. */
export function jsonForm(state: unknown, what = 'snapshot'): unknown {
  let text: string | undefined;
  try {
    text = JSON.stringify(state);
  } catch (error) {
    throw new Error(`The ${what} cannot be serialised: ${describeError(error)}`);
  }
  return text === undefined ? undefined : JSON.parse(text);
}

export function describeError(error: unknown): string {
  if (error instanceof Error) return `${error.name}: ${error.message.split('\n')[0]}`;
  return String(error);
}

/** The first path at which a value is not plain JSON, or undefined. Iterative: a deep value cannot overflow it. */
export function findNonJson(root: unknown): string | undefined {
  const stack: Array<[unknown, string]> = [[root, 'state']];
  const seen = new Set<object>();
  while (stack.length > 0) {
    const [value, path] = stack.pop() as [unknown, string];
    if (value === null || typeof value === 'string' || typeof value === 'boolean') continue;
    if (typeof value === 'number') {
      if (!Number.isFinite(value)) return `${path} (${value})`;
      if (Object.is(value, -0)) return `${path} (-0, which JSON writes as 0)`;
      continue;
    }
    if (typeof value !== 'object') return `${path} (${typeof value})`;
    if (seen.has(value)) continue;
    seen.add(value);
    if (Array.isArray(value)) {
      for (let index = 0; index < value.length; index += 1) {
        if (!(index in value)) return `${path}[${index}] (a hole)`;
        stack.push([value[index], `${path}[${index}]`]);
      }
      continue;
    }
    const prototype = Object.getPrototypeOf(value);
    if (prototype !== Object.prototype && prototype !== null) {
      return `${path} (a ${prototype?.constructor?.name ?? 'non-plain'} object)`;
    }
    for (const key of Object.keys(value)) {
      stack.push([(value as Record<string, unknown>)[key], `${path}.${key}`]);
    }
  }
  return undefined;
}

/**
 * Invariant 2: `JSON.parse(JSON.stringify(s))` deep-equals `s`. The walk finds every value that
 * JSON would change and names its path; `deep` also compares the round trip with `toEqual`
 * (slower, so the property does it once per sequence, on the last snapshot).
 */
export function assertPlainJson(state: AgentState, where: string, deep = false): void {
  const copy = jsonForm(state);
  const problem = findNonJson(state);
  if (problem !== undefined) throw new Error(`${where}: the snapshot is not plain JSON at ${problem}`);
  if (deep) expect(copy, `${where}: JSON.parse(JSON.stringify(snapshot)) differs from the snapshot`).toEqual(state);
}

const POLLUTION_KEYS = ['polluted', 'x', 'k0', 'child'];

/** Hostile patches must never reach `Object.prototype`; cleans up so one failure does not spread. */
export function assertNoPrototypePollution(where: string): void {
  const found = POLLUTION_KEYS.filter((key) => Object.hasOwn(Object.prototype, key));
  if (found.length === 0) return;
  for (const key of found) delete (Object.prototype as Record<string, unknown>)[key];
  throw new Error(`${where}: Object.prototype was polluted with ${found.join(', ')}`);
}

const ACTIVE_STATUSES: Record<string, readonly string[]> = {
  messages: ['streaming'],
  reasoning: ['streaming'],
  toolCalls: ['streaming_arguments', 'running', 'awaiting_execution'],
  approvals: ['waiting'],
  tasks: ['running'],
  artifacts: ['open'],
};

/**
 * Invariant 4: an ended run has no active entity, except the tool calls and approvals its
 * `run.completed` listed as pending, which may still be `awaiting_execution` or `running`
 * (the application runs it) / `waiting`.
 */
export function assertEndedRunsAreQuiet(state: AgentState, where: string): void {
  for (const run of Object.values(state.runs)) {
    if (run.status === 'running') continue;
    const pendingTools = new Set(run.pendingToolCallIds ?? []);
    const pendingApprovals = new Set(run.pendingApprovalIds ?? []);
    for (const [container, statuses] of Object.entries(ACTIVE_STATUSES)) {
      const records = state[container as keyof AgentState] as Record<
        string,
        { runId: string; id: string; status: string }
      >;
      for (const entity of Object.values(records)) {
        if (entity.runId !== run.id || !statuses.includes(entity.status)) continue;
        const pendingToolStatus = entity.status === 'awaiting_execution' || entity.status === 'running';
        if (container === 'toolCalls' && pendingToolStatus && pendingTools.has(entity.id)) continue;
        if (container === 'approvals' && entity.status === 'waiting' && pendingApprovals.has(entity.id)) continue;
        const listed =
          container === 'toolCalls'
            ? ` (pendingToolCallIds: ${JSON.stringify(run.pendingToolCallIds ?? [])})`
            : container === 'approvals'
              ? ` (pendingApprovalIds: ${JSON.stringify(run.pendingApprovalIds ?? [])})`
              : '';
        throw new Error(
          `${where}: run "${run.id}" is ${run.status} but ${container} "${entity.id}" is still ${entity.status}${listed}`,
        );
      }
    }
  }
}

/** What one strict dispatch did: `ok`, or the issue code it threw. Anything but AgentProtocolError fails. */
export function strictOutcome(store: AgentStore, event: unknown, where: string): string {
  try {
    store.dispatch(event);
    return 'ok';
  } catch (error) {
    if (AgentProtocolError.isInstance(error)) return error.issue.code;
    throw new Error(`${where}: strict dispatch threw ${describeError(error)}, not an AgentProtocolError`, {
      cause: error,
    });
  }
}

/** A record-mode dispatch; any exception fails the property, named as such. */
export function recordDispatch(store: AgentStore, event: unknown, where: string): void {
  try {
    store.dispatch(event);
  } catch (error) {
    throw new Error(`${where}: record-mode dispatch threw ${describeError(error)}`, { cause: error });
  }
}

/** The first path where two JSON values differ, with both sides, for a readable failure. */
export function firstDifference(actual: unknown, expected: unknown, path = 'state'): string | undefined {
  if (Object.is(actual, expected)) return undefined;
  const bothObjects =
    typeof actual === 'object' && actual !== null && typeof expected === 'object' && expected !== null;
  if (!bothObjects || Array.isArray(actual) !== Array.isArray(expected)) {
    return `${path}: ${JSON.stringify(actual) ?? 'undefined'} instead of ${JSON.stringify(expected) ?? 'undefined'}`;
  }
  const a = actual as Record<string, unknown>;
  const b = expected as Record<string, unknown>;
  const keys = [...new Set([...Object.keys(b), ...Object.keys(a)])];
  for (const key of keys) {
    const where = Array.isArray(actual) ? `${path}[${key}]` : `${path}.${key}`;
    if (!Object.hasOwn(a, key)) return `${where}: missing, expected ${JSON.stringify(b[key])}`;
    if (!Object.hasOwn(b, key)) return `${where}: ${JSON.stringify(a[key])}, expected nothing`;
    const difference = firstDifference(a[key], b[key], where);
    if (difference !== undefined) return difference;
  }
  return undefined;
}

/** Fails with the first difference between two JSON forms (then `toEqual` for the full diff). */
export function expectSameJson(actual: unknown, expected: unknown, what: string): void {
  const difference = firstDifference(actual, expected);
  if (difference === undefined) return;
  expect(actual, `${what}; first difference at ${difference}`).toEqual(expected);
}
