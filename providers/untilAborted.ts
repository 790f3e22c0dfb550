/** What `untilAborted` rejects with when the signal aborted first. */
export const ABORTED = Symbol('aborted');

/**
 * `work`, unless `signal` aborts first: then the result rejects with `ABORTED` at once, even
 * when `work` never settles (a transport that does not answer its signal), and `work` is left
 * to end by itself, its outcome ignored. One race per connection, not per chunk: a promise or
 * an abort listener per iterator step costs a large share of the pipeline's time per event.
 */
export function untilAborted<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) {
    work.catch(() => undefined);
    return Promise.reject(ABORTED);
  }
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(ABORTED);
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
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
