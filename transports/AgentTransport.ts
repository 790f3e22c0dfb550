/** Built-in transport kinds; custom transports use a namespaced kind such as `company.websocket`. */
export type AgentTransportKind = 'sse' | 'websocket' | 'async-iterable' | 'fixture' | `${string}.${string}`;

/**
 * Executes a request and yields chunks. A transport knows bytes and frames, never
 * messages or tools: what the chunks mean is the provider's business.
 *
 * @example
 * const transport: AgentTransport<{ prompt: string }, string> = {
 *   kind: 'async-iterable',
 *   open: (request, signal) => model.stream(request.prompt, { signal }),
 * };
 */
export interface AgentTransport<Request, Chunk> {
  readonly kind: AgentTransportKind;
  open(request: Request, signal: AbortSignal): AsyncIterable<Chunk>;
  /** The position a chunk leaves the stream at, to resume from after a dropped connection. */
  getCursor?(chunk: Chunk): string | undefined;
  /** Reopens the stream after `cursor`: the chunks that follow it, and no earlier ones. */
  resume?(request: Request, cursor: string, signal: AbortSignal): AsyncIterable<Chunk>;
}
