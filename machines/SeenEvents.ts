import { EventIdFingerprints } from './EventIdFingerprints';

/** Base-36 counters of up to 10 digits stay below 2^53, so they are exact as numbers. */
const MAX_COUNTER_DIGITS = 10;

/**
 * The counter of an id that is `prefix` followed by a number in canonical base 36 (digits
 * and lower-case letters, no leading zero), or -1. Canonical, so that two different ids
 * never give the same number.
 */
function counterOf(eventId: string, prefix: string): number {
  const length = eventId.length - prefix.length;
  if (length < 1 || length > MAX_COUNTER_DIGITS || !eventId.startsWith(prefix)) return -1;
  let counter = 0;
  for (let index = prefix.length; index < eventId.length; index += 1) {
    const code = eventId.charCodeAt(index);
    let digit: number;
    if (code >= 48 && code <= 57) digit = code - 48;
    else if (code >= 97 && code <= 122) digit = code - 87;
    else return -1;
    if (digit === 0 && counter === 0 && length > 1) return -1;
    counter = counter * 36 + digit;
  }
  return counter;
}

/** The prefix of an id shaped `<prefix>-<base-36 counter>`, the shape event factories give, up to and with the last dash. */
function counterPrefixOf(eventId: string): string | undefined {
  const dash = eventId.lastIndexOf('-');
  if (dash < 0) return undefined;
  const prefix = eventId.slice(0, dash + 1);
  return counterOf(eventId, prefix) >= 0 ? prefix : undefined;
}

/**
 * The event ids a run has seen, for idempotency. Ids shaped like the run's first one,
 * a prefix and a base-36 counter (what `createAgentEventFactory` makes), are kept as
 * ranges of counters: in a stream they arrive in order, so checking and recording one
 * compares it with the last range and touches no table. Any other id, and a counter
 * that arrives below the highest one seen, goes to a table of fingerprints. The answers
 * are those of a set of the id strings.
 */
export class SeenEvents {
  private readonly others = new EventIdFingerprints();
  /** `undefined` until the first id is seen; `null` when that id has no counter shape. */
  private prefix: string | null | undefined;
  /** Sorted, disjoint ranges `[starts[i], ends[i]]` of the counters seen, the last one open to growth. */
  private readonly starts: number[] = [];
  private readonly ends: number[] = [];
  /** The highest counter the table holds (-1: none), so an id above it needs no table probe. */
  private highestLate = -1;

  has(eventId: string): boolean {
    const counter = this.counter(eventId);
    if (counter < 0) return this.others.has(eventId);
    if (counter <= this.highest() && this.rangeOf(counter) >= 0) return true;
    return counter <= this.highestLate && this.others.has(eventId);
  }

  add(eventId: string): void {
    this.tryAdd(eventId);
  }

  /** Adds the id and says whether it was new. */
  tryAdd(eventId: string): boolean {
    const counter = this.counter(eventId);
    if (counter < 0) return this.others.tryAdd(eventId);
    const highest = this.highest();
    if (counter <= highest) {
      // A repeat, or a counter that came late: the table keeps those.
      if (this.rangeOf(counter) >= 0) return false;
      if (counter > this.highestLate) this.highestLate = counter;
      return this.others.tryAdd(eventId);
    }
    // Above every range; only the table may hold it, after deletions lowered the ranges.
    if (counter <= this.highestLate && this.others.has(eventId)) return false;
    if (counter === highest + 1 && highest >= 0) this.ends[this.ends.length - 1] = counter;
    else {
      this.starts.push(counter);
      this.ends.push(counter);
    }
    return true;
  }

  /** Forgets an id again (a strict batch that failed). */
  delete(eventId: string): void {
    const counter = this.counter(eventId);
    const range = counter < 0 ? -1 : this.rangeOf(counter);
    if (range < 0) {
      this.others.delete(eventId);
      return;
    }
    const start = this.starts[range] as number;
    const end = this.ends[range] as number;
    if (start === end) {
      this.starts.splice(range, 1);
      this.ends.splice(range, 1);
    } else if (counter === start) this.starts[range] = start + 1;
    else if (counter === end) this.ends[range] = end - 1;
    else {
      this.ends[range] = counter - 1;
      this.starts.splice(range + 1, 0, counter + 1);
      this.ends.splice(range + 1, 0, end);
    }
  }

  private highest(): number {
    return this.ends.length === 0 ? -1 : (this.ends[this.ends.length - 1] as number);
  }

  private counter(eventId: string): number {
    if (this.prefix === undefined) this.prefix = counterPrefixOf(eventId) ?? null;
    return this.prefix === null ? -1 : counterOf(eventId, this.prefix);
  }

  /** The index of the range holding the counter, or -1: a binary search. */
  private rangeOf(counter: number): number {
    let low = 0;
    let high = this.ends.length - 1;
    while (low <= high) {
      const middle = (low + high) >> 1;
      if ((this.ends[middle] as number) < counter) low = middle + 1;
      else if ((this.starts[middle] as number) > counter) high = middle - 1;
      else return middle;
    }
    return -1;
  }
}
