import * as z from 'zod/mini';
import { AGENT_EVENT_PROTOCOL_VERSION } from './constants';
import { agentMessageContentSchema, namespacedNameSchema } from './contentSchemas';

const id = z.string().check(z.minLength(1));
const optionalText = z.optional(z.string());

/** The error shape that runs, messages, tools, tasks and artifacts fail with. */
export const agentErrorInfoSchema = z.object({
  message: z.string(),
  code: optionalText,
  retryable: z.optional(z.boolean()),
  data: z.optional(z.unknown()),
});

const tokenCount = z.optional(z.number().check(z.int(), z.gte(0)));

/**
 * Token usage, normalized: each counter only when the runtime reported it. The wire's own
 * usage object belongs in the event's `meta` (`meta.openai.usage`), never in here.
 */
export const agentUsageSchema = z.strictObject({
  inputTokens: tokenCount,
  outputTokens: tokenCount,
  totalTokens: tokenCount,
  /** Output tokens spent on reasoning, when the runtime counts them apart. */
  reasoningTokens: tokenCount,
  /** Input tokens read from the prompt cache. */
  cacheReadTokens: tokenCount,
  /** Input tokens written to the prompt cache. */
  cacheWriteTokens: tokenCount,
});

export const agentMessageRoleSchema = z.enum(['user', 'assistant', 'system', 'developer', 'tool']);
export const approvalDecisionSchema = z.enum(['approved', 'rejected', 'modified', 'expired']);

const jsonPointer = z.string();
/** One RFC 6902 operation. */
export const jsonPatchOperationSchema = z.discriminatedUnion('op', [
  z.object({ op: z.literal('add'), path: jsonPointer, value: z.unknown() }),
  z.object({ op: z.literal('replace'), path: jsonPointer, value: z.unknown() }),
  z.object({ op: z.literal('test'), path: jsonPointer, value: z.unknown() }),
  z.object({ op: z.literal('remove'), path: jsonPointer }),
  z.object({ op: z.literal('move'), from: jsonPointer, path: jsonPointer }),
  z.object({ op: z.literal('copy'), from: jsonPointer, path: jsonPointer }),
]);

const messageRef = { messageId: id };
const reasoningRef = { reasoningId: id };
const toolRef = { toolCallId: id };
const approvalRef = { approvalId: id };
const taskRef = { taskId: id };
const artifactRef = { artifactId: id };
const activityRef = { activityId: id };
const failure = { error: agentErrorInfoSchema };
const cancellation = { reason: optionalText };
const progress = z.optional(z.number().check(z.gte(0), z.lte(1)));

/** The payload schema of every event type, keyed by `type`. */
export const agentEventPayloadSchemas = {
  'session.started': z.object({ title: optionalText, data: z.optional(z.unknown()) }),

  'run.started': z.object({
    input: z.optional(z.unknown()),
    title: optionalText,
    /**
     * The run this one continues: one that ended waiting for input (tool results, answers to
     * its approvals). Events of this run that name an entity the other still waits on settle it.
     */
    continuesRunId: z.optional(id),
  }),
  'run.completed': z.object({
    output: z.optional(z.unknown()),
    usage: z.optional(agentUsageSchema),
    pendingToolCallIds: z.optional(z.array(id)),
    /** Approvals the run ended waiting on (an interrupt): answered in a later run. */
    pendingApprovalIds: z.optional(z.array(id)),
  }),
  'run.failed': z.object(failure),
  'run.cancelled': z.object(cancellation),

  'message.started': z.object({
    ...messageRef,
    role: agentMessageRoleSchema,
    content: z.optional(agentMessageContentSchema),
    name: optionalText,
    toolCallId: z.optional(id),
  }),
  'message.delta': z.object({ ...messageRef, delta: z.string() }),
  'message.completed': z.object({ ...messageRef, content: z.optional(agentMessageContentSchema) }),
  'message.failed': z.object({ ...messageRef, ...failure }),
  'message.cancelled': z.object({ ...messageRef, ...cancellation }),

  'reasoning.started': z.object({
    ...reasoningRef,
    redacted: z.optional(z.boolean()),
    content: optionalText,
  }),
  'reasoning.delta': z.object({ ...reasoningRef, delta: z.string() }),
  'reasoning.completed': z.object({ ...reasoningRef, content: optionalText, summary: optionalText }),
  'reasoning.failed': z.object({ ...reasoningRef, ...failure }),
  'reasoning.cancelled': z.object({ ...reasoningRef, ...cancellation }),

  'tool.requested': z.object({
    ...toolRef,
    name: id,
    arguments: optionalText,
    attempt: z.optional(z.number().check(z.int(), z.gte(1))),
    retryOf: z.optional(id),
    messageId: z.optional(id),
  }),
  'tool.arguments_delta': z.object({ ...toolRef, delta: z.string() }),
  'tool.arguments_completed': z.object({ ...toolRef, arguments: optionalText }),
  'tool.running': z.object(toolRef),
  'tool.completed': z.object({ ...toolRef, result: z.optional(z.unknown()) }),
  'tool.failed': z.object({ ...toolRef, ...failure }),
  'tool.cancelled': z.object({ ...toolRef, ...cancellation }),

  'approval.requested': z.object({
    ...approvalRef,
    toolCallId: z.optional(id),
    description: optionalText,
    risk: optionalText,
    data: z.optional(z.unknown()),
    editable: z.optional(z.boolean()),
    expiresAt: z.optional(z.number()),
    version: z.optional(z.union([z.string(), z.number()])),
  }),
  'approval.resolved': z.object({
    ...approvalRef,
    decision: approvalDecisionSchema,
    data: z.optional(z.unknown()),
  }),

  'task.created': z.object({
    ...taskRef,
    title: optionalText,
    description: optionalText,
    parentTaskId: z.optional(id),
    progress,
    data: z.optional(z.unknown()),
  }),
  'task.updated': z.object({
    ...taskRef,
    title: optionalText,
    description: optionalText,
    progress,
    data: z.optional(z.unknown()),
  }),
  'task.completed': z.object({ ...taskRef, result: z.optional(z.unknown()) }),
  'task.failed': z.object({ ...taskRef, ...failure }),
  'task.cancelled': z.object({ ...taskRef, ...cancellation }),

  'artifact.created': z.object({
    ...artifactRef,
    mediaType: z.optional(id),
    title: optionalText,
    name: optionalText,
    content: optionalText,
    uri: optionalText,
    data: z.optional(z.unknown()),
    version: z.optional(z.number().check(z.int(), z.gte(1))),
  }),
  'artifact.updated': z.object({
    ...artifactRef,
    /** When present, greater than the artifact's current version. */
    version: z.optional(z.number().check(z.int(), z.gte(1))),
    title: optionalText,
    content: optionalText,
    uri: optionalText,
    data: z.optional(z.unknown()),
  }),
  'artifact.completed': z.object({
    ...artifactRef,
    content: optionalText,
    uri: optionalText,
    data: z.optional(z.unknown()),
  }),
  'artifact.failed': z.object({ ...artifactRef, ...failure }),

  'state.snapshot': z.object({ snapshot: z.unknown() }),
  'state.delta': z.object({ patch: z.array(jsonPatchOperationSchema) }),

  /** A runtime event with no standard meaning (AG-UI CUSTOM, RAW, SUBAGENT_*), kept in order per run. */
  'extension.emitted': z.object({ name: namespacedNameSchema, data: z.optional(z.unknown()) }),

  /** A structured activity (a plan, a progress card) as a whole; `replace: false` keeps an existing one. */
  'activity.snapshot': z.object({
    ...activityRef,
    activityType: id,
    content: z.unknown(),
    replace: z.optional(z.boolean()),
  }),
  /** An RFC 6902 patch to an activity's content. */
  'activity.delta': z.object({
    ...activityRef,
    activityType: z.optional(id),
    patch: z.array(jsonPatchOperationSchema),
  }),
} as const;

type PayloadSchemas = typeof agentEventPayloadSchemas;

/** Every event type of protocol 0.1. */
export type AgentEventType = keyof PayloadSchemas;

/** The payload of each event type. */
export type AgentEventPayloadMap = { [Type in AgentEventType]: z.infer<PayloadSchemas[Type]> };

/** The envelope every event shares, with the payload of its `type`. */
export interface AgentEventEnvelope<Type extends AgentEventType = AgentEventType> {
  protocolVersion: typeof AGENT_EVENT_PROTOCOL_VERSION;
  type: Type;
  eventId: string;
  sessionId: string;
  runId: string;
  sequence: number;
  timestamp: number;
  parentId?: string | undefined;
  payload: AgentEventPayloadMap[Type];
  meta?: Record<string, unknown> | undefined;
}

/** A validated event: the union of every envelope, discriminated by `type`. */
export type AgentEvent = { [Type in AgentEventType]: AgentEventEnvelope<Type> }[AgentEventType];

/** The event of one type. */
export type AgentEventOf<Type extends AgentEventType> = Extract<AgentEvent, { type: Type }>;

export type AgentErrorInfo = z.infer<typeof agentErrorInfoSchema>;
export type AgentUsage = z.infer<typeof agentUsageSchema>;
export type AgentMessageRole = z.infer<typeof agentMessageRoleSchema>;
export type AgentApprovalDecision = z.infer<typeof approvalDecisionSchema>;
export type JsonPatchOperation = z.infer<typeof jsonPatchOperationSchema>;

/** Every event type, in protocol order. */
export const AGENT_EVENT_TYPES = Object.keys(agentEventPayloadSchemas) as AgentEventType[];

const envelopeShape = {
  protocolVersion: z.literal(AGENT_EVENT_PROTOCOL_VERSION),
  eventId: id,
  sessionId: id,
  runId: id,
  sequence: z.number().check(z.int(), z.gte(0)),
  timestamp: z.number(),
  parentId: z.optional(z.string()),
  meta: z.optional(z.record(z.string(), z.unknown())),
};

function envelopeSchema<Type extends AgentEventType>(type: Type) {
  return z.object({
    ...envelopeShape,
    type: z.literal(type),
    payload: agentEventPayloadSchemas[type],
  });
}

/** The full envelope schema of each event type. */
export const agentEventSchemas = Object.fromEntries(AGENT_EVENT_TYPES.map((type) => [type, envelopeSchema(type)])) as {
  [Type in AgentEventType]: ReturnType<typeof envelopeSchema<Type>>;
};

type EnvelopeSchema = { [Type in AgentEventType]: (typeof agentEventSchemas)[Type] }[AgentEventType];

/** The schema of any event: a discriminated union on `type`; what it parses is an `AgentEvent`. */
export const agentEventSchema = z.discriminatedUnion(
  'type',
  Object.values(agentEventSchemas) as unknown as [EnvelopeSchema, ...EnvelopeSchema[]],
);
