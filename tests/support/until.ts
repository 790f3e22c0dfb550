/**
 * Waits until `condition` holds, checking every 2 ms; after `timeoutMs` (15 s: generous, so a
 * loaded machine only makes the wait longer, never fails it) it throws, naming `what` it waited for.
 */
export async function until(condition: () => boolean, what: string, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`Timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
}
