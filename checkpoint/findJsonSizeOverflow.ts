interface Frame {
  container: object;
  keys: string[] | undefined;
  next: number;
  length: number;
}

function leafSize(value: unknown): number {
  if (typeof value === 'string') return value.length + 2;
  if (typeof value === 'number') return String(value).length;
  if (typeof value === 'boolean') return value ? 4 : 5;
  return 4;
}

function enter(container: object): Frame {
  const keys = Array.isArray(container) ? undefined : Object.keys(container);
  const length = keys === undefined ? (container as unknown[]).length : keys.length;
  return { container, keys, next: 0, length };
}

/** Brackets, and a separator between entries. */
function containerSize(frame: Frame): number {
  return 2 + Math.max(0, frame.length - 1);
}

/** The path of the entry each frame is at: the one being counted. */
function pathOf(frames: readonly Frame[]): string {
  return frames
    .map((frame) => {
      const index = frame.next - 1;
      return frame.keys === undefined ? String(index) : (frame.keys[index] as string);
    })
    .join('.');
}

/**
 * Where a plain JSON value's size, counted as `measureJsonSize` counts it (characters, escapes
 * not counted), passes `limit`: the dotted path of the entry being counted then (`''` for the
 * value itself), or undefined when the whole value fits. Without recursion; only called once
 * `measureJsonSize` said the value is too large, to name a path in the error.
 */
export function findJsonSizeOverflow(value: unknown, limit: number): string | undefined {
  if (typeof value !== 'object' || value === null) return leafSize(value) > limit ? '' : undefined;
  const frames = [enter(value)];
  let total = containerSize(frames[0] as Frame);
  if (total > limit) return '';
  while (frames.length > 0) {
    const frame = frames[frames.length - 1] as Frame;
    if (frame.next === frame.length) {
      frames.pop();
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
    let next: Frame | undefined;
    if (typeof child === 'object' && child !== null) {
      next = enter(child);
      total += containerSize(next);
    } else total += leafSize(child);
    if (total > limit) return pathOf(frames);
    if (next !== undefined) frames.push(next);
  }
  return undefined;
}
