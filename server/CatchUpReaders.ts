/**
 * The bound on event-stream readers catching up: readers whose cursor is behind what their
 * session's feed holds read the log themselves, page by page, each with its own queue of
 * frames, so a thousand of them reading a long session from its start would cost a thousand
 * times that. At most `max` readers of the whole host read the log at once; a reader holds
 * its place (a `CatchUpPass`) from its first read of the log until it reaches the feed (or
 * the log's edge), and gives it back then or when its stream ends.
 */
export class CatchUpReaders {
  private active = 0;
  private readonly waiting = new Set<() => void>();

  constructor(readonly max: number) {
    if (!Number.isSafeInteger(max) || max < 1)
      throw new RangeError(`maxCatchUpReaders must be a positive integer, got ${max}`);
  }

  /** Readers catching up now. */
  get size(): number {
    return this.active;
  }

  /** A pass for one reader; it holds no place until `enter`. */
  pass(): CatchUpPass {
    return new CatchUpPass(this);
  }

  /** @internal Takes a place now, or says there is none. */
  tryTake(): boolean {
    if (this.active >= this.max) return false;
    this.active += 1;
    return true;
  }

  /** @internal Waits for a place, at most `timeoutMs` or until `signal` aborts; `false` when none came. */
  take(timeoutMs: number, signal: AbortSignal | undefined): Promise<boolean> {
    if (this.tryTake()) return Promise.resolve(true);
    if (timeoutMs <= 0 || signal?.aborted) return Promise.resolve(false);
    return new Promise<boolean>((resolve) => {
      const done = (taken: boolean) => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        this.waiting.delete(wake);
        resolve(taken);
      };
      // Woken when a place is given back: it is taken here, or by the next one waiting.
      const wake = () => {
        if (this.tryTake()) done(true);
      };
      const onAbort = () => done(false);
      const timer = setTimeout(onAbort, timeoutMs);
      signal?.addEventListener('abort', onAbort, { once: true });
      this.waiting.add(wake);
    });
  }

  /** @internal Gives a place back to the first reader waiting for one. */
  give(): void {
    this.active -= 1;
    for (const wake of this.waiting) {
      wake();
      if (this.active >= this.max) return;
    }
  }
}

/** One reader's place among the readers catching up. */
export class CatchUpPass {
  private held = false;

  constructor(private readonly readers: CatchUpReaders) {}

  get holds(): boolean {
    return this.held;
  }

  /**
   * Takes a place, when the pass does not hold one yet: at once (`timeoutMs` 0, a stream
   * opening) or waiting up to `timeoutMs`. Resolves `false` when there was none.
   */
  async enter(timeoutMs: number, signal?: AbortSignal): Promise<boolean> {
    if (this.held) return true;
    this.held = await this.readers.take(timeoutMs, signal);
    return this.held;
  }

  /** Gives the place back (the reader caught up, or its stream ended); harmless when it holds none. */
  leave(): void {
    if (!this.held) return;
    this.held = false;
    this.readers.give();
  }
}
