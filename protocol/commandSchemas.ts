import * as z from 'zod/mini';
import { AGENT_COMMAND_PROTOCOL, AGENT_COMMAND_PROTOCOL_VERSION } from './constants';
import { agentErrorInfoSchema } from './eventSchemas';

const id = z.string().check(z.minLength(1));

/**
 * The payload schema of every command type, keyed by `type`. Payloads and envelopes are
 * strict: an unknown field (a misspelt `decison`) makes the command invalid rather than
 * being dropped; extra data goes in `meta`.
 */
export const agentCommandPayloadSchemas = {
  'approval.resolve': z.strictObject({
    approvalId: id,
    decision: z.enum(['approved', 'rejected', 'modified']),
    data: z.optional(z.unknown()),
    expectedVersion: z.optional(z.union([z.string(), z.number()])),
  }),
  'tool.retry': z.strictObject({ toolCallId: id }),
  'run.cancel': z.strictObject({ reason: z.optional(z.string()) }),
  /**
   * The result of a tool the application executed (a client-side tool): `error` fails the
   * call, otherwise it completes with `result`.
   */
  'tool.submit_result': z.strictObject({
    toolCallId: id,
    result: z.optional(z.unknown()),
    error: z.optional(agentErrorInfoSchema),
  }),
} as const;

type PayloadSchemas = typeof agentCommandPayloadSchemas;

/** Every command type of command protocol 0.1. */
export type AgentCommandType = keyof PayloadSchemas;

export type AgentCommandPayloadMap = { [Type in AgentCommandType]: z.infer<PayloadSchemas[Type]> };

/** A user intent sent back to the runtime. It never changes AgentState by itself. */
export interface AgentCommandEnvelope<Type extends AgentCommandType = AgentCommandType> {
  commandProtocol: typeof AGENT_COMMAND_PROTOCOL;
  commandProtocolVersion: typeof AGENT_COMMAND_PROTOCOL_VERSION;
  type: Type;
  commandId: string;
  idempotencyKey: string;
  sessionId: string;
  runId: string;
  timestamp: number;
  payload: AgentCommandPayloadMap[Type];
  meta?: Record<string, unknown> | undefined;
}

export type AgentCommand = { [Type in AgentCommandType]: AgentCommandEnvelope<Type> }[AgentCommandType];
export type AgentCommandOf<Type extends AgentCommandType> = Extract<AgentCommand, { type: Type }>;

export const AGENT_COMMAND_TYPES = Object.keys(agentCommandPayloadSchemas) as AgentCommandType[];

const envelopeShape = {
  commandProtocol: z.literal(AGENT_COMMAND_PROTOCOL),
  commandProtocolVersion: z.literal(AGENT_COMMAND_PROTOCOL_VERSION),
  commandId: id,
  idempotencyKey: id,
  sessionId: id,
  runId: id,
  timestamp: z.number(),
  meta: z.optional(z.record(z.string(), z.unknown())),
};

function commandSchema<Type extends AgentCommandType>(type: Type) {
  return z.strictObject({ ...envelopeShape, type: z.literal(type), payload: agentCommandPayloadSchemas[type] });
}

/** The schema of any command: a discriminated union on `type`. */
export const agentCommandSchema = z.discriminatedUnion('type', [
  commandSchema('approval.resolve'),
  commandSchema('tool.retry'),
  commandSchema('run.cancel'),
  commandSchema('tool.submit_result'),
]);

/**
 * The envelope of any command, whatever its type and payload: what a runtime checks before
 * it knows the command types of the sender's version.
 */
export const agentCommandEnvelopeSchema = z.object({
  ...envelopeShape,
  type: id,
  payload: z.record(z.string(), z.unknown()),
});

/** A command envelope of an unknown or unchecked type: `isAgentCommandEnvelope` narrows to it. */
export type UnknownAgentCommandEnvelope = z.infer<typeof agentCommandEnvelopeSchema>;
