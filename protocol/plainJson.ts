/** How deep `checkPlainJson` lets containers nest by default, counting the value itself as level 1. */
export const DEFAULT_MAX_JSON_DEPTH = 100;

/** Where a value stops being plain JSON, and why. `path` is dotted (`result.items.0`), empty for the value itself. */
export interface PlainJsonFailure {
  path: string;
  reason: string;
}

export interface PlainJsonOptions {
  /** Deepest nesting of objects and arrays allowed; the value itself is level 1. Default `DEFAULT_MAX_JSON_DEPTH`. */
  maxDepth?: number;
  /**
   * Accept own `__proto__` keys (JSON.parse makes them own fields). For containers keyed by
   * untrusted ids, such as AgentState's, that are read with own-property checks.
   */
  allowProtoKeys?: boolean;
}

const objectPrototype = Object.prototype;
const arrayPrototype = Array.prototype;
/** Levels the allocation-free first pass looks into before it hands over to the full walk. */
const QUICK_DEPTH = 4;

/** Why a value that is not an object or array cannot be JSON, or undefined when it can. */
function leafProblem(value: unknown): string | undefined {
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return undefined;
    case 'number':
      return Number.isFinite(value) ? undefined : `is ${String(value)}, which JSON cannot hold`;
    case 'object':
      return undefined;
    case 'bigint':
      return 'is a bigint, which JSON cannot hold';
    default:
      return `is ${typeof value === 'undefined' ? 'undefined' : `a ${typeof value}`}, which JSON cannot hold`;
  }
}

function kindOf(prototype: object | null): string {
  const name = (prototype as { constructor?: { name?: unknown } } | null)?.constructor?.name;
  return typeof name === 'string' && name !== '' ? `a ${name}` : 'an object with an unusual prototype';
}

/** Why an object or array is not a plain JSON container (own keys aside), or undefined. */
function containerProblem(value: object): string | undefined {
  const prototype = Object.getPrototypeOf(value);
  if (Array.isArray(value)) return prototype === arrayPrototype ? undefined : `is ${kindOf(prototype)}, not an array`;
  if (prototype !== objectPrototype && prototype !== null) return `is ${kindOf(prototype)}, not a plain object`;
  // JSON.stringify drops symbol keys, so such an object would not survive the round trip.
  if (Object.getOwnPropertySymbols(value).length > 0) return 'has symbol keys, which JSON cannot hold';
  return undefined;
}

/**
 * An allocation-free look at the first few levels, for the small values (a delta's meta)
 * that make most of the traffic: true when the value is plain JSON, false when it is not
 * or lies deeper than this looks. Recursion bounded by QUICK_DEPTH, never by the input.
 */
function isShallowPlain(value: unknown, levelsLeft: number, allowProtoKeys: boolean): boolean {
  if (typeof value !== 'object' || value === null) return leafProblem(value) === undefined;
  if (levelsLeft === 0 || containerProblem(value) !== undefined) return false;
  if (Array.isArray(value)) {
    for (let index = 0; index < value.length; index += 1) {
      if (!isShallowPlain(value[index], levelsLeft - 1, allowProtoKeys)) return false;
    }
    return true;
  }
  for (const key in value) {
    if (key === '__proto__' && !allowProtoKeys) return false;
    if (!isShallowPlain((value as Record<string, unknown>)[key], levelsLeft - 1, allowProtoKeys)) return false;
  }
  return true;
}

interface Frame {
  container: object;
  /** The object's keys; undefined for an array, whose indexes are walked instead. */
  keys: string[] | undefined;
  next: number;
  length: number;
}

function pathOf(frames: readonly Frame[]): string {
  const parts: string[] = [];
  for (const frame of frames) {
    const index = frame.next - 1;
    parts.push(frame.keys === undefined ? String(index) : (frame.keys[index] as string));
  }
  return parts.join('.');
}

function enter(container: object): Frame {
  if (Array.isArray(container)) return { container, keys: undefined, next: 0, length: container.length };
  const keys = Object.keys(container);
  return { container, keys, next: 0, length: keys.length };
}

function walk(root: object, maxDepth: number, allowProtoKeys: boolean): PlainJsonFailure | undefined {
  const rootProblem = maxDepth < 1 ? `nested deeper than ${maxDepth} levels` : containerProblem(root);
  if (rootProblem !== undefined) return { path: '', reason: rootProblem };
  const frames: Frame[] = [enter(root)];
  // The containers on the current path: meeting one again is a cycle. A value met twice
  // elsewhere is only shared, which JSON writes twice and is fine.
  const ancestors = new Set<object>([root]);
  while (frames.length > 0) {
    const frame = frames[frames.length - 1] as Frame;
    if (frame.next === frame.length) {
      ancestors.delete(frame.container);
      frames.pop();
      continue;
    }
    const index = frame.next++;
    let child: unknown;
    if (frame.keys === undefined) child = (frame.container as unknown[])[index];
    else {
      const key = frame.keys[index] as string;
      // Assigning this key sets a prototype instead of a field, so merging it would corrupt the record.
      if (key === '__proto__' && !allowProtoKeys) {
        return { path: pathOf(frames), reason: 'is a "__proto__" key, which is not allowed' };
      }
      child = (frame.container as Record<string, unknown>)[key];
    }
    if (typeof child !== 'object' || child === null) {
      const problem = leafProblem(child);
      if (problem !== undefined) return { path: pathOf(frames), reason: problem };
      continue;
    }
    let problem: string | undefined;
    if (ancestors.has(child)) problem = 'contains itself (a cycle), which JSON cannot hold';
    else if (frames.length >= maxDepth) problem = `nested deeper than ${maxDepth} levels`;
    else problem = containerProblem(child);
    if (problem !== undefined) return { path: pathOf(frames), reason: problem };
    ancestors.add(child);
    frames.push(enter(child));
  }
  return undefined;
}

/**
 * Whether a value is plain JSON: what `JSON.parse(JSON.stringify(value))` gives back
 * deep-equal. Refuses cycles, objects whose prototype is not `Object.prototype` or null
 * (Date, Map, Set, class instances), arrays that are not plain arrays, symbol keys,
 * `__proto__` keys, non-finite numbers, bigints, functions, symbols, `undefined` (as a
 * value, a field or an array hole) and nesting deeper than `maxDepth`. The walk keeps its
 * own stack, so a 100,000-deep value is refused rather than overflowing the call stack.
 *
 * @example
 * checkPlainJson({ at: new Date() }); // { path: 'at', reason: 'is a Date, not a plain object' }
 */
export function checkPlainJson(value: unknown, options: PlainJsonOptions = {}): PlainJsonFailure | undefined {
  const maxDepth = options.maxDepth ?? DEFAULT_MAX_JSON_DEPTH;
  if (typeof value !== 'object' || value === null) {
    const problem = leafProblem(value);
    return problem === undefined ? undefined : { path: '', reason: problem };
  }
  try {
    const allowProtoKeys = options.allowProtoKeys === true;
    if (maxDepth >= QUICK_DEPTH && isShallowPlain(value, QUICK_DEPTH, allowProtoKeys)) return undefined;
    return walk(value, maxDepth, allowProtoKeys);
  } catch (error) {
    // A proxy or a getter can throw while being read; such a value is not plain data either.
    return { path: '', reason: `could not be read (${error instanceof Error ? error.message : String(error)})` };
  }
}

const sizes = new WeakMap<object, number>();
/** Containers smaller than this are measured again rather than remembered: cheap, and it keeps the map small. */
const CACHED_SIZE_MINIMUM = 256;

function leafSize(value: unknown): number {
  if (typeof value === 'string') return value.length + 2;
  if (typeof value === 'number') return Number.isFinite(value) ? String(value).length : 4;
  if (typeof value === 'boolean') return value ? 4 : 5;
  return 4; // null, and what JSON would write as null
}

interface SizeFrame {
  container: object;
  keys: string[] | undefined;
  next: number;
  length: number;
  /** The running total when this container was entered. */
  start: number;
}

/**
 * The size walk behind `measureJsonSize` and `findJsonSizeOverflow`: counts until the end, or
 * until the count passes `limit`, and leaves the frames it was in. `cache` false neither reads
 * nor writes remembered sizes, so the walk goes down to the entry that crossed the limit.
 */
function walkJsonSize(
  value: object,
  limit: number,
  cache: boolean,
  mutable?: WeakSet<object>,
): { total: number; frames: SizeFrame[] } {
  const remembered = (container: object) => (!cache || mutable?.has(container) ? undefined : sizes.get(container));
  let total = 0;
  const frames: SizeFrame[] = [];
  const open = (container: object): void => {
    const keys = Array.isArray(container) ? undefined : Object.keys(container);
    const length = keys === undefined ? (container as unknown[]).length : keys.length;
    const start = total;
    // Brackets, and a separator between entries.
    total += 2 + Math.max(0, length - 1);
    frames.push({ container, keys, next: 0, length, start });
  };
  open(value);
  while (frames.length > 0 && total <= limit) {
    const frame = frames[frames.length - 1] as SizeFrame;
    if (frame.next === frame.length) {
      frames.pop();
      const size = total - frame.start;
      if (cache && size >= CACHED_SIZE_MINIMUM && !mutable?.has(frame.container)) sizes.set(frame.container, size);
      continue;
    }
    const index = frame.next++;
    let child: unknown;
    if (frame.keys === undefined) child = (frame.container as unknown[])[index];
    else {
      const key = frame.keys[index] as string;
      total += key.length + 3; // quotes and colon
      child = (frame.container as Record<string, unknown>)[key];
    }
    if (typeof child !== 'object' || child === null) {
      total += leafSize(child);
      continue;
    }
    const childSize = remembered(child);
    if (childSize !== undefined) total += childSize;
    else open(child);
  }
  return { total, frames };
}

/**
 * The size of a value written as JSON, in characters (string escapes not counted), counted
 * without writing it and without recursion. The walk stops as soon as the count passes
 * `limit` and returns what it counted by then, a number greater than `limit`. Sizes of
 * containers are remembered by identity: state is never mutated, so a patched state is
 * measured again only along the paths the patch copied. Containers in `mutable` (copies a
 * patch is still writing to) are neither remembered nor looked up. `limit` must be finite
 * for a value that may hold a cycle.
 *
 * @example
 * if (measureJsonSize(snapshot, 10 * 1024 * 1024) > 10 * 1024 * 1024) refuse('snapshot too large');
 */
export function measureJsonSize(value: unknown, limit: number, mutable?: WeakSet<object>): number {
  if (typeof value !== 'object' || value === null) return leafSize(value);
  const known = mutable?.has(value) ? undefined : sizes.get(value);
  if (known !== undefined) return known;
  return walkJsonSize(value, limit, true, mutable).total;
}

/**
 * Where a plain JSON value's size, counted as `measureJsonSize` counts it, passes `limit`:
 * the dotted path of the entry being counted then (`''` for the value itself), or undefined
 * when the whole value fits. For an error that names where a value is too large.
 */
export function findJsonSizeOverflow(value: unknown, limit: number): string | undefined {
  if (typeof value !== 'object' || value === null) return leafSize(value) > limit ? '' : undefined;
  const { total, frames } = walkJsonSize(value, limit, false);
  if (total <= limit) return undefined;
  // A container opened by the crossing entry has counted none of its own entries yet.
  return frames
    .filter((frame) => frame.next > 0)
    .map((frame) => (frame.keys === undefined ? String(frame.next - 1) : (frame.keys[frame.next - 1] as string)))
    .join('.');
}
