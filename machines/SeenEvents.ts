const EMPTY = 0;

/**
 * The event ids a run has seen, for idempotency, kept as 64-bit fingerprints in an
 * open-addressing table of typed arrays. A set of the id strings would keep every id of a
 * long stream alive, and the garbage collector would copy them again and again; this keeps
 * two 32-bit numbers per id and allocates nothing per event. Two ids collide with odds of
 * about 1 in 2^64 per pair.
 */
export class SeenEvents {
  private high = new Int32Array(1024);
  private low = new Int32Array(1024);
  private count = 0;

  has(eventId: string): boolean {
    const [high, low] = fingerprint(eventId);
    return this.find(high, low) >= 0;
  }

  add(eventId: string): void {
    this.tryAdd(eventId);
  }

  /** Adds the id and says whether it was new: one hash and one probe for the check and the insert. */
  tryAdd(eventId: string): boolean {
    if ((this.count + 1) * 2 > this.high.length) this.grow();
    const [high, low] = fingerprint(eventId);
    const table = this.high;
    const mask = table.length - 1;
    let index = low & mask;
    // One probe both answers whether the id is there and finds its slot if it is not.
    while (table[index] !== EMPTY) {
      if (table[index] === high && this.low[index] === low) return false;
      index = (index + 1) & mask;
    }
    table[index] = high;
    this.low[index] = low;
    this.count += 1;
    return true;
  }

  /** Forgets an id again (a strict batch that failed). */
  delete(eventId: string): void {
    const [high, low] = fingerprint(eventId);
    let index = this.find(high, low);
    if (index < 0) return;
    const mask = this.high.length - 1;
    // Backward-shift deletion keeps every probe sequence unbroken.
    let next = (index + 1) & mask;
    while (this.high[next] !== EMPTY) {
      const home = (this.low[next] as number) & mask;
      const distanceNext = (next - home) & mask;
      const distanceHole = (index - home) & mask;
      if (distanceHole <= distanceNext) {
        this.high[index] = this.high[next] as number;
        this.low[index] = this.low[next] as number;
        index = next;
      }
      next = (next + 1) & mask;
    }
    this.high[index] = EMPTY;
    this.low[index] = EMPTY;
    this.count -= 1;
  }

  private find(high: number, low: number): number {
    const mask = this.high.length - 1;
    let index = low & mask;
    while (this.high[index] !== EMPTY) {
      if (this.high[index] === high && this.low[index] === low) return index;
      index = (index + 1) & mask;
    }
    return -1;
  }

  private insert(high: number, low: number): void {
    const mask = this.high.length - 1;
    let index = low & mask;
    while (this.high[index] !== EMPTY) index = (index + 1) & mask;
    this.high[index] = high;
    this.low[index] = low;
  }

  private grow(): void {
    const high = this.high;
    const low = this.low;
    this.high = new Int32Array(high.length * 2);
    this.low = new Int32Array(low.length * 2);
    for (let index = 0; index < high.length; index += 1) {
      if (high[index] !== EMPTY) this.insert(high[index] as number, low[index] as number);
    }
  }
}

const result: [number, number] = [0, 0];

/** Two independent 32-bit hashes of the id (FNV-1a and a multiply-xorshift); the first is never 0. */
function fingerprint(eventId: string): [number, number] {
  let first = 0x811c9dc5;
  let second = 0x9e3779b9 ^ eventId.length;
  for (let index = 0; index < eventId.length; index += 1) {
    const code = eventId.charCodeAt(index);
    first = Math.imul(first ^ code, 0x01000193);
    second = Math.imul(second ^ code, 0x5bd1e995);
    second ^= second >>> 15;
  }
  first |= 0;
  result[0] = first === EMPTY ? 1 : first;
  result[1] = second | 0;
  return result;
}
