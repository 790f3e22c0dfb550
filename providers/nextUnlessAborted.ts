/** What `nextUnlessAborted` rejects with when the signal aborted first. */
export const ABORTED = Symbol('aborted');

/** The iterator's next step, or a rejection with `ABORTED` as soon as `signal` aborts. */
export function nextUnlessAborted<Chunk>(
  iterator: AsyncIterator<Chunk>,
  signal: AbortSignal,
): Promise<IteratorResult<Chunk>> {
  if (signal.aborted) return Promise.reject(ABORTED);
  return new Promise((resolve, reject) => {
    const onAbort = () => reject(ABORTED);
    signal.addEventListener('abort', onAbort, { once: true });
    iterator.next().then(
      (step) => {
        signal.removeEventListener('abort', onAbort);
        resolve(step);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}

/** Ends an iteration the runner stops early, as `for await` would; the error that stopped it wins. */
export async function closeIterator(iterator: AsyncIterator<unknown>): Promise<void> {
  try {
    await iterator.return?.();
  } catch {
    // The error that stopped the iteration is the one to report.
  }
}
