import type { AgentTransport, AgentTransportKind } from './AgentTransport';

/**
 * Wraps a local runtime function as a transport: code in the same process that yields chunks.
 *
 * @example
 * const transport = createAsyncIterableTransport(async function* (request, signal) {
 *   for await (const token of model.stream(request.prompt, { signal })) yield token;
 * });
 */
export function createAsyncIterableTransport<Request, Chunk>(
  open: (request: Request, signal: AbortSignal) => AsyncIterable<Chunk>,
  options: { kind?: AgentTransportKind } = {},
): AgentTransport<Request, Chunk> {
  return { kind: options.kind ?? 'async-iterable', open };
}
