import { afterEach, describe, expect, it, vi } from 'vitest';
import { CatchUpReaders } from './CatchUpReaders';

describe('CatchUpReaders', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('gives at most max places; a pass that asks at once when none is free gets none', async () => {
    const readers = new CatchUpReaders(2);
    const [a, b, c] = [readers.pass(), readers.pass(), readers.pass()];
    expect(await a.enter(0)).toBe(true);
    expect(await a.enter(0)).toBe(true);
    expect(await b.enter(0)).toBe(true);
    expect(await c.enter(0)).toBe(false);
    expect(readers.size).toBe(2);
    a.leave();
    a.leave();
    expect(readers.size).toBe(1);
    expect(await c.enter(0)).toBe(true);
  });

  it('a pass that waits gets the place given back, in turn; one that waits too long or aborts gets none', async () => {
    vi.useFakeTimers();
    const readers = new CatchUpReaders(1);
    const holder = readers.pass();
    await holder.enter(0);
    const first = readers.pass().enter(1_000);
    const controller = new AbortController();
    const aborted = readers.pass().enter(1_000, controller.signal);
    const late = readers.pass().enter(100);
    controller.abort();
    expect(await aborted).toBe(false);
    await vi.advanceTimersByTimeAsync(100);
    expect(await late).toBe(false);
    holder.leave();
    expect(await first).toBe(true);
    expect(readers.size).toBe(1);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('refuses a max that is not a positive integer', () => {
    expect(() => new CatchUpReaders(0)).toThrow(RangeError);
  });
});
