import { type AgentCommand, agentCommandSchema } from './commandSchemas';
import { AGENT_EVENT_PROTOCOL_VERSION } from './constants';
import type { AgentValidationFailure } from './errors';
import { type AgentEvent, agentEventSchema, agentEventSchemas } from './eventSchemas';
import { toValidationFailure } from './validationFailure';

export type AgentParseResult<Value> =
  | { success: true; value: Value }
  | { success: false; error: AgentValidationFailure };

/**
 * Parses an untrusted value as an AgentEvent with the full schema.
 *
 * @example
 * const result = parseAgentEvent(JSON.parse(line));
 * if (!result.success) console.warn(result.error.message); // "payload.delta: expected string, got number"
 */
export function parseAgentEvent(value: unknown): AgentParseResult<AgentEvent> {
  const result = agentEventSchema.safeParse(value);
  if (result.success) return { success: true, value: value as AgentEvent };
  return { success: false, error: toValidationFailure(result.error.issues, value) };
}

/** Parses an untrusted value as an AgentCommand with the full schema. */
export function parseAgentCommand(value: unknown): AgentParseResult<AgentCommand> {
  const result = agentCommandSchema.safeParse(value);
  if (result.success) return { success: true, value: value as AgentCommand };
  return { success: false, error: toValidationFailure(result.error.issues, value) };
}

/** True when `value` is a valid AgentEvent of protocol 0.1. */
export function isAgentEvent(value: unknown): value is AgentEvent {
  return agentEventSchema.safeParse(value).success;
}

/** True when `value` is a valid AgentCommand of command protocol 0.1. */
export function isAgentCommand(value: unknown): value is AgentCommand {
  return agentCommandSchema.safeParse(value).success;
}

const DELTA_ENTITY_FIELD: Readonly<Record<string, string>> = {
  'message.delta': 'messageId',
  'reasoning.delta': 'reasoningId',
  'tool.arguments_delta': 'toolCallId',
};

function fail(path: string, reason: string): AgentValidationFailure {
  return { path, reason, message: `${path}: ${reason}` };
}

function isNonEmptyString(value: unknown): value is string {
  return typeof value === 'string' && value.length > 0;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * The store's validation of an incoming event. It accepts and rejects exactly what
 * `parseAgentEvent` does (a property test holds it to that), but checks the envelope
 * and the three streamed delta payloads by hand: zod's fixed cost per object is
 * larger than the whole per-delta budget. Other payloads go through their schema.
 */
export function checkAgentEvent(value: unknown): AgentValidationFailure | undefined {
  if (!isRecord(value)) return fail('', 'expected object');
  const type = value.type;
  const schema = typeof type === 'string' ? agentEventSchemas[type as AgentEvent['type']] : undefined;
  if (schema === undefined || !Object.hasOwn(agentEventSchemas, type as string)) {
    return toValidationFailure(agentEventSchema.safeParse(value).error?.issues ?? [], value);
  }
  const deltaField = DELTA_ENTITY_FIELD[type as string];
  if (deltaField === undefined) {
    const result = schema.safeParse(value);
    return result.success ? undefined : toValidationFailure(result.error.issues, value);
  }
  if (value.protocolVersion !== AGENT_EVENT_PROTOCOL_VERSION) {
    return fail('protocolVersion', `expected "${AGENT_EVENT_PROTOCOL_VERSION}"`);
  }
  if (!isNonEmptyString(value.eventId)) return fail('eventId', 'expected non-empty string');
  if (!isNonEmptyString(value.sessionId)) return fail('sessionId', 'expected non-empty string');
  if (!isNonEmptyString(value.runId)) return fail('runId', 'expected non-empty string');
  const sequence = value.sequence;
  if (typeof sequence !== 'number' || !Number.isSafeInteger(sequence) || sequence < 0) {
    return fail('sequence', 'expected non-negative safe integer');
  }
  if (typeof value.timestamp !== 'number' || !Number.isFinite(value.timestamp)) {
    return fail('timestamp', 'expected finite number');
  }
  if (value.parentId !== undefined && typeof value.parentId !== 'string') return fail('parentId', 'expected string');
  if (value.meta !== undefined && !isRecord(value.meta)) return fail('meta', 'expected record');
  const payload = value.payload;
  if (!isRecord(payload)) return fail('payload', 'expected object');
  if (!isNonEmptyString(payload[deltaField])) return fail(`payload.${deltaField}`, 'expected non-empty string');
  if (typeof payload.delta !== 'string') return fail('payload.delta', 'expected string');
  return undefined;
}
