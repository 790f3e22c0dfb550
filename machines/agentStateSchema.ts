import * as z from 'zod/mini';
import { agentMessageContentSchema, namespacedNameSchema } from '../protocol/contentSchemas';
import { createQuickAccept, type QuickAccept } from '../protocol/createQuickAccept';
import { AgentValidationError } from '../protocol/errors';
import {
  agentErrorInfoSchema,
  agentMessageRoleSchema,
  agentUsageSchema,
  approvalDecisionSchema,
} from '../protocol/eventSchemas';
import { getAgentEntityKey } from '../protocol/getAgentEntityKey';
import { checkPlainJson, DEFAULT_MAX_JSON_DEPTH } from '../protocol/plainJson';
import { AGENT_PROTOCOL_ISSUE_CODES } from '../protocol/protocolIssue';
import { toValidationFailure } from '../protocol/validationFailure';
import {
  AGENT_ENTITY_CONTAINERS,
  AGENT_ENTITY_KINDS,
  type AgentEntityKind,
  type AgentEntityState,
  type AgentState,
} from './agentState';
import { copyKnownFields } from './copyKnownFields';
import { isActiveEntityStatus } from './entityEvents';
import { isPendingEntity } from './pendingInput';

const id = z.string().check(z.minLength(1));
const text = z.optional(z.string());
const time = z.number();
const data = z.optional(z.unknown());

const entityBase = {
  id,
  key: id,
  runId: id,
  sessionId: id,
  parentId: text,
  createdAt: time,
  updatedAt: time,
  error: z.optional(agentErrorInfoSchema),
  reason: text,
  meta: z.optional(z.record(z.string(), z.unknown())),
};

const record = <Schema extends z.ZodMiniType>(schema: Schema) => z.record(z.string(), schema);

const entrySchemas = {
  sessions: z.object({ id, title: text, data, createdAt: time, updatedAt: time }),
  runs: z.object({
    id,
    sessionId: id,
    status: z.enum(['running', 'completed', 'failed', 'cancelled']),
    title: text,
    input: data,
    output: data,
    usage: z.optional(agentUsageSchema),
    error: z.optional(agentErrorInfoSchema),
    reason: text,
    pendingToolCallIds: z.optional(z.array(id)),
    pendingApprovalIds: z.optional(z.array(id)),
    continuesRunId: z.optional(id),
    startedAt: time,
    updatedAt: time,
    endedAt: z.optional(time),
    meta: z.optional(z.record(z.string(), z.unknown())),
  }),
  messages: z.object({
    ...entityBase,
    role: agentMessageRoleSchema,
    content: agentMessageContentSchema,
    status: z.enum(['streaming', 'completed', 'failed', 'cancelled']),
    name: text,
    toolCallId: text,
  }),
  reasoning: z.object({
    ...entityBase,
    redacted: z.boolean(),
    content: z.string(),
    summary: text,
    status: z.enum(['streaming', 'completed', 'failed', 'cancelled']),
  }),
  toolCalls: z.object({
    ...entityBase,
    name: id,
    arguments: z.string(),
    parsedArguments: data,
    argumentsError: text,
    status: z.enum(['streaming_arguments', 'awaiting_execution', 'running', 'completed', 'failed', 'cancelled']),
    result: data,
    attempt: z.number().check(z.int(), z.gte(1)),
    retryOf: text,
    retriedBy: text,
    messageId: text,
  }),
  approvals: z.object({
    ...entityBase,
    status: z.enum(['waiting', 'resolved', 'cancelled']),
    toolCallId: text,
    description: text,
    risk: text,
    data,
    editable: z.optional(z.boolean()),
    expiresAt: z.optional(time),
    version: z.optional(z.union([z.string(), z.number()])),
    decision: z.optional(approvalDecisionSchema),
    resolvedData: data,
  }),
  tasks: z.object({
    ...entityBase,
    status: z.enum(['running', 'completed', 'failed', 'cancelled']),
    title: text,
    description: text,
    parentTaskId: text,
    progress: z.optional(z.number()),
    data,
    result: data,
  }),
  artifacts: z.object({
    ...entityBase,
    status: z.enum(['open', 'completed', 'failed', 'cancelled']),
    mediaType: z.optional(id),
    version: z.number(),
    title: text,
    name: text,
    content: text,
    uri: text,
    data,
  }),
  lastSequenceByRun: z.number().check(z.int(), z.gte(-1)),
  state: z.unknown(),
  activities: z.object({
    id,
    key: id,
    runId: id,
    sessionId: id,
    activityType: id,
    content: z.unknown(),
    createdAt: time,
    updatedAt: time,
  }),
  extensions: z.array(z.object({ eventId: id, name: namespacedNameSchema, data, timestamp: time })),
};

/** The schema of a whole AgentState, as `reset` and checkpoints receive it from outside. */
export const agentStateSchema = z.object({
  sessions: record(entrySchemas.sessions),
  runs: record(entrySchemas.runs),
  messages: record(entrySchemas.messages),
  reasoning: record(entrySchemas.reasoning),
  toolCalls: record(entrySchemas.toolCalls),
  approvals: record(entrySchemas.approvals),
  tasks: record(entrySchemas.tasks),
  artifacts: record(entrySchemas.artifacts),
  order: z.array(z.object({ kind: z.enum(AGENT_ENTITY_KINDS as [AgentEntityKind, ...AgentEntityKind[]]), key: id })),
  issues: z.array(
    z.object({
      code: z.enum(AGENT_PROTOCOL_ISSUE_CODES),
      message: z.string(),
      event: z.unknown(),
      runId: text,
      entityId: text,
      state: text,
    }),
  ),
  lastSequenceByRun: record(entrySchemas.lastSequenceByRun),
  state: record(entrySchemas.state),
  activities: record(entrySchemas.activities),
  extensions: record(entrySchemas.extensions),
});

/**
 * zod's records skip an own `__proto__` key (a run or session may have that id), so its
 * entries are checked here with the schema of their record.
 */
function checkProtoEntries(state: AgentState): void {
  for (const [name, schema] of Object.entries(entrySchemas)) {
    const container = state[name as keyof typeof entrySchemas] as Record<string, unknown>;
    const entry = Object.getOwnPropertyDescriptor(container, '__proto__');
    if (entry === undefined) continue;
    const result = schema.safeParse(entry.value);
    if (!result.success) {
      const failure = toValidationFailure(result.error.issues, entry.value);
      fail(`${name}.__proto__${failure.path ? `.${failure.path}` : ''}`, failure.reason);
    }
  }
}

/** Accepts a valid state without zod's per-field cost; the schema decides whatever this does not accept. */
let quickAccept: QuickAccept | undefined;

function fail(path: string, reason: string): never {
  throw new AgentValidationError('agent state', { path, reason, message: `${path}: ${reason}` });
}

/**
 * How deep a saved AgentState may nest: an event's values may nest `DEFAULT_MAX_JSON_DEPTH`
 * levels, and AgentState holds them a few levels down (`issues.0.event.payload...`).
 */
const MAX_AGENT_STATE_DEPTH = DEFAULT_MAX_JSON_DEPTH + 8;

/**
 * Validates an untrusted AgentState and returns a clean copy of it: plain JSON only (no
 * cycles, class instances, non-finite numbers or nesting past the limit), fields the schema
 * does not know dropped, every record under its own key, in a known run of its session and
 * in `order`, and no entity active in a run that has ended (but those the run waits on).
 * The copy shares nothing with the value given, so changing that value later changes nothing.
 *
 * @throws AgentValidationError naming the first path that is wrong.
 */
export function parseAgentState(
  value: unknown,
  options: {
    /** The caller has checked `value` is plain JSON within 108 levels (a checkpoint, checked whole). */
    plainJsonChecked?: boolean;
  } = {},
): AgentState {
  if (options.plainJsonChecked !== true) {
    const plain = checkPlainJson(value, { maxDepth: MAX_AGENT_STATE_DEPTH, allowProtoKeys: true });
    if (plain !== undefined) fail(plain.path === '' ? '(root)' : plain.path, plain.reason);
  }
  quickAccept ??= createQuickAccept(agentStateSchema);
  if (!quickAccept(value)) {
    const result = agentStateSchema.safeParse(value);
    if (!result.success) {
      throw new AgentValidationError('agent state', toValidationFailure(result.error.issues, value));
    }
  }
  const state = copyKnownFields(agentStateSchema, value) as AgentState;
  checkProtoEntries(state);
  for (const [runId, run] of Object.entries(state.runs)) {
    if (run.id !== runId) fail(`runs.${runId}.id`, `does not match its key`);
  }
  const ordered = new Set(state.order.map((entry) => `${entry.kind}|${entry.key}`));
  for (const kind of AGENT_ENTITY_KINDS) {
    const container = AGENT_ENTITY_CONTAINERS[kind];
    for (const [key, entity] of Object.entries(state[container]) as Array<[string, AgentEntityState]>) {
      const path = `${container}.${key}`;
      if (entity.key !== key || getAgentEntityKey(entity.runId, entity.id) !== key) {
        fail(`${path}.key`, 'is not getAgentEntityKey(runId, id)');
      }
      const run = Object.hasOwn(state.runs, entity.runId) ? state.runs[entity.runId] : undefined;
      if (run === undefined) fail(`${path}.runId`, `names run "${entity.runId}", which is not in runs`);
      if (run.sessionId !== entity.sessionId) fail(`${path}.sessionId`, `differs from its run's session`);
      if (!ordered.has(`${kind}|${key}`)) fail(path, 'is missing from order');
      if (run.status !== 'running' && isActiveEntityStatus(kind, entity) && !isPendingEntity(run, kind, entity)) {
        fail(`${path}.status`, `is ${entity.status}, but its run ${run.status} without waiting on it`);
      }
    }
  }
  if (ordered.size !== state.order.length) fail('order', 'lists an entity twice');
  for (const entry of state.order) {
    const container = state[AGENT_ENTITY_CONTAINERS[entry.kind]] as Record<string, unknown>;
    if (!Object.hasOwn(container, entry.key)) fail('order', `names ${entry.kind} "${entry.key}", which does not exist`);
  }
  for (const [key, activity] of Object.entries(state.activities)) {
    if (activity.key !== key || getAgentEntityKey(activity.runId, activity.id) !== key) {
      fail(`activities.${key}.key`, 'is not getAgentEntityKey(runId, id)');
    }
    const run = Object.hasOwn(state.runs, activity.runId) ? state.runs[activity.runId] : undefined;
    if (run === undefined) fail(`activities.${key}.runId`, `names run "${activity.runId}", which is not in runs`);
  }
  for (const runId of Object.keys(state.extensions)) {
    if (!Object.hasOwn(state.runs, runId)) fail(`extensions.${runId}`, `names run "${runId}", which is not in runs`);
  }
  parsedStates.add(state);
  return state;
}

/** The copies `parseAgentState` made: valid, and shared with nobody but its caller. */
const parsedStates = new WeakSet<object>();

/**
 * Whether `value` is a state `parseAgentState` returned, so `store.reset` need not validate
 * and copy it again. Its caller must not have changed it since.
 */
export function isParsedAgentState(value: unknown): value is AgentState {
  return typeof value === 'object' && value !== null && parsedStates.has(value);
}
