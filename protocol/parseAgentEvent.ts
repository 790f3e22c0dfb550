import { AGENT_ENTITY_KIND_TABLE } from './agentEntityKinds';
import {
  type AgentCommand,
  agentCommandEnvelopeSchema,
  agentCommandSchema,
  type UnknownAgentCommandEnvelope,
} from './commandSchemas';
import { AGENT_EVENT_PROTOCOL_VERSION } from './constants';
import type { AgentValidationFailure } from './errors';
import { type AgentEvent, agentEventPayloadSchemas, agentEventSchema, agentEventSchemas } from './eventSchemas';
import { checkPlainJson, DEFAULT_MAX_JSON_DEPTH } from './plainJson';
import { toValidationFailure } from './validationFailure';

export type AgentParseResult<Value> =
  | { success: true; value: Value }
  | { success: false; error: AgentValidationFailure };

/** The payload fields each event type declares: the ones that reach AgentState. */
const PAYLOAD_FIELDS = Object.fromEntries(
  Object.entries(agentEventPayloadSchemas).map(([type, schema]) => [type, Object.keys(schema._zod.def.shape)]),
) as Record<string, readonly string[]>;

function plainJsonFailure(path: string, value: unknown): AgentValidationFailure | undefined {
  const failure = checkPlainJson(value, { maxDepth: DEFAULT_MAX_JSON_DEPTH });
  if (failure === undefined) return undefined;
  const at = failure.path === '' ? path : `${path}.${failure.path}`;
  return { path: at, reason: failure.reason, message: `${at}: ${failure.reason}` };
}

/** A record without a prototype of its own: what the schema's `z.record` accepts, and JSON too. */
function isPlainMeta(meta: unknown): boolean {
  return isRecord(meta) && checkPlainJson(meta, { maxDepth: DEFAULT_MAX_JSON_DEPTH }) === undefined;
}

/**
 * The check the schema cannot make: `z.unknown()` fields (a state snapshot, a tool result,
 * `data`, `input`, `output`) and `meta` must be plain JSON, nested at most
 * `DEFAULT_MAX_JSON_DEPTH` levels, or AgentState would stop being plain JSON (and a
 * 100,000-deep value would overflow the stack when it is written). Runs after the schema
 * accepted the event, on the fields its type declares; an absent optional field is
 * `undefined` and skipped.
 */
function checkPayloadAndMeta(event: {
  type: string;
  payload: object;
  meta?: unknown;
}): AgentValidationFailure | undefined {
  const payload = event.payload as Record<string, unknown>;
  for (const field of PAYLOAD_FIELDS[event.type] ?? []) {
    const value = payload[field];
    if (value === undefined) continue;
    const failure = plainJsonFailure(`payload.${field}`, value);
    if (failure !== undefined) return failure;
  }
  return event.meta === undefined ? undefined : plainJsonFailure('meta', event.meta);
}

/**
 * Parses an untrusted value as an AgentEvent with the full schema, and checks that its
 * free-form fields and meta are plain JSON within the nesting limit.
 *
 * @example
 * const result = parseAgentEvent(JSON.parse(line));
 * if (!result.success) console.warn(result.error.message); // "payload.delta: expected string, got number"
 */
export function parseAgentEvent(value: unknown): AgentParseResult<AgentEvent> {
  const result = agentEventSchema.safeParse(value);
  if (!result.success) return { success: false, error: toValidationFailure(result.error.issues, value) };
  const failure = checkPayloadAndMeta(value as AgentEvent);
  return failure === undefined ? { success: true, value: value as AgentEvent } : { success: false, error: failure };
}

/** Parses an untrusted value as an AgentCommand with the full schema; its `data` and meta must be plain JSON. */
export function parseAgentCommand(value: unknown): AgentParseResult<AgentCommand> {
  const result = agentCommandSchema.safeParse(value);
  if (!result.success) return { success: false, error: toValidationFailure(result.error.issues, value) };
  const command = value as AgentCommand;
  const failure =
    plainJsonFailure('payload', command.payload) ??
    (command.meta === undefined ? undefined : plainJsonFailure('meta', command.meta));
  return failure === undefined ? { success: true, value: command } : { success: false, error: failure };
}

/** True when `value` is a valid AgentEvent of protocol 0.1 (what `parseAgentEvent` accepts). */
export function isAgentEvent(value: unknown): value is AgentEvent {
  return agentEventSchema.safeParse(value).success && checkPayloadAndMeta(value as AgentEvent) === undefined;
}

/**
 * True when `value` has the envelope of command protocol 0.1 (protocol name and version,
 * non-empty ids, a finite timestamp, an object payload, plain-object meta), whatever its
 * type and payload: `isAgentCommand` checks those too.
 */
export function isAgentCommandEnvelope(value: unknown): value is UnknownAgentCommandEnvelope {
  return agentCommandEnvelopeSchema.safeParse(value).success;
}

/** True when `value` is a valid AgentCommand of command protocol 0.1 (what `parseAgentCommand` accepts). */
export function isAgentCommand(value: unknown): value is AgentCommand {
  return parseAgentCommand(value).success;
}

// The three streamed delta types and their id fields, from the entity-kind table.
const { message, toolCall, reasoning } = AGENT_ENTITY_KIND_TABLE;

/** The payload field naming the entity of a streamed delta type (`message.delta` -> `messageId`), or undefined. */
export function deltaEntityField(type: unknown): string | undefined {
  // Comparisons, not a lookup table: a keyed load with a string from JSON costs more.
  if (type === message.delta) return message.idField;
  if (type === toolCall.delta) return toolCall.idField;
  if (type === reasoning.delta) return reasoning.idField;
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
    (meta === undefined || isPlainMeta(meta)) &&
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
  if (deltaField !== undefined && isValidDelta(value, deltaField)) return undefined;
  // Not a delta, or a delta the hand check refused: the schema says where and why, so both paths report alike.
  const result = schema.safeParse(value);
  if (!result.success) return toValidationFailure(result.error.issues, value);
  return checkPayloadAndMeta(value as unknown as AgentEvent);
}
