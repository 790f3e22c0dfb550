// fast-json-patch's ES modules, imported by path: the package's entry also pulls in its
// observe/compare half (about 1 KB min+gzip in a browser bundle), which this never uses.
import { applyOperation } from 'fast-json-patch/module/core.mjs';
import { unescapePathComponent } from 'fast-json-patch/module/helpers.mjs';
import type { JsonPatchOperation } from '../protocol/eventSchemas';

const FORBIDDEN_SEGMENTS = new Set(['__proto__', 'constructor', 'prototype']);

export type StatePatchResult = { success: true; state: unknown } | { success: false; reason: string };

function segmentsOf(pointer: string): string[] | undefined {
  if (pointer === '') return [];
  if (!pointer.startsWith('/')) return undefined;
  return pointer.slice(1).split('/').map(unescapePathComponent);
}

/** Shallow-copies every container on the way to the parent of `segments`, once per patch. */
function copyAlong(root: unknown, segments: readonly string[], owned: WeakSet<object>): unknown {
  if (segments.length === 0 || typeof root !== 'object' || root === null) return root;
  const copy = (value: object): object => {
    if (owned.has(value)) return value;
    const next = Array.isArray(value) ? value.slice() : { ...value };
    owned.add(next);
    return next;
  };
  const nextRoot = copy(root) as Record<string, unknown>;
  let container = nextRoot;
  for (let index = 0; index < segments.length - 1; index += 1) {
    const key = segments[index] as string;
    const child = container[key];
    if (typeof child !== 'object' || child === null) break;
    const copied = copy(child) as Record<string, unknown>;
    container[key] = copied;
    container = copied;
  }
  return nextRoot;
}

/**
 * Applies an RFC 6902 patch without touching the input: only the containers on the
 * patched paths are copied, everything else keeps its identity. The operations
 * themselves are fast-json-patch's. A patch that fails, or that addresses
 * `__proto__`, `constructor` or `prototype`, changes nothing and says why.
 */
export function applyStatePatch(state: unknown, patch: readonly JsonPatchOperation[]): StatePatchResult {
  const owned = new WeakSet<object>();
  let document = state;
  for (const [index, operation] of patch.entries()) {
    const pointers = 'from' in operation ? [operation.from, operation.path] : [operation.path];
    for (const pointer of pointers) {
      const segments = segmentsOf(pointer);
      if (segments === undefined) return { success: false, reason: `operation ${index}: invalid pointer "${pointer}"` };
      const forbidden = segments.find((segment) => FORBIDDEN_SEGMENTS.has(segment));
      if (forbidden !== undefined) {
        return { success: false, reason: `operation ${index}: path segment "${forbidden}" is not allowed` };
      }
      if (operation.op !== 'test') document = copyAlong(document, segments, owned);
    }
    try {
      document = applyOperation(document, operation, true, true, true, index).newDocument;
    } catch (error) {
      const message = error instanceof Error ? error.message.split('\n')[0] : String(error);
      return { success: false, reason: `operation ${index} (${operation.op} ${operation.path}): ${message}` };
    }
  }
  return { success: true, state: document };
}
