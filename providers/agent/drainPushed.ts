/**
 * Runs `work`, which pushes values as it goes (from concurrent tasks too), and yields them
 * in the order they were pushed while it runs; returns what `work` resolves with, or throws
 * what it rejects with, once every value pushed before has been yielded. A consumer that
 * resumes the generator has handled the value before: when this returns, all of them were.
 *
 * @example
 * const outcome = yield* drainPushed((push) => runTools(calls, push));
 */
export async function* drainPushed<Value, Result>(
  work: (push: (value: Value) => void) => Promise<Result>,
): AsyncGenerator<Value, Result, undefined> {
  const queue: Value[] = [];
  let wake: (() => void) | undefined;
  let outcome: { ok: true; value: Result } | { ok: false; error: unknown } | undefined;
  const push = (value: Value) => {
    queue.push(value);
    wake?.();
  };
  work(push).then(
    (value) => {
      outcome = { ok: true, value };
      wake?.();
    },
    (error: unknown) => {
      outcome = { ok: false, error };
      wake?.();
    },
  );
  let next = 0;
  for (;;) {
    while (next < queue.length) {
      const value = queue[next] as Value;
      next += 1;
      yield value;
    }
    queue.splice(0, next);
    next = 0;
    if (outcome !== undefined && queue.length === 0) break;
    await new Promise<void>((resolve) => {
      wake = resolve;
      // Pushed or settled between the check and here: go on at once.
      if (queue.length > 0 || outcome !== undefined) resolve();
    });
    wake = undefined;
  }
  if (!outcome.ok) throw outcome.error;
  return outcome.value;
}
