const EMPTY = 0;

/**
 * A set of event ids kept as 64-bit fingerprints in an open-addressing table. A set of
 * the id strings would keep every id of a long stream alive, and the garbage collector
 * would copy them again and again; this keeps two 32-bit numbers per id, side by side in
 * one typed array so that a probe touches one cache line, and allocates nothing per event.
 * Two ids collide with odds of about 1 in 2^64 per pair.
 */
export class EventIdFingerprints {
  /** Slot `i` is `[2i]` (the first hash, never 0 when used) and `[2i + 1]` (the second). */
  private slots = new Int32Array(2 * 1024);
  private count = 0;

  has(eventId: string): boolean {
    fingerprint(eventId);
    return this.find(hash[0] as number, hash[1] as number) >= 0;
  }

  add(eventId: string): void {
    this.tryAdd(eventId);
  }

  /** Adds the id and says whether it was new: one hash and one probe for the check and the insert. */
  tryAdd(eventId: string): boolean {
    if ((this.count + 1) * 4 > this.slots.length) this.grow();
    fingerprint(eventId);
    const high = hash[0] as number;
    const low = hash[1] as number;
    const slots = this.slots;
    const mask = (slots.length >> 1) - 1;
    let index = low & mask;
    // One probe both answers whether the id is there and finds its slot if it is not.
    while (slots[2 * index] !== EMPTY) {
      if (slots[2 * index] === high && slots[2 * index + 1] === low) return false;
      index = (index + 1) & mask;
    }
    slots[2 * index] = high;
    slots[2 * index + 1] = low;
    this.count += 1;
    return true;
  }

  /** Forgets an id again (a strict batch that failed). */
  delete(eventId: string): void {
    fingerprint(eventId);
    let index = this.find(hash[0] as number, hash[1] as number);
    if (index < 0) return;
    const slots = this.slots;
    const mask = (slots.length >> 1) - 1;
    // Backward-shift deletion keeps every probe sequence unbroken.
    let next = (index + 1) & mask;
    while (slots[2 * next] !== EMPTY) {
      const home = (slots[2 * next + 1] as number) & mask;
      const distanceNext = (next - home) & mask;
      const distanceHole = (index - home) & mask;
      if (distanceHole <= distanceNext) {
        slots[2 * index] = slots[2 * next] as number;
        slots[2 * index + 1] = slots[2 * next + 1] as number;
        index = next;
      }
      next = (next + 1) & mask;
    }
    slots[2 * index] = EMPTY;
    slots[2 * index + 1] = EMPTY;
    this.count -= 1;
  }

  private find(high: number, low: number): number {
    const slots = this.slots;
    const mask = (slots.length >> 1) - 1;
    let index = low & mask;
    while (slots[2 * index] !== EMPTY) {
      if (slots[2 * index] === high && slots[2 * index + 1] === low) return index;
      index = (index + 1) & mask;
    }
    return -1;
  }

  private grow(): void {
    const old = this.slots;
    const slots = new Int32Array(old.length * 2);
    const mask = (slots.length >> 1) - 1;
    for (let from = 0; from < old.length; from += 2) {
      const high = old[from] as number;
      if (high === EMPTY) continue;
      const low = old[from + 1] as number;
      let index = low & mask;
      while (slots[2 * index] !== EMPTY) index = (index + 1) & mask;
      slots[2 * index] = high;
      slots[2 * index + 1] = low;
    }
    this.slots = slots;
  }
}

/** The fingerprint of the last id hashed, in a shared pair so that hashing allocates nothing. */
const hash = new Int32Array(2);

/** Two independent 32-bit hashes of the id (FNV-1a and a multiply-xorshift); the first is never 0. */
function fingerprint(eventId: string): void {
  let first = 0x811c9dc5;
  let second = 0x9e3779b9 ^ eventId.length;
  for (let index = 0; index < eventId.length; index += 1) {
    const code = eventId.charCodeAt(index);
    first = Math.imul(first ^ code, 0x01000193);
    second = Math.imul(second ^ code, 0x5bd1e995);
    second ^= second >>> 15;
  }
  first |= 0;
  hash[0] = first === EMPTY ? 1 : first;
  hash[1] = second | 0;
}
