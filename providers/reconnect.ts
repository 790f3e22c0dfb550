/**
 * How `runAgentProvider` reconnects a stream that broke with an error the provider
 * classifies as retryable. Each attempt waits a random time between 0 and
 * `min(maxDelay, initialDelay * 2 ** (attempt - 1))` ("full jitter"), so clients
 * dropped together do not come back together. The count starts over once a connection
 * delivers a chunk: the budget bounds consecutive failures, not a long run's breaks.
 * The names are the seed's (seed 003 §11.1); times are in milliseconds.
 */
export interface AgentReconnectOptions {
  /** Reconnect attempts after a break, before the run fails. Default 3. */
  maxAttempts?: number;
  /** The bound of the first wait, doubled at each attempt. Default 500 ms. */
  initialDelay?: number;
  /** The largest bound of a wait. Default 5000 ms. */
  maxDelay?: number;
}

/**
 * The connection of a run's stream, as it changes. A call to `runAgentProvider` that got
 * as far as connecting ends with exactly one of `closed`, `failed` or `unrecoverable`.
 *
 * - `connecting`: the transport is asked to open (`attempt` 0) or to reconnect (`attempt` 1,
 *   2, ..., counted since a connection last delivered a chunk).
 * - `connected`: the first chunk of that connection arrived.
 * - `reconnecting`: the stream broke with a retryable `error`; the runner waits `delayMs`, then
 *   connects again (`connecting` with the same `attempt`).
 * - `failed`: the run failed: the budget is spent, or the error is not retryable (the run ends `run.failed`).
 * - `unrecoverable`: the stream cannot continue the run (a sequence gap, a cursor the server
 *   refused, or a connection lost mid-answer that cannot be resumed); no `run.failed` is made
 *   up, the AgentState is as it was.
 * - `closed`: the stream ended, or the run was aborted, or the consumer threw.
 */
export type AgentConnectionChange =
  | { type: 'connecting'; attempt: number }
  | { type: 'connected' }
  | { type: 'reconnecting'; attempt: number; delayMs: number; error: unknown }
  | { type: 'unrecoverable'; error: unknown }
  | { type: 'failed'; error: unknown }
  | { type: 'closed' };

export const DEFAULT_RECONNECT: Required<AgentReconnectOptions> = {
  maxAttempts: 3,
  initialDelay: 500,
  maxDelay: 5000,
};

/** The options with their defaults, or undefined when reconnecting is off. */
export function reconnectPolicy(
  options: false | AgentReconnectOptions | undefined,
): Required<AgentReconnectOptions> | undefined {
  if (options === false) return undefined;
  return {
    maxAttempts: options?.maxAttempts ?? DEFAULT_RECONNECT.maxAttempts,
    initialDelay: options?.initialDelay ?? DEFAULT_RECONNECT.initialDelay,
    maxDelay: options?.maxDelay ?? DEFAULT_RECONNECT.maxDelay,
  };
}

/**
 * The wait before reconnect attempt `attempt` (from 1): full jitter under an exponential bound.
 *
 * @example
 * backoffDelay(3, { maxAttempts: 3, initialDelay: 500, maxDelay: 5000 }, () => 0.5); // 1000
 */
export function backoffDelay(attempt: number, policy: Required<AgentReconnectOptions>, random: () => number): number {
  const bound = Math.min(policy.maxDelay, policy.initialDelay * 2 ** (attempt - 1));
  return Math.floor(Math.max(0, Math.min(1, random())) * bound);
}

/** Waits `ms`, or rejects with the signal's reason as soon as it aborts. */
export function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) {
      reject(signal.reason);
      return;
    }
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}
