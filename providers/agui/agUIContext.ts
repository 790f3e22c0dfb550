import type { AGUIEvent, Message as AgUIMessage } from '@ag-ui/core';
import type { AgentState } from '../../machines/agentState';
import type { AgentApprovalAnswer, AgentRunContinuation } from '../AgentProvider';
import type { AgentRunEmitter } from '../createAgentRunEmitter';
import type { AgUIAgentInput } from './agUIRequest';

export type LaneKind = 'text' | 'tool' | 'reasoning';

export interface AgUIContextState {
  /** The emitter of the run chunks map into: the stream's first run, or the follow-on run it started since. */
  events: AgentRunEmitter;
  now: () => number;
  /** The run id the stream was opened for. */
  firstRunId: string;
  /** Run ids the stream has used, ours and AG-UI's, so a follow-on run gets an id of its own. */
  runIds: Set<string>;
  /** How many runs the stream has carried so far. */
  runCount: number;
  threadId: string;
  /** Open chunk streams, one per lane (the parent agent, or a subagent). */
  lanes: Map<string, { kind: LaneKind; id: string }>;
  /** Message ids the caller already has (the input history) or this run emitted. */
  knownMessages: Set<string>;
  /** Tool calls of this run, in order, and those that got a result. */
  toolCalls: string[];
  toolResults: Set<string>;
  openSteps: Map<string, string[]>;
  stepCount: number;
  serverRun: { threadId: string; runId: string } | undefined;
  /** The session's AgentState as the run starts: the conversation the request carries. */
  history: AgentState | undefined;
  /** The waiting run this one continues, and the answers to its approvals. */
  continuation: AgentRunContinuation | undefined;
  /** Answers the resumed stream has not confirmed yet: its first event turns them into `approval.resolved`. */
  unconfirmedAnswers: readonly AgentApprovalAnswer[];
  /** The request's messages, built once from the input or the history. */
  requestMessages: AgUIMessage[] | undefined;
  /** What the stream was opened with: a follow-on run's input too, so a run that continues it builds its request alike. */
  input: AgUIAgentInput | undefined;
}

/**
 * The subagent an event belongs to, if any. RUN_* and MESSAGES_SNAPSHOT declare no
 * `subagentRunId`, but AG-UI's schema keeps unknown fields, so one sent there still counts.
 */
export function subagentRunIdOf(event: AGUIEvent): string | undefined {
  return 'subagentRunId' in event && typeof event.subagentRunId === 'string' ? event.subagentRunId : undefined;
}

/** Meta that marks an entity as a subagent's. */
export function subagentMeta(event: AGUIEvent): { meta: Record<string, unknown> } | undefined {
  const subagentRunId = subagentRunIdOf(event);
  return subagentRunId === undefined ? undefined : { meta: { agui: { subagentRunId } } };
}
