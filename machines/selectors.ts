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

/*
 * Selectors keep their answer's identity while what they read is unchanged, so a view that
 * compares with `Object.is` (`useXChatSelector`) does not render again at every flush. Two
 * layers do it. A cache keyed by the containers a selector reads: structural sharing gives a
 * container a new identity only when one of its records changed, so a hit costs O(1). And,
 * when a container did change, the earlier answer is found again through its first item (a
 * record keeps its identity while it is unchanged) and handed out instead of an equal new
 * array. Both are weak: nothing a selector read is kept alive by it. Answers are shared:
 * never change one in place.
 */

/** The answer with no items: one shared array, so an empty answer keeps its identity too. */
const NONE = Object.freeze([]) as unknown as never[];

function sameItems<Item>(left: readonly Item[], right: readonly Item[]): boolean {
  if (left.length !== right.length) return false;
  for (let index = 0; index < left.length; index += 1) if (left[index] !== right[index]) return false;
  return true;
}

/** The arrays a selector last answered, found again through their first item and the selector's arguments. */
class LastAnswers<Item extends object> {
  private readonly byFirstItem = new WeakMap<Item, Map<string, Item[]>>();

  /** `items`, or the earlier answer for these arguments when it holds the same items in the same order. */
  keep(argumentsKey: string, items: Item[]): Item[] {
    const first = items[0];
    if (first === undefined) return NONE;
    let answers = this.byFirstItem.get(first);
    const previous = answers?.get(argumentsKey);
    if (previous !== undefined && sameItems(previous, items)) return previous;
    if (answers === undefined) {
      answers = new Map();
      this.byFirstItem.set(first, answers);
    }
    answers.set(argumentsKey, items);
    return items;
  }
}

/** The answer cached on `container` for these arguments, or the one `compute` makes (then cached). */
function cachedOn<Container extends object, Answer>(
  cache: WeakMap<Container, Map<string, Answer>>,
  container: Container,
  argumentsKey: string,
  compute: () => Answer,
): Answer {
  let answers = cache.get(container);
  if (answers?.has(argumentsKey) === true) return answers.get(argumentsKey) as Answer;
  const answer = compute();
  if (answers === undefined) {
    answers = new Map();
    cache.set(container, answers);
  }
  answers.set(argumentsKey, answer);
  return answer;
}

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
  // Every attempt is a record of `toolCalls`: the container and the order are all it reads.
  const argumentsKey = getAgentEntityKey(target.runId, target.toolCallId);
  const cached = cachedOn(attemptsCache, state.toolCalls, argumentsKey, () => ({
    order: state.order,
    attempts: attemptsOf(state, target),
  }));
  if (cached.order === state.order) return cached.attempts;
  return attemptsOf(state, target);
}

const attemptsCache = new WeakMap<
  AgentState['toolCalls'],
  Map<string, { order: AgentEntityRef[]; attempts: AgentToolCallState[] }>
>();
const attemptsAnswers = new LastAnswers<AgentToolCallState>();

function attemptsOf(state: AgentState, target: { runId: string; toolCallId: string }): AgentToolCallState[] {
  let first = selectToolCall(state, target);
  const visited = new Set<string>();
  while (first?.retryOf !== undefined && !visited.has(first.id)) {
    visited.add(first.id);
    const previous = selectToolCall(state, { runId: target.runId, toolCallId: first.retryOf });
    if (previous === undefined) break;
    first = previous;
  }
  if (first === undefined) return NONE;
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
  // The chain is the same whichever of its attempts was named.
  return attemptsAnswers.keep('', chain);
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
/** One item per record, so an unchanged record keeps its item. */
const timelineItemCache = new WeakMap<object, AgentTimelineItem>();
const timelineAnswers = new LastAnswers<AgentTimelineItem>();

function timelineItemOf(kind: AgentEntityKind, key: string, entity: AgentEntityStateMap[AgentEntityKind]) {
  let item = timelineItemCache.get(entity);
  if (item === undefined) {
    const shown = kind === 'reasoning' ? selectVisibleReasoning(entity as AgentReasoningState) : entity;
    item = { kind, key, entity: shown } as AgentTimelineItem;
    timelineItemCache.set(entity, item);
  }
  return item;
}

/**
 * Every entity in arrival order (`AgentState.order`, never re-sorted by timestamp), of one
 * run or of all runs. Reasoning is left out unless asked for, and redacted reasoning comes
 * without its content. The same array while none of its items changed.
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
    items.push(timelineItemOf(kind, key, entity));
  }
  const answer = timelineAnswers.keep(cacheKey, items);
  if (cached === undefined) {
    cached = new Map();
    timelineCache.set(state, cached);
  }
  cached.set(cacheKey, answer);
  return answer;
}

const runningRunsCache = new WeakMap<AgentState['runs'], Map<string, AgentRunState[]>>();
const runningRunsAnswers = new LastAnswers<AgentRunState>();

/** The runs of a session that are still running: the same array while none of them changed and no run started or ended. */
export function selectRunningRuns(state: AgentState, sessionId: string): AgentRunState[] {
  return cachedOn(runningRunsCache, state.runs, sessionId, () =>
    runningRunsAnswers.keep(
      sessionId,
      Object.values(state.runs).filter((run) => run.sessionId === sessionId && run.status === 'running'),
    ),
  );
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
const messagesAnswers = new LastAnswers<AgentMessageInfo>();

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
function refreshMessages(state: AgentState, previous: AgentMessageInfo[]): AgentMessageInfo[] | undefined {
  // The earlier list itself while none of its messages changed; a copy from the first that did.
  let infos: AgentMessageInfo[] | undefined;
  for (let index = 0; index < previous.length; index += 1) {
    const info = previous[index] as AgentMessageInfo;
    const message = getOwn(state.messages, info.id);
    if (message === undefined) return undefined;
    if (message === info.message && infos === undefined) continue;
    infos ??= previous.slice(0, index);
    infos.push(message === info.message ? info : messageInfoOf(info.id, message));
  }
  return infos ?? previous;
}

/**
 * The messages in arrival order as `{ id, message, status }`, of one run or of all.
 * The id is the message's key, unique across runs. Entries of unchanged messages keep
 * their identity, so a list can skip re-rendering them, and the list is the same array
 * while none of its messages changed.
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
    infos = messagesAnswers.keep(cacheKey, infos);
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
 * approvals waiting. Empty lists when the run waits for nothing. It reads only the run and
 * what it lists, and is the same object while none of those changed.
 *
 * @example
 * const { toolCalls } = selectPendingInput(state, 'run-1');
 * for (const call of toolCalls) runClientTool(call.name, call.parsedArguments);
 */
export function selectPendingInput(state: AgentState, runId: string): AgentPendingInput {
  const run = getOwn(state.runs, runId);
  if (run === undefined) return NOTHING_PENDING;
  const toolCalls: AgentToolCallState[] = [];
  const approvals: AgentApprovalState[] = [];
  for (const toolCallId of run.pendingToolCallIds ?? []) {
    const toolCall = selectToolCall(state, { runId, toolCallId });
    if (toolCall !== undefined && isPendingEntity(run, 'toolCall', toolCall)) toolCalls.push(toolCall);
  }
  for (const approvalId of run.pendingApprovalIds ?? []) {
    const approval = selectApproval(state, { runId, approvalId });
    if (approval !== undefined && isPendingEntity(run, 'approval', approval)) approvals.push(approval);
  }
  const pending = {
    toolCalls: pendingToolCallAnswers.keep(runId, toolCalls),
    approvals: pendingApprovalAnswers.keep(runId, approvals),
  };
  if (pending.toolCalls === NONE && pending.approvals === NONE) return NOTHING_PENDING;
  const anchor = pending.toolCalls === NONE ? pending.approvals : pending.toolCalls;
  const previous = pendingCache.get(anchor);
  if (previous?.toolCalls === pending.toolCalls && previous.approvals === pending.approvals) return previous;
  pendingCache.set(anchor, pending);
  return pending;
}

const NOTHING_PENDING: AgentPendingInput = Object.freeze({ toolCalls: NONE, approvals: NONE });
const pendingToolCallAnswers = new LastAnswers<AgentToolCallState>();
const pendingApprovalAnswers = new LastAnswers<AgentApprovalState>();
/** The last answer made around each list (its tool calls, or its approvals when it waits on none). */
const pendingCache = new WeakMap<object[], AgentPendingInput>();

/**
 * Whether a waiting approval's `expiresAt` has passed by the local clock: for display only.
 * The runtime decides expiry (it answers with an `expired` resolution), so a decision is
 * still sent after this turns true.
 */
export function isApprovalExpired(approval: AgentApprovalState, now: number = Date.now()): boolean {
  return approval.status === 'waiting' && approval.expiresAt !== undefined && now >= approval.expiresAt;
}
