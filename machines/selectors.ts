import { getAgentEntityKey } from '../protocol/getAgentEntityKey';
import {
  AGENT_ENTITY_CONTAINERS,
  type AgentApprovalState,
  type AgentEntityKind,
  type AgentEntityRef,
  type AgentEntityStateMap,
  type AgentMessageState,
  type AgentReasoningState,
  type AgentRunState,
  type AgentState,
  type AgentToolCallState,
} from './agentState';
import { getOwn } from './agentStateProjection';
import { isPendingEntity } from './pendingInput';

/** The run with this id, or `undefined`. */
export function selectRun(state: AgentState, runId: string): AgentRunState | undefined {
  return getOwn(state.runs, runId);
}

/** One tool call of one run, or `undefined`. */
export function selectToolCall(
  state: AgentState,
  target: { runId: string; toolCallId: string },
): AgentToolCallState | undefined {
  return getOwn(state.toolCalls, getAgentEntityKey(target.runId, target.toolCallId));
}

/**
 * Every attempt of a tool call, first to latest: the call a retry chain started with, then
 * each retry (`retryOf` the one before, `attempt` counting up), whichever attempt is named.
 * A failed attempt stays as it was; the latest is the last item. Empty when the call is unknown.
 *
 * @example
 * const attempts = selectToolCallAttempts(state, { runId, toolCallId: 'search-1' });
 * attempts.map((call) => [call.attempt, call.status]); // [[1, 'failed'], [2, 'completed']]
 */
export function selectToolCallAttempts(
  state: AgentState,
  target: { runId: string; toolCallId: string },
): AgentToolCallState[] {
  let first = selectToolCall(state, target);
  const visited = new Set<string>();
  while (first?.retryOf !== undefined && !visited.has(first.id)) {
    visited.add(first.id);
    const previous = selectToolCall(state, { runId: target.runId, toolCallId: first.retryOf });
    if (previous === undefined) break;
    first = previous;
  }
  if (first === undefined) return [];
  // One pass over the run's tool calls in arrival order: a retry always arrives after its original.
  const chain = [first];
  const inChain = new Set([first.id]);
  for (const { kind, key } of state.order) {
    if (kind !== 'toolCall') continue;
    const call = getOwn(state.toolCalls, key);
    if (call?.runId !== target.runId || call.retryOf === undefined || inChain.has(call.id)) continue;
    if (call.retryOf === chain[chain.length - 1]?.id) {
      chain.push(call);
      inChain.add(call.id);
    }
  }
  return chain;
}

/** One approval of one run, or `undefined`. */
export function selectApproval(
  state: AgentState,
  target: { runId: string; approvalId: string },
): AgentApprovalState | undefined {
  return getOwn(state.approvals, getAgentEntityKey(target.runId, target.approvalId));
}

/** Reasoning as selectors return it: redacted content is never handed out. */
export type AgentVisibleReasoning = Omit<AgentReasoningState, 'content'> & { content?: string };

export type AgentTimelineItem = {
  [Kind in AgentEntityKind]: {
    kind: Kind;
    key: string;
    entity: Kind extends 'reasoning' ? AgentVisibleReasoning : AgentEntityStateMap[Kind];
  };
}[AgentEntityKind];

function visibleReasoning(reasoning: AgentReasoningState): AgentVisibleReasoning {
  if (!reasoning.redacted) return reasoning;
  const { content: _hidden, ...visible } = reasoning;
  return visible;
}

const redactedCache = new WeakMap<AgentReasoningState, AgentVisibleReasoning>();

/** A reasoning record with its content removed when it is redacted; stable per record. */
export function selectVisibleReasoning(reasoning: AgentReasoningState): AgentVisibleReasoning {
  let visible = redactedCache.get(reasoning);
  if (visible === undefined) {
    visible = visibleReasoning(reasoning);
    redactedCache.set(reasoning, visible);
  }
  return visible;
}

const timelineCache = new WeakMap<AgentState, Map<string, AgentTimelineItem[]>>();

/**
 * Every entity in arrival order (`AgentState.order`, never re-sorted by timestamp), of one
 * run or of all runs. Reasoning is left out unless asked for, and redacted reasoning comes
 * without its content. The same state and options give the same array.
 */
export function selectAgentTimeline(
  state: AgentState,
  options: { runId?: string; includeReasoning?: boolean } = {},
): AgentTimelineItem[] {
  const cacheKey = `${options.includeReasoning === true}|${options.runId ?? ''}|${options.runId === undefined}`;
  let cached = timelineCache.get(state);
  const hit = cached?.get(cacheKey);
  if (hit !== undefined) return hit;
  const items: AgentTimelineItem[] = [];
  for (const { kind, key } of state.order) {
    if (kind === 'reasoning' && options.includeReasoning !== true) continue;
    const entity = getOwn(
      state[AGENT_ENTITY_CONTAINERS[kind]] as Record<string, AgentEntityStateMap[typeof kind]>,
      key,
    );
    if (entity === undefined || (options.runId !== undefined && entity.runId !== options.runId)) continue;
    const shown = kind === 'reasoning' ? selectVisibleReasoning(entity as AgentReasoningState) : entity;
    items.push({ kind, key, entity: shown } as AgentTimelineItem);
  }
  if (cached === undefined) {
    cached = new Map();
    timelineCache.set(state, cached);
  }
  cached.set(cacheKey, items);
  return items;
}

/** The runs of a session that are still running. */
export function selectRunningRuns(state: AgentState, sessionId: string): AgentRunState[] {
  return Object.values(state.runs).filter((run) => run.sessionId === sessionId && run.status === 'running');
}

/** The status a chat message component understands. */
export type AgentMessageInfoStatus = 'local' | 'loading' | 'updating' | 'success' | 'error' | 'abort';

/** A message for chat components: `{ id, message, status }`, the shape Bubble-style lists take. */
export interface AgentMessageInfo {
  id: string;
  message: AgentMessageState;
  status: AgentMessageInfoStatus;
}

function messageStatus(message: AgentMessageState): AgentMessageInfoStatus {
  switch (message.status) {
    case 'completed':
      return message.role === 'user' ? 'local' : 'success';
    case 'failed':
      return 'error';
    case 'cancelled':
      return 'abort';
    case 'streaming': {
      if (message.role === 'user') return 'local';
      const empty = typeof message.content === 'string' ? message.content === '' : message.content.length === 0;
      return empty ? 'loading' : 'updating';
    }
  }
}

const messageInfoCache = new WeakMap<AgentMessageState, AgentMessageInfo>();
const messagesCache = new WeakMap<AgentState, Map<string, AgentMessageInfo[]>>();

/** The last list made over an order array, with the order's length then; `complete`: no message of the order was missing. */
interface MessagesOfOrder {
  length: number;
  complete: boolean;
  infos: AgentMessageInfo[];
}
const messagesByOrder = new WeakMap<AgentEntityRef[], Map<string, MessagesOfOrder>>();

function messageInfoOf(key: string, message: AgentMessageState): AgentMessageInfo {
  let info = messageInfoCache.get(message);
  if (info === undefined) {
    info = { id: key, message, status: messageStatus(message) };
    messageInfoCache.set(message, info);
  }
  return info;
}

/**
 * The list made over the same order again, or `undefined`: a state whose order is the same
 * array has the same messages (a streamed token changes one of them), so each entry is
 * checked against its message instead of walking every entity of the order.
 */
function refreshMessages(state: AgentState, previous: readonly AgentMessageInfo[]): AgentMessageInfo[] | undefined {
  const infos: AgentMessageInfo[] = new Array(previous.length);
  for (let index = 0; index < previous.length; index += 1) {
    const info = previous[index] as AgentMessageInfo;
    const message = getOwn(state.messages, info.id);
    if (message === undefined) return undefined;
    infos[index] = message === info.message ? info : messageInfoOf(info.id, message);
  }
  return infos;
}

/**
 * The messages in arrival order as `{ id, message, status }`, of one run or of all.
 * The id is the message's key, unique across runs. Entries of unchanged messages keep
 * their identity, so a list can skip re-rendering them.
 */
export function selectMessages(state: AgentState, options: { runId?: string } = {}): AgentMessageInfo[] {
  const cacheKey = options.runId === undefined ? '\u0000all' : options.runId;
  let cached = messagesCache.get(state);
  const hit = cached?.get(cacheKey);
  if (hit !== undefined) return hit;
  let ofOrder = messagesByOrder.get(state.order);
  const previous = ofOrder?.get(cacheKey);
  let complete = previous?.complete === true && previous.length === state.order.length;
  let infos = complete && previous !== undefined ? refreshMessages(state, previous.infos) : undefined;
  if (infos === undefined) {
    infos = [];
    complete = true;
    for (const { kind, key } of state.order) {
      if (kind !== 'message') continue;
      const message = getOwn(state.messages, key);
      if (message === undefined) complete = false;
      if (message === undefined || (options.runId !== undefined && message.runId !== options.runId)) continue;
      infos.push(messageInfoOf(key, message));
    }
  }
  if (cached === undefined) {
    cached = new Map();
    messagesCache.set(state, cached);
  }
  cached.set(cacheKey, infos);
  if (ofOrder === undefined) {
    ofOrder = new Map();
    messagesByOrder.set(state.order, ofOrder);
  }
  ofOrder.set(cacheKey, { length: state.order.length, complete, infos });
  return infos;
}

/** What a completed run still waits for: the listed tool calls and approvals that are not settled yet. */
export interface AgentPendingInput {
  toolCalls: AgentToolCallState[];
  approvals: AgentApprovalState[];
}

/**
 * The tool calls and approvals a run ended waiting on (`pendingToolCallIds`,
 * `pendingApprovalIds`) that are still open: tool calls awaiting execution or running,
 * approvals waiting. Empty lists when the run waits for nothing.
 *
 * @example
 * const { toolCalls } = selectPendingInput(state, 'run-1');
 * for (const call of toolCalls) runClientTool(call.name, call.parsedArguments);
 */
export function selectPendingInput(state: AgentState, runId: string): AgentPendingInput {
  const run = getOwn(state.runs, runId);
  const pending: AgentPendingInput = { toolCalls: [], approvals: [] };
  if (run === undefined) return pending;
  for (const toolCallId of run.pendingToolCallIds ?? []) {
    const toolCall = selectToolCall(state, { runId, toolCallId });
    if (toolCall !== undefined && isPendingEntity(run, 'toolCall', toolCall)) pending.toolCalls.push(toolCall);
  }
  for (const approvalId of run.pendingApprovalIds ?? []) {
    const approval = selectApproval(state, { runId, approvalId });
    if (approval !== undefined && isPendingEntity(run, 'approval', approval)) pending.approvals.push(approval);
  }
  return pending;
}

/**
 * Whether a waiting approval's `expiresAt` has passed by the local clock: for display only.
 * The runtime decides expiry (it answers with an `expired` resolution), so a decision is
 * still sent after this turns true.
 */
export function isApprovalExpired(approval: AgentApprovalState, now: number = Date.now()): boolean {
  return approval.status === 'waiting' && approval.expiresAt !== undefined && now >= approval.expiresAt;
}
