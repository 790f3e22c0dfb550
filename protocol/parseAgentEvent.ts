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

/** The payload field naming the entity of a streamed delta type, or undefined for other types. */
function deltaEntityField(type: unknown): string | undefined {
  // Comparisons, not a lookup table: a keyed load with a string from JSON costs more.
  if (type === 'message.delta') return 'messageId';
  if (type === 'tool.arguments_delta') return 'toolCallId';
  if (type === 'reasoning.delta') return 'reasoningId';
  return undefined;
}

function isNonEmptyString(value: unknown): value is string {
  return typeof value === 'string' && value.length > 0;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isValidDelta(value: Record<string, unknown>, deltaField: string): boolean {
  const { sequence, timestamp, parentId, meta, payload } = value;
  return (
    value.protocolVersion === AGENT_EVENT_PROTOCOL_VERSION &&
    isNonEmptyString(value.eventId) &&
    isNonEmptyString(value.sessionId) &&
    isNonEmptyString(value.runId) &&
    typeof sequence === 'number' &&
    Number.isSafeInteger(sequence) &&
    sequence >= 0 &&
    typeof timestamp === 'number' &&
    Number.isFinite(timestamp) &&
    (parentId === undefined || typeof parentId === 'string') &&
    (meta === undefined || isRecord(meta)) &&
    isRecord(payload) &&
    isNonEmptyString(payload[deltaField]) &&
    typeof payload.delta === 'string'
  );
}

/**
 * Whether a value is a valid streamed delta event (`message.delta`, `reasoning.delta`,
 * `tool.arguments_delta`): exactly what the schema accepts for those types, checked by
 * hand. Returns the payload field that names the entity, or undefined.
 */
export function checkStreamedDelta(value: unknown): string | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const deltaField = deltaEntityField((value as { type?: unknown }).type);
  if (deltaField === undefined) return undefined;
  return isValidDelta(value as Record<string, unknown>, deltaField) ? deltaField : undefined;
}

/**
 * The store's validation of an incoming event. It accepts and rejects exactly what
 * `parseAgentEvent` does (a property test holds it to that), but checks the envelope
 * and the three streamed delta payloads by hand: zod's fixed cost per object is
 * larger than the whole per-delta budget. Other payloads go through their schema.
 */
export function checkAgentEvent(value: unknown): AgentValidationFailure | undefined {
  if (!isRecord(value)) return toValidationFailure(agentEventSchema.safeParse(value).error?.issues ?? [], value);
  const type = value.type;
  const schema = typeof type === 'string' ? agentEventSchemas[type as AgentEvent['type']] : undefined;
  if (schema === undefined || !Object.hasOwn(agentEventSchemas, type as string)) {
    return toValidationFailure(agentEventSchema.safeParse(value).error?.issues ?? [], value);
  }
  const deltaField = deltaEntityField(type);
  if (deltaField === undefined) {
    const result = schema.safeParse(value);
    return result.success ? undefined : toValidationFailure(result.error.issues, value);
  }
  if (isValidDelta(value, deltaField)) return undefined;
  // Rare path: let the schema say where and why, so both paths report alike.
  return toValidationFailure(schema.safeParse(value).error?.issues ?? [], value);
}
