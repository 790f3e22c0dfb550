// fast-json-patch's ES modules, imported by path: the package's entry also pulls in its
// observe/compare half (about 1 KB min+gzip in a browser bundle), which this never uses.
import { applyOperation } from 'fast-json-patch/module/core.mjs';
import { unescapePathComponent } from 'fast-json-patch/module/helpers.mjs';
import type { JsonPatchOperation } from '../protocol/eventSchemas';
import { measureJsonSize } from '../protocol/plainJson';

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

export interface StatePatchLimits {
  /** Most operations one patch may hold. */
  maxOperations?: number;
  /** Largest the patched state may grow, as JSON, in characters. */
  maxStateSize?: number;
}

/** 1,000 operations per patch, and 10 MiB of JSON for the state a patch produces. */
export const DEFAULT_STATE_PATCH_LIMITS: Readonly<Required<StatePatchLimits>> = {
  maxOperations: 1_000,
  maxStateSize: 10 * 1024 * 1024,
};

/** The value a pointer names, or undefined; only own fields, so a prototype is never read. */
function valueAt(document: unknown, segments: readonly string[]): unknown {
  let value: unknown = document;
  for (const segment of segments) {
    if (typeof value !== 'object' || value === null || !Object.hasOwn(value, segment)) return undefined;
    value = (value as Record<string, unknown>)[segment];
  }
  return value;
}

const ARRAY_INDEX = /^(?:0|[1-9][0-9]*)$/;

/**
 * Whether a pointer names a value in the document: own fields only, and for arrays an index
 * written as RFC 6901 writes it, below the length (`-`, `01` and `length` name nothing).
 */
function existsAt(document: unknown, segments: readonly string[]): boolean {
  if (document === undefined) return false;
  let value: unknown = document;
  for (const segment of segments) {
    if (typeof value !== 'object' || value === null) return false;
    if (Array.isArray(value)) {
      if (!ARRAY_INDEX.test(segment) || Number(segment) >= value.length) return false;
    } else if (!Object.hasOwn(value, segment)) {
      return false;
    }
    value = (value as Record<string, unknown>)[segment];
  }
  return true;
}

/**
 * The first segment of a pointer that meets an array and is not an index as RFC 6901
 * writes it (`-` only last). fast-json-patch reads `01` as `1`, past the containers this
 * copied for the key `01`: such a patch would change the previous state in place.
 */
function findIllegalArrayIndex(document: unknown, segments: readonly string[]): string | undefined {
  let value: unknown = document;
  for (const [position, segment] of segments.entries()) {
    if (typeof value !== 'object' || value === null) return undefined;
    if (Array.isArray(value)) {
      const last = position === segments.length - 1;
      if (!ARRAY_INDEX.test(segment) && !(last && segment === '-')) return segment;
    } else if (!Object.hasOwn(value, segment)) {
      return undefined;
    }
    value = (value as Record<string, unknown>)[segment];
  }
  return undefined;
}

function isProperPrefix(prefix: readonly string[], segments: readonly string[]): boolean {
  if (prefix.length >= segments.length) return false;
  for (let index = 0; index < prefix.length; index += 1) if (prefix[index] !== segments[index]) return false;
  return true;
}

/** What an operation may add to the JSON size at most: the key it writes, and the value. */
function keyOverhead(segments: readonly string[]): number {
  return (segments[segments.length - 1]?.length ?? 0) + 4;
}

/**
 * Applies an RFC 6902 patch without touching the input: only the containers on the
 * patched paths are copied, everything else keeps its identity. The operations
 * themselves are fast-json-patch's. A patch that fails, that moves or copies from a
 * pointer that names nothing (`/list/-`, a missing key), that addresses `__proto__`,
 * `constructor` or `prototype`, that moves a value into itself (RFC 6902 §4.4), that
 * has more than `limits.maxOperations` operations or whose result would be larger
 * than `limits.maxStateSize` characters of JSON changes nothing and says why. A copy
 * is measured before it is made, so a patch cannot double the state twenty times.
 *
 * @example
 * const result = applyStatePatch(state, [{ op: 'add', path: '/count', value: 1 }], { maxOperations: 100 });
 * if (!result.success) console.warn(result.reason);
 */
export function applyStatePatch(
  state: unknown,
  patch: readonly JsonPatchOperation[],
  limits: StatePatchLimits = DEFAULT_STATE_PATCH_LIMITS,
): StatePatchResult {
  const maxOperations = limits.maxOperations ?? DEFAULT_STATE_PATCH_LIMITS.maxOperations;
  const maxStateSize = limits.maxStateSize ?? DEFAULT_STATE_PATCH_LIMITS.maxStateSize;
  if (patch.length > maxOperations) {
    return { success: false, reason: `patch has ${patch.length} operations; the limit is ${maxOperations}` };
  }
  const tooLarge = `the state would be over ${maxStateSize} characters of JSON; the limit is ${maxStateSize}`;
  const owned = new WeakSet<object>();
  // An upper bound of the document's size: its measured size plus all that operations added since.
  let measured = measureJsonSize(state, maxStateSize);
  let added = 0;
  let document = state;
  for (const [index, operation] of patch.entries()) {
    const fromSegments = 'from' in operation ? segmentsOf(operation.from) : [];
    const pathSegments = segmentsOf(operation.path);
    for (const [pointer, segments] of [
      ['from' in operation ? operation.from : '', fromSegments],
      [operation.path, pathSegments],
    ] as const) {
      if (segments === undefined) return { success: false, reason: `operation ${index}: invalid pointer "${pointer}"` };
      const forbidden = segments.find((segment) => FORBIDDEN_SEGMENTS.has(segment));
      if (forbidden !== undefined) {
        return { success: false, reason: `operation ${index}: path segment "${forbidden}" is not allowed` };
      }
    }
    const from = fromSegments as string[];
    const path = pathSegments as string[];
    for (const [pointer, segments] of [
      ['from' in operation ? operation.from : '', from],
      [operation.path, path],
    ] as const) {
      const illegal = findIllegalArrayIndex(document, segments);
      if (illegal !== undefined) {
        return {
          success: false,
          reason: `operation ${index} (${operation.op} ${operation.path}): ${JSON.stringify(illegal)} in "${pointer}" is not an array index`,
        };
      }
    }
    // fast-json-patch moves or copies `undefined` from a pointer that names nothing
    // (`/list/-`, a missing key), which would leave the state not JSON.
    if ((operation.op === 'move' || operation.op === 'copy') && !existsAt(document, from)) {
      return {
        success: false,
        reason: `operation ${index} (${operation.op} ${operation.path}): "from" ${JSON.stringify(operation.from)} does not exist`,
      };
    }
    if (operation.op === 'move' && isProperPrefix(from, path)) {
      return {
        success: false,
        reason: `operation ${index} (move ${operation.path}): "from" ${JSON.stringify(operation.from)} is a proper prefix of "path", so the value would contain itself`,
      };
    }
    if (operation.op === 'add' || operation.op === 'replace') {
      added += measureJsonSize(operation.value, maxStateSize) + keyOverhead(path);
    } else if (operation.op === 'move') {
      added += keyOverhead(path);
    } else if (operation.op === 'copy') {
      // Measured before fast-json-patch clones it: the clone is as large as what it copies.
      const source = valueAt(document, from);
      added += measureJsonSize(source, maxStateSize, owned) + keyOverhead(path);
      if (measured + added > maxStateSize) {
        measured = measureJsonSize(document, maxStateSize, owned) + measureJsonSize(source, maxStateSize, owned);
        added = keyOverhead(path);
        if (measured > maxStateSize)
          return { success: false, reason: `operation ${index} (copy ${operation.path}): ${tooLarge}` };
      }
    }
    if (operation.op !== 'test') {
      if ('from' in operation) document = copyAlong(document, from, owned);
      document = copyAlong(document, path, owned);
    }
    try {
      document = applyOperation(document, operation, true, true, true, index).newDocument;
    } catch (error) {
      const message = error instanceof Error ? error.message.split('\n')[0] : String(error);
      return { success: false, reason: `operation ${index} (${operation.op} ${operation.path}): ${message}` };
    }
  }
  if (measured + added > maxStateSize && measureJsonSize(document, maxStateSize) > maxStateSize) {
    return { success: false, reason: tooLarge };
  }
  return { success: true, state: document };
}
