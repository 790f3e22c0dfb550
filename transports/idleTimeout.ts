/** The default idle timeout of the SSE and WebSocket transports. */
export const DEFAULT_IDLE_TIMEOUT_MS = 60_000;

/** The longest delay a timer holds (2^31 - 1 ms): a longer one would fire at once. */
const MAX_TIMER_DELAY = 2_147_483_647;

/**
 * A transport's idle timeout in ms, or undefined when it is off: `0`, `Infinity`, and any
 * value a timer cannot hold.
 */
export function idleTimeoutOf(value: number | undefined): number | undefined {
  const timeout = value ?? DEFAULT_IDLE_TIMEOUT_MS;
  return timeout > 0 && timeout <= MAX_TIMER_DELAY ? timeout : undefined;
}
