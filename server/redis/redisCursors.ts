const STREAM_ID = /^(\d+)-(\d+)$/;
const MAX_ID_PART = 2n ** 64n - 1n;

/**
 * A cursor in canonical stream-id form (`<ms>-<seq>`, no leading zeros), or `undefined` when
 * the log could never have given it: malformed, out of the 64-bit range, `0-0` (Redis never
 * gives it) or the largest id (nothing can come after it).
 */
export function canonicalCursor(cursor: string): string | undefined {
  const match = STREAM_ID.exec(cursor);
  if (match === null) return undefined;
  const milliseconds = BigInt(match[1]!);
  const sequence = BigInt(match[2]!);
  if (milliseconds > MAX_ID_PART || sequence > MAX_ID_PART) return undefined;
  if (milliseconds === 0n && sequence === 0n) return undefined;
  if (milliseconds === MAX_ID_PART && sequence === MAX_ID_PART) return undefined;
  return `${milliseconds}-${sequence}`;
}

/** Orders two canonical cursors: milliseconds, then sequence, compared as numbers. */
export function compareCursors(left: string, right: string): number {
  const [leftMilliseconds = '', leftSequence = ''] = left.split('-');
  const [rightMilliseconds = '', rightSequence = ''] = right.split('-');
  return compareDigits(leftMilliseconds, rightMilliseconds) || compareDigits(leftSequence, rightSequence);
}

function compareDigits(left: string, right: string): number {
  if (left.length !== right.length) return left.length - right.length;
  return left < right ? -1 : left > right ? 1 : 0;
}
