import type { AgentCommand } from '../protocol/commandSchemas';
import { AGENT_EVENT_PROTOCOL, AGENT_EVENT_PROTOCOL_VERSION } from '../protocol/constants';
import type { AgentErrorInfo, AgentEvent } from '../protocol/eventSchemas';
import type { AgentTransport, AgentTransportKind } from '../transports/AgentTransport';
import { isAbortError } from '../transports/AgentTransportError';
import type {
  AgentCommandOptions,
  AgentProvider,
  AgentProviderCapabilities,
  AgentProviderContextOptions,
} from './AgentProvider';
import { type AgentRunEmitter, createAgentRunEmitter } from './createAgentRunEmitter';
import { toAgentErrorInfo } from './toAgentErrorInfo';

/** The context every provider built with `defineAgentProvider` maps chunks in: the run's emitter, and its own state. */
export interface AgentProviderRunContext {
  events: AgentRunEmitter;
}

/** What a provider writes itself; `defineAgentProvider` supplies the rest. */
export interface AgentProviderDefinition<Input, Request, Chunk, Context extends AgentProviderRunContext> {
  /** For logs and metadata only; never used to decide capabilities. */
  id: string;
  transport: AgentTransport<Request, Chunk>;
  /** `transports` defaults to the kind of `transport`. */
  capabilities: Omit<AgentProviderCapabilities, 'transports'> & { transports?: readonly AgentTransportKind[] };
  /** The per-run context, around the emitter made for the run. */
  createContext(events: AgentRunEmitter, options: AgentProviderContextOptions): Context;
  start(input: Input, context: Context): readonly AgentEvent[];
  prepareRequest(input: Input, context: Context): Request;
  transformChunk(chunk: Chunk, context: Context): readonly AgentEvent[];
  /**
   * The error the run fails with when the stream ends before the run did; whatever is
   * still open fails with it.
   */
  incompleteStream: AgentErrorInfo;
  /**
   * After the stream ended, before what is still open is failed with `incompleteStream`:
   * the events that end the run normally when the wire format allows it, or close
   * provider-side streams.
   */
  finish?(context: Context): readonly AgentEvent[];
  /**
   * Whether an error is worth retrying (reconnecting). Given, it is the `classifyError`
   * and the `retryable` of the failed events; missing, no error is retried and failed
   * events carry no `retryable`.
   */
  isRetryable?(error: unknown, context: Context): boolean;
  executeCommand?(command: AgentCommand, options: AgentCommandOptions): AsyncIterable<AgentEvent>;
}

/**
 * Builds an AgentProvider from what is particular to one wire format, and writes the
 * parts every provider shares once: the protocol, the capabilities' transports, the run
 * emitter in the context, `flush` (fail what the stream left open) and `transformError`
 * (an abort cancels what is open and the run; any other error fails them, `retryable` as
 * `isRetryable` says).
 *
 * @example
 * const provider = defineAgentProvider({
 *   id: 'echo',
 *   transport: createAsyncIterableTransport(echoRuntime),
 *   capabilities: { eventTypes: eventTypesOf(['run', 'message']) },
 *   createContext: (events) => ({ events }),
 *   start: (input, { events }) => [events.emit('run.started', { input })],
 *   prepareRequest: (input) => input,
 *   transformChunk: (chunk, { events }) => [...],
 *   incompleteStream: { message: 'The echo ended early', code: 'incomplete_stream' },
 * });
 */
export function defineAgentProvider<Input, Request, Chunk, Context extends AgentProviderRunContext>(
  definition: AgentProviderDefinition<Input, Request, Chunk, Context>,
): AgentProvider<Input, Request, Chunk, Context> {
  const { transport, isRetryable, finish, incompleteStream } = definition;
  const provider: AgentProvider<Input, Request, Chunk, Context> = {
    id: definition.id,
    protocol: { name: AGENT_EVENT_PROTOCOL, version: AGENT_EVENT_PROTOCOL_VERSION },
    capabilities: { ...definition.capabilities, transports: definition.capabilities.transports ?? [transport.kind] },
    transport,
    createContext: (options) => definition.createContext(createAgentRunEmitter(options), options),
    start: (input, context) => definition.start(input, context),
    prepareRequest: (input, context) => definition.prepareRequest(input, context),
    transformChunk: (chunk, context) => definition.transformChunk(chunk, context),
    flush: (context) => {
      const finished = finish?.(context) ?? [];
      const closing = context.events.close({ type: 'failed', error: incompleteStream });
      return finished.length === 0 ? closing : [...finished, ...closing];
    },
    transformError: (error, context) =>
      context.events.close(
        isAbortError(error)
          ? { type: 'cancelled', reason: 'aborted' }
          : { type: 'failed', error: toAgentErrorInfo(error, isRetryable?.(error, context)) },
      ),
  };
  if (isRetryable !== undefined)
    provider.classifyError = (error, context) => ({ retryable: isRetryable(error, context) });
  const { executeCommand } = definition;
  if (executeCommand !== undefined) provider.executeCommand = (command, options) => executeCommand(command, options);
  return provider;
}
