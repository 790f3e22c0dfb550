import type { AgentState } from '../../machines/agentState';
import { createAgentStore } from '../../machines/createAgentStore';
import type { AgentEvent } from '../../protocol/eventSchemas';
import type { AgentTransport } from '../../transports/AgentTransport';
import { AgentTransportError } from '../../transports/AgentTransportError';
import type { AgentProvider } from '../AgentProvider';
import { type AgentRunResult, type RunAgentProviderOptions, runAgentProvider } from '../runAgentProvider';
import { type AgentProviderValidationIssue, validateAgentProviderEvents } from './validateAgentProviderEvents';

export interface AgentProviderFixtureRun {
  result: AgentRunResult;
  events: AgentEvent[];
  state: AgentState;
  validation: AgentProviderValidationIssue[];
  /** Entities still open at the end (tool calls and approvals the run listed as pending do not count). */
  activeEntities: string[];
}

const ACTIVE_STATUSES = new Set(['streaming', 'streaming_arguments', 'running', 'waiting', 'open']);

/** The keys of entities that a finished run should not have left open (what it listed as pending is fine). */
export function findActiveEntities(state: AgentState): string[] {
  const active: string[] = [];
  for (const container of ['messages', 'reasoning', 'toolCalls', 'approvals', 'tasks', 'artifacts'] as const) {
    for (const [key, entity] of Object.entries(
      state[container] as Record<string, { status: string; runId: string; id: string }>,
    )) {
      const run = state.runs[entity.runId];
      const pending =
        (container === 'toolCalls' &&
          (entity.status === 'awaiting_execution' || entity.status === 'running') &&
          run?.pendingToolCallIds?.includes(entity.id)) ||
        (container === 'approvals' && entity.status === 'waiting' && run?.pendingApprovalIds?.includes(entity.id));
      if (!pending && (ACTIVE_STATUSES.has(entity.status) || entity.status === 'awaiting_execution')) active.push(key);
    }
  }
  return active;
}

/** A provider identical to `provider` but for its transport. */
export function withTransport<Input, Request, Chunk, Context>(
  provider: AgentProvider<Input, Request, Chunk, Context>,
  transport: AgentTransport<Request, Chunk>,
): AgentProvider<Input, Request, Chunk, Context> {
  return Object.create(provider, { transport: { value: transport, enumerable: true } });
}

/** Wraps a transport so that something happens right after its first chunk (an abort, a failure). */
export function afterFirstChunk<Request, Chunk>(
  transport: AgentTransport<Request, Chunk>,
  then: () => void,
): AgentTransport<Request, Chunk> {
  return {
    kind: transport.kind,
    async *open(request, signal) {
      let first = true;
      for await (const chunk of transport.open(request, signal)) {
        yield chunk;
        if (first) {
          first = false;
          then();
        }
      }
    },
  };
}

/**
 * Wraps a transport so that its stream breaks after its first chunk with an error the
 * provider's `transformError` must turn into a failed run (a frame it cannot read). A lost
 * connection would not do: mid-answer, the runner leaves that run to the connection state
 * (`unrecoverable`), without a `run.failed`.
 */
export function failingAfterFirstChunk<Request, Chunk>(
  transport: AgentTransport<Request, Chunk>,
): AgentTransport<Request, Chunk> {
  return {
    kind: transport.kind,
    async *open(request, signal) {
      for await (const chunk of transport.open(request, signal)) {
        yield chunk;
        throw new AgentTransportError('invalid_frame', 'The stream broke (contract test)');
      }
    },
  };
}

/**
 * Runs one input through a provider into a fresh store and reports what happened: the
 * run's outcome, its events, the final AgentState, the validator's issues, and entities
 * left open.
 *
 * @example
 * const run = await runAgentProviderFixture(provider, { prompt: 'hi' });
 * expect(run.validation).toEqual([]);
 * expect(run.state.runs['contract-run'].status).toBe('completed');
 */
export async function runAgentProviderFixture<Input, Request, Chunk, Context>(
  provider: AgentProvider<Input, Request, Chunk, Context>,
  input: Input,
  options: {
    signal?: AbortSignal;
    sessionId?: string;
    runId?: string;
    /** How the runner reconnects a dropped stream; default the runner's own. */
    reconnect?: RunAgentProviderOptions<Input, Request, Chunk, Context>['reconnect'];
  } = {},
): Promise<AgentProviderFixtureRun> {
  const store = createAgentStore();
  const events: AgentEvent[] = [];
  try {
    const result = await runAgentProvider({
      provider,
      input,
      sessionId: options.sessionId ?? 'contract-session',
      runId: options.runId ?? 'contract-run',
      ...(options.signal ? { signal: options.signal } : {}),
      ...(options.reconnect === undefined ? {} : { reconnect: options.reconnect }),
      onEvent: (event) => {
        events.push(event);
        store.dispatch(event);
      },
    });
    const state = store.getSnapshot();
    return {
      result,
      events,
      state,
      validation: validateAgentProviderEvents(provider.capabilities, events),
      activeEntities: findActiveEntities(state),
    };
  } finally {
    store.destroy();
  }
}
