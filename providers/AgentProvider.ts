import type { AgentState } from '../machines/agentState';
import type { AgentCommand, AgentCommandType } from '../protocol/commandSchemas';
import { AGENT_EVENT_PROTOCOL } from '../protocol/constants';
import type { AgentEvent, AgentEventType } from '../protocol/eventSchemas';
import type { AgentTransport, AgentTransportKind } from '../transports/AgentTransport';

export interface AgentProviderCapabilities {
  /** Every event type the provider can emit; the runner refuses any other. */
  eventTypes: readonly AgentEventType[];
  /** The transport kinds the provider works over; its own transport must be one of them. */
  transports: readonly AgentTransportKind[];
  /** Commands `executeCommand` accepts. Missing means none. */
  commands?: readonly AgentCommandType[];
  /** Whether a run can continue from a cursor. Missing means no. */
  resumable?: boolean;
  /**
   * Whether one stream may carry more than one run (AG-UI: a RUN_STARTED after RUN_FINISHED):
   * once the run ended, the provider may start another with a `run.started` under a new run
   * id, and the runner follows that run. Missing means no: every event is of the run started.
   */
  followOnRuns?: boolean;
  extensions?: Readonly<Record<`${string}.${string}`, unknown>>;
}

/** The user's answer to one approval a run ended waiting on (an AG-UI interrupt). */
export interface AgentApprovalAnswer {
  approvalId: string;
  /** `resolved` with the user's decision, or `cancelled`: the user dismissed it. */
  status: 'resolved' | 'cancelled';
  decision?: 'approved' | 'rejected' | 'modified';
  data?: unknown;
}

/**
 * What a run continues: a run of the same session that ended waiting for input. The
 * results of its client-executed tools are already in `history`; the answers to its
 * approvals are here. A continuing run sends no new user message: the provider's `start`
 * emits no prompt, and its request carries the history (and, for AG-UI, `resume` entries).
 */
export interface AgentRunContinuation {
  /** The waiting run; `run.started` names it as `continuesRunId`. */
  runId: string;
  approvals: readonly AgentApprovalAnswer[];
}

/** What a provider gets to create the per-run context in which it maps chunks. */
export interface AgentProviderContextOptions {
  sessionId: string;
  runId: string;
  /** The sequence the run's events continue after (0 for a new run; the saved one on resume). */
  initialSequence: number;
  now: () => number;
  signal: AbortSignal;
  /**
   * The conversation so far: the session's AgentState as the run starts, before its own
   * events. Providers whose wire format takes the whole conversation (OpenAI-compatible,
   * Anthropic, AG-UI) build their request's messages from it, unless the input gives them.
   */
  history?: AgentState | undefined;
  /** Given when this run continues one that ended waiting for input. */
  continuation?: AgentRunContinuation | undefined;
}

export interface AgentCommandOptions {
  signal: AbortSignal;
  /** The run's last sequence when the command was created; returned events come after it. */
  initialSequence: number;
  now?: () => number;
}

/**
 * The adapter between one runtime's wire format and the event protocol.
 *
 * @example
 * const provider: AgentProvider<{ prompt: string }, Request, Chunk, Context> = {
 *   id: 'my-runtime',
 *   protocol: { name: 'agent-event', version: '0.1' },
 *   capabilities: { eventTypes: ['run.started', 'run.completed', ...], transports: ['sse'] },
 *   transport: createSSETransport({ url: '/api/agent' }),
 *   createContext: (options) => ({ events: createAgentEventFactory(options) }),
 *   start: (input, context) => [context.events.create('run.started', { input })],
 *   prepareRequest: (input) => ({ prompt: input.prompt }),
 *   transformChunk: (chunk, context) => [...],
 *   flush: (context) => [...],
 *   transformError: (error, context) => [...],
 * };
 */
export interface AgentProvider<Input, Request, Chunk, Context = unknown> {
  /** For logs and metadata only; never used to decide capabilities. */
  readonly id: string;
  readonly protocol: { readonly name: 'agent-event'; readonly version: '0.1' };
  readonly capabilities: AgentProviderCapabilities;
  readonly transport: AgentTransport<Request, Chunk>;

  createContext(options: AgentProviderContextOptions): Context;
  /** The run's first events: `run.started`, the user's message. Skipped on resume. */
  start(input: Input, context: Context): readonly AgentEvent[];
  prepareRequest(input: Input, context: Context): Request;
  transformChunk(chunk: Chunk, context: Context): readonly AgentEvent[];
  /** After the stream ended: close what is open and end the run. */
  flush(context: Context): readonly AgentEvent[];
  /** After an error or an abort: fail or cancel what is open, then end the run. */
  transformError(error: unknown, context: Context): readonly AgentEvent[];
  /** Whether an error is worth retrying (reconnecting); missing means never. */
  classifyError?(error: unknown, context: Context): { retryable: boolean };
  executeCommand?(command: AgentCommand, options: AgentCommandOptions): AsyncIterable<AgentEvent>;
}

/**
 * A provider of any input, request, chunk and context. Every AgentProvider is one: its
 * methods take their parameters bivariantly, so `unknown` stands for any type here.
 */
export type AnyAgentProvider = AgentProvider<unknown, unknown, unknown, unknown>;

/**
 * Whether a value is an AgentProvider: decided by `protocol.name === 'agent-event'` only,
 * never by class, id or method shape, so providers from another copy of the package work.
 */
export function isAgentProvider(value: unknown): value is AnyAgentProvider {
  if (typeof value !== 'object' || value === null) return false;
  const protocol = (value as { protocol?: unknown }).protocol;
  return (
    typeof protocol === 'object' && protocol !== null && (protocol as { name?: unknown }).name === AGENT_EVENT_PROTOCOL
  );
}
