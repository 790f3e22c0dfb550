const DECIMAL = /^\d+$/;

/** Compares two decimal integer strings by value, however long: -1, 0 or 1. */
function compareDecimal(left: string, right: string): number {
  const a = left.replace(/^0+(?=\d)/, '');
  const b = right.replace(/^0+(?=\d)/, '');
  if (a.length !== b.length) return a.length < b.length ? -1 : 1;
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * The cursors of the chunks one run call delivered, so a resumed stream that sends a chunk
 * again does not have it applied twice. When the cursor a connection resumed from is a
 * decimal integer (an event log's offset, say), a chunk whose decimal cursor is not past it
 * is a repeat too, though this call never saw it (it came before a restore).
 *
 * @example
 * const cursors = new DeliveredCursors();
 * cursors.resumeFrom('41');
 * cursors.isRepeat('40'); // true
 */
export class DeliveredCursors {
  private readonly delivered = new Set<string>();
  private floor: string | undefined;

  /** A new connection resumed after `cursor` (undefined: opened from the start). */
  resumeFrom(cursor: string | undefined): void {
    this.floor = cursor !== undefined && DECIMAL.test(cursor) ? cursor : undefined;
  }

  isRepeat(cursor: string): boolean {
    if (this.delivered.has(cursor)) return true;
    return this.floor !== undefined && DECIMAL.test(cursor) && compareDecimal(cursor, this.floor) <= 0;
  }

  add(cursor: string): void {
    this.delivered.add(cursor);
  }
}
