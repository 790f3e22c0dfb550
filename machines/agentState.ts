import { AGENT_ENTITY_KIND_TABLE, AGENT_ENTITY_KINDS, type AgentEntityKind } from '../protocol/agentEntityKinds';
import type { AgentMessageContent } from '../protocol/contentSchemas';
import type { AgentErrorInfo, AgentMessageRole, AgentUsage } from '../protocol/eventSchemas';
import type { AgentProtocolIssue } from '../protocol/protocolIssue';

/** What every entity record carries: its run-scoped key and timestamps. */
export interface AgentEntityBase {
  /** The entity id the runtime gave (message id, tool call id, ...). */
  id: string;
  /** `getAgentEntityKey(runId, id)`: the record's key in its AgentState container. */
  key: string;
  runId: string;
  sessionId: string;
  parentId?: string;
  createdAt: number;
  updatedAt: number;
  error?: AgentErrorInfo;
  /** Why the entity was cancelled; `run_terminated` when its run ended while it was active. */
  reason?: string;
  /** Provider-specific data from the events that started and completed the entity (`{ openai: { finishReason } }`). */
  meta?: Record<string, unknown>;
}

export type AgentMessageStatus = 'streaming' | 'completed' | 'failed' | 'cancelled';
export interface AgentMessageState extends AgentEntityBase {
  role: AgentMessageRole;
  content: AgentMessageContent;
  status: AgentMessageStatus;
  name?: string;
  toolCallId?: string;
}

export type AgentReasoningStatus = 'streaming' | 'completed' | 'failed' | 'cancelled';
export interface AgentReasoningState extends AgentEntityBase {
  /** Redacted (encrypted) reasoning: its content is kept for the runtime, never shown by selectors. */
  redacted: boolean;
  content: string;
  summary?: string;
  status: AgentReasoningStatus;
}

/**
 * `awaiting_execution`: arguments complete, and the tool is not running on the runtime side.
 * A run may end with such tools when its terminal lists them in `pendingToolCallIds`:
 * the application executes them.
 */
export type AgentToolCallStatus =
  | 'streaming_arguments'
  | 'awaiting_execution'
  | 'running'
  | 'completed'
  | 'failed'
  | 'cancelled';
export interface AgentToolCallState extends AgentEntityBase {
  name: string;
  /** The raw argument text, exactly as streamed. */
  arguments: string;
  /** The arguments parsed as JSON once complete, when they are valid JSON. */
  parsedArguments?: unknown;
  /** Why the complete arguments are not valid JSON. */
  argumentsError?: string;
  status: AgentToolCallStatus;
  result?: unknown;
  attempt: number;
  retryOf?: string;
  /** The tool call that retried this one: a failed call is retried once. */
  retriedBy?: string;
  messageId?: string;
}

export type AgentApprovalStatus = 'waiting' | 'resolved' | 'cancelled';
export interface AgentApprovalState extends AgentEntityBase {
  status: AgentApprovalStatus;
  toolCallId?: string;
  description?: string;
  risk?: string;
  data?: unknown;
  /** `false` when the runtime said the request may not be edited; absent when it did not say. */
  editable?: boolean;
  /** When the runtime says the request lapses; the runtime decides expiry (an `expired` resolution). */
  expiresAt?: number;
  version?: string | number;
  decision?: 'approved' | 'rejected' | 'modified' | 'expired';
  /** The data the resolution carried (the edited arguments of a `modified` decision, say). */
  resolvedData?: unknown;
}

export type AgentTaskStatus = 'running' | 'completed' | 'failed' | 'cancelled';
export interface AgentTaskState extends AgentEntityBase {
  status: AgentTaskStatus;
  title?: string;
  description?: string;
  parentTaskId?: string;
  /** From 0 to 1. */
  progress?: number;
  data?: unknown;
  result?: unknown;
}

export type AgentArtifactStatus = 'open' | 'completed' | 'failed' | 'cancelled';
export interface AgentArtifactState extends AgentEntityBase {
  status: AgentArtifactStatus;
  mediaType?: string;
  version: number;
  title?: string;
  name?: string;
  content?: string;
  uri?: string;
  data?: unknown;
}

export type AgentRunStatus = 'running' | 'completed' | 'failed' | 'cancelled';
export interface AgentRunState {
  id: string;
  sessionId: string;
  status: AgentRunStatus;
  title?: string;
  input?: unknown;
  output?: unknown;
  usage?: AgentUsage;
  error?: AgentErrorInfo;
  reason?: string;
  /** Tool calls the run ended with, left to the application to execute. */
  pendingToolCallIds?: string[];
  /** Approvals the run ended waiting on (an interrupt); they stay `waiting`. */
  pendingApprovalIds?: string[];
  /** The waiting run this one continues (`run.started`'s `continuesRunId`). */
  continuesRunId?: string;
  startedAt: number;
  updatedAt: number;
  endedAt?: number;
  meta?: Record<string, unknown>;
}

/** A structured activity (AG-UI ACTIVITY_*): its content, replaced by snapshots and patched by deltas. */
export interface AgentActivityState {
  id: string;
  /** `getAgentEntityKey(runId, id)`. */
  key: string;
  runId: string;
  sessionId: string;
  activityType: string;
  content: unknown;
  createdAt: number;
  updatedAt: number;
}

/** One `extension.emitted` event, as it arrived. */
export interface AgentExtensionRecord {
  eventId: string;
  /** Namespaced: `agui.custom`, `company.audit`. */
  name: `${string}.${string}`;
  data?: unknown;
  timestamp: number;
}

export interface AgentSessionState {
  id: string;
  title?: string;
  data?: unknown;
  createdAt: number;
  updatedAt: number;
}

export type { AgentEntityKind };

export interface AgentEntityStateMap {
  message: AgentMessageState;
  reasoning: AgentReasoningState;
  toolCall: AgentToolCallState;
  approval: AgentApprovalState;
  task: AgentTaskState;
  artifact: AgentArtifactState;
}

export type AgentEntityState = AgentEntityStateMap[AgentEntityKind];

/** A reference into AgentState: which container, which key. */
export interface AgentEntityRef {
  kind: AgentEntityKind;
  key: string;
}

/**
 * The plain, serializable projection of everything the runtime has reported.
 * `JSON.parse(JSON.stringify(state))` deep-equals `state`; unchanged records keep their identity.
 */
export interface AgentState {
  sessions: Record<string, AgentSessionState>;
  runs: Record<string, AgentRunState>;
  messages: Record<string, AgentMessageState>;
  reasoning: Record<string, AgentReasoningState>;
  toolCalls: Record<string, AgentToolCallState>;
  approvals: Record<string, AgentApprovalState>;
  tasks: Record<string, AgentTaskState>;
  artifacts: Record<string, AgentArtifactState>;
  /** Every entity in arrival order. */
  order: AgentEntityRef[];
  issues: AgentProtocolIssue[];
  lastSequenceByRun: Record<string, number>;
  /** The shared state of each session (`state.snapshot` / `state.delta`), by session id. */
  state: Record<string, unknown>;
  /** Activities by `getAgentEntityKey(runId, activityId)`. */
  activities: Record<string, AgentActivityState>;
  /** Extension events of each run, by run id, in arrival order. */
  extensions: Record<string, AgentExtensionRecord[]>;
}

/** The AgentState container that holds each entity kind (from the entity-kind table). */
export const AGENT_ENTITY_CONTAINERS = Object.fromEntries(
  AGENT_ENTITY_KINDS.map((kind) => [kind, AGENT_ENTITY_KIND_TABLE[kind].container]),
) as { [Kind in AgentEntityKind]: (typeof AGENT_ENTITY_KIND_TABLE)[Kind]['container'] };

export { AGENT_ENTITY_KINDS };

/** An AgentState with nothing in it: an empty container for each entity kind of the table, and the rest. */
export function createEmptyAgentState(): AgentState {
  const entities = Object.fromEntries(AGENT_ENTITY_KINDS.map((kind) => [AGENT_ENTITY_CONTAINERS[kind], {}]));
  return {
    sessions: {},
    runs: {},
    ...(entities as Pick<AgentState, (typeof AGENT_ENTITY_CONTAINERS)[AgentEntityKind]>),
    order: [],
    issues: [],
    lastSequenceByRun: {},
    state: {},
    activities: {},
    extensions: {},
  };
}
