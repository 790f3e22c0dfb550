import type { Snapshot } from 'xstate';
import type { AgentState } from '../machines/agentState';
import type { AgentProtocolMode } from '../machines/createAgentStore';
import type { AgentPendingInput } from '../machines/selectors';
import type { AgentCommandPayloadMap, AgentCommandType } from '../protocol/commandSchemas';
import type { AgentErrorInfo, AgentEvent } from '../protocol/eventSchemas';
import type { AgentCommandError } from './AgentCommandError';
import type { AgentProvider, AgentRunContinuation } from './AgentProvider';
import type { AgentReconnectOptions, AgentRunResult } from './runAgentProvider';

export interface AgentProviderActorOptions<Input> {
  // biome-ignore lint/suspicious/noExplicitAny: a provider of any request, chunk and context
  provider: AgentProvider<Input, any, any, any>;
  /** The store's protocol mode: `record` (default) lists issues in AgentState, `strict` fails the actor at the first. */
  protocolMode?: AgentProtocolMode;
  /** As `runAgentProvider`'s `reconnect`. */
  reconnect?: false | AgentReconnectOptions;
  /** The clock of events, commands and approval expiry. Default `Date.now`. */
  now?: () => number;
}

/** What one actor runs: `runAgentProvider`'s options of the same names, and whether the parent hears every event. */
export interface AgentProviderActorInput<Input> {
  sessionId: string;
  /** The first run's id. Default: a random id. */
  runId?: string;
  input: Input;
  /**
   * The conversation so far (an earlier actor's `output.agentState`, say): the store starts
   * from it, validated and copied as `store.reset` does (an invalid one fails the actor as it starts).
   */
  history?: AgentState;
  /** The first run continues one of `history` that ended waiting for input. */
  continuation?: AgentRunContinuation;
  /** Send the parent `{ type: 'agent.event', event }` for every event the store took. Default false. */
  forwardEvents?: boolean;
}

/**
 * A command the actor takes as an event: the command's type and payload, and the run it is
 * for (default: the actor's current run). `sendTo('agent', { type: 'approval.resolve', approvalId, decision: 'approved' })`.
 */
export type AgentProviderActorCommand = {
  [Type in AgentCommandType]: { type: Type; runId?: string } & AgentCommandPayloadMap[Type];
}[AgentCommandType];

/** What the actor's snapshot holds in `context`: plain JSON. */
export interface AgentProviderActorContext {
  sessionId: string;
  /** The run the actor follows: the first, or the latest run that continued it. */
  runId: string;
  /** Every run of the actor in order: the first, the runs that continued it (and any follow-on run a stream carried). */
  runIds: string[];
  /** `running`: a run streams; `waiting`: the current run ended waiting for input, which the parent gives as commands. */
  phase: 'running' | 'waiting';
  /** The session's AgentState as the store has it now. */
  agentState: AgentState;
}

/** The actor's `output` (what a parent's `onDone` gets): how the last run ended, and what it said. */
export interface AgentProviderActorOutput {
  /** The run that ended the actor: the last of `runIds`. */
  runId: string;
  runIds: string[];
  status: AgentRunResult['status'];
  /** The run's own output (`run.completed`'s `output`), when the runtime gave one. */
  output?: unknown;
  /** The text of the run's last assistant message (its text parts joined), when it wrote one. */
  text?: string;
  /** Why the run failed or was cancelled, as AgentState records it. */
  error?: AgentErrorInfo;
  /** `runAgentProvider`'s result for the last run. */
  result: AgentRunResult;
  agentState: AgentState;
}

/** What the actor tells: sent to its parent, and emitted (`actor.on(type, listener)`). */
export type AgentProviderActorEmitted =
  /** Every event the store took, in order, when `forwardEvents` is set (one it refused is in `agentState.issues` instead). */
  | { type: 'agent.event'; event: AgentEvent }
  /** The run ended waiting for input: answer it with `approval.resolve` and `tool.submit_result`; the actor then continues it. */
  | { type: 'agent.waiting'; runId: string; pendingInput: AgentPendingInput }
  /**
   * A command did not take effect. `error.code`: `invalid_command` (a wrong payload, or the
   * machines refused it in their state: the message says why), `unsupported_capability`,
   * `provider_error`, `protocol_error` or `interrupted`, as `runAgentCommand` fails.
   */
  | { type: 'agent.commandFailed'; command: AgentProviderActorCommand; error: AgentCommandError };

export type AgentProviderActorSnapshot = Snapshot<AgentProviderActorOutput> & { context: AgentProviderActorContext };
