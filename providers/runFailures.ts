import { AgentTransportError } from '../transports/AgentTransportError';
import { AgentProviderError } from './AgentProviderError';

/**
 * The errors `runAgentProvider` tells apart, since whose they are decides what the run
 * becomes. This one marks an error thrown by `onEvent`, `onCursor` or `onConnection`, so
 * it is rethrown as it is.
 */
export class ConsumerFailure {
  constructor(readonly error: unknown) {}
}

/** Marks an error of the transport's stream, the only kind a reconnect may follow. */
export class StreamFailure {
  constructor(readonly error: unknown) {}
}

/** Transport errors that say the connection itself was lost, not what the server answered. */
const CONNECTION_LOST: ReadonlySet<string> = new Set(['network_error', 'abnormal_close', 'timeout']);

/** Whether a transport error says the connection was lost (a drop), not what the server answered. */
export function isConnectionLost(error: unknown): boolean {
  return AgentTransportError.isInstance(error) && CONNECTION_LOST.has(error.code);
}

/**
 * A stream that dropped mid-answer and that this call cannot continue: the transport's
 * connection was lost (`network_error`, `abnormal_close`, `timeout`) after chunks arrived,
 * and the provider cannot resume it (not resumable, or no cursor yet). The run may still be
 * going on at the runtime: nothing says it failed.
 */
export class DroppedStream {
  constructor(readonly error: unknown) {}
}

/** A stream that cannot continue the run (a drop, a gap, a refused cursor): it is left as it is, no `run.failed` is made up. */
export function isUnrecoverable(error: unknown): boolean {
  if (error instanceof DroppedStream) return true;
  return AgentProviderError.isInstance(error) && (error.code === 'resume_gap' || error.code === 'invalid_cursor');
}
