import type { AgentState } from '../../machines/agentState';
import type { AgentErrorInfo } from '../../protocol/eventSchemas';
import type { AgentApprovalAnswer, AgentRunContinuation } from '../AgentProvider';
import type { AgentRunEmitter } from '../createAgentRunEmitter';

/** The entities one step of the stream started, by kind: what a `reset-step` drops. */
export interface AISDKStepEntities {
  taskId: string | undefined;
  messageIds: string[];
  reasoningIds: string[];
  toolCallIds: string[];
  artifactIds: string[];
  activityIds: string[];
  approvalIds: string[];
}

/** What the stream said of the run's end: the last `finish` (its reason), or an `abort`. */
export type AISDKOutcome = { type: 'finished'; finishReason?: string } | { type: 'aborted'; reason?: string };

/** A tool call this run started, with what its later chunks need. */
export interface AISDKToolCall {
  name: string;
  /** Its input is complete (`tool-input-available`): the run may wait on it. */
  inputComplete: boolean;
  /** A preliminary output said it runs. */
  running?: boolean;
  /** An output, an error or a denial settled it: the run does not wait on it. */
  settled: boolean;
}

/** The per-run state in which the AI SDK provider maps chunks. */
export interface AISDKContext {
  events: AgentRunEmitter;
  /** The session's AgentState as the run starts: the conversation the request carries. */
  history: AgentState | undefined;
  /** The waiting run this one continues, and the answers to its approvals. */
  continuation: AgentRunContinuation | undefined;
  /** Answers the stream has not confirmed yet: its first chunk turns them into `approval.resolved`. */
  unconfirmedAnswers: readonly AgentApprovalAnswer[];
  /**
   * The run was resumed from a cursor in a new call: the replayed stream is mapped again
   * from its start, and the runner absorbs what it had applied. `prepareRequest` replays
   * the start events so the sequences line up.
   */
  replaysFromStart: boolean;
  /** The assistant UIMessage's id, from `start`. */
  messageId: string | undefined;
  /** Open text and reasoning parts: the wire id to our entity id. */
  openTexts: Map<string, string>;
  openReasoning: Map<string, string>;
  /** Entity ids taken in this run, by kind, so a wire id used again gets a fresh one. */
  takenIds: Map<string, Set<string>>;
  /** The next place to try for a wire id used again, by kind and id. */
  nextPlaces: Map<string, number>;
  /** Tool calls this run started, by `toolCallId`, in order. */
  toolCalls: Map<string, AISDKToolCall>;
  /** Approvals this run requested and no answer settled yet, in order. */
  openApprovals: Set<string>;
  /** What the current step streamed (from `start-step`, or the stream's start, to `finish-step`). */
  step: AISDKStepEntities;
  stepCount: number;
  fileCount: number;
  dataCount: number;
  /** The error an `error` chunk reported: the run fails with it when the stream ends. */
  failure: AgentErrorInfo | undefined;
  /** How the stream said the run ends (`finish`, `abort`, or an `error` alone); it ends so once the stream is over. */
  outcome: AISDKOutcome | undefined;
}

export function emptyStep(taskId: string | undefined): AISDKStepEntities {
  return {
    taskId,
    messageIds: [],
    reasoningIds: [],
    toolCallIds: [],
    artifactIds: [],
    activityIds: [],
    approvalIds: [],
  };
}

/**
 * An entity id for a wire id, unique among this run's entities of `kind`: the wire id
 * itself the first time, then `{id}~2`, `{id}~3`... (the AI SDK reuses text ids from one
 * step to the next). An empty wire id becomes `{kind}`.
 */
export function takeId(context: AISDKContext, kind: string, wireId: string): string {
  let taken = context.takenIds.get(kind);
  if (taken === undefined) {
    taken = new Set();
    context.takenIds.set(kind, taken);
  }
  const base = wireId === '' ? kind : wireId;
  let id = base;
  if (taken.has(id)) {
    const placeKey = `${kind}:${base}`;
    let place = context.nextPlaces.get(placeKey) ?? 2;
    while (taken.has(`${base}~${place}`)) place += 1;
    id = `${base}~${place}`;
    context.nextPlaces.set(placeKey, place + 1);
  }
  taken.add(id);
  return id;
}
