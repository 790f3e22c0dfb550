import type { AGUIEvent, ReasoningMessageContentEvent, TextMessageContentEvent, ToolCallArgsEvent } from '@ag-ui/core';
import { EventSchema } from '@ag-ui/core/schemas';
import { AgentError } from '../../protocol/errors';

/** An AG-UI event that failed AG-UI's own schema, or a frame that is not JSON. */
export class AgUIEventError extends AgentError {
  /** The AG-UI `type` of the offending event, when it has one. */
  readonly aguiType: string | undefined;
  /** The field that is wrong, as a dotted path. */
  readonly field: string;
  readonly event: unknown;

  constructor(aguiType: string | undefined, field: string, reason: string, event: unknown) {
    super('invalid_agui_event', `Invalid AG-UI ${aguiType ?? 'event'}${field ? ` at ${field}` : ''}: ${reason}`);
    this.name = 'AgUIEventError';
    this.aguiType = aguiType;
    this.field = field;
    this.event = event;
  }

  /** Whether `value` is an AgUIEventError, from any copy of the package. */
  declare static isInstance: (value: unknown) => value is AgUIEventError;
}

type PlainDelta = TextMessageContentEvent | ReasoningMessageContentEvent | ToolCallArgsEvent;

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * The three streamed delta events in their plain shape (`type`, id, `delta`, an optional
 * integer `timestamp`, nothing else) are accepted without zod: AG-UI's schema would accept
 * them too (a property test holds this), and it costs several times the rest of the
 * pipeline per delta. Everything else goes through `@ag-ui/core`'s schema.
 */
function isPlainDelta(event: Record<string, unknown>): event is PlainDelta {
  // Comparisons, not a lookup table: a keyed load with a string from JSON costs more.
  const type = event.type;
  let idField: string;
  if (type === 'TEXT_MESSAGE_CONTENT' || type === 'REASONING_MESSAGE_CONTENT') {
    if (typeof event.messageId !== 'string') return false;
    idField = 'messageId';
  } else if (type === 'TOOL_CALL_ARGS') {
    if (typeof event.toolCallId !== 'string') return false;
    idField = 'toolCallId';
  } else {
    return false;
  }
  if (typeof event.delta !== 'string') return false;
  let keys = 0;
  for (const key in event) {
    keys += 1;
    if (key !== 'type' && key !== idField && key !== 'delta' && key !== 'timestamp') return false;
  }
  return keys === 3 || (keys === 4 && Number.isSafeInteger(event.timestamp));
}

/** Validates one AG-UI event with `@ag-ui/core`'s schema; unknown fields are kept, as AG-UI does. */
export function parseAgUIEvent(value: unknown): AGUIEvent {
  if (isRecord(value) && isPlainDelta(value)) return value;
  const result = EventSchema.safeParse(value);
  // zod types an optional field as `T | undefined`, which `exactOptionalPropertyTypes` tells
  // apart from the `?: T` of `@ag-ui/core`'s `Event`; both are generated from one spec.
  if (result.success) return result.data as AGUIEvent;
  const issue = result.error.issues[0];
  const type = typeof value === 'object' && value !== null && 'type' in value ? value.type : undefined;
  throw new AgUIEventError(
    typeof type === 'string' ? type : undefined,
    issue?.path.map(String).join('.') ?? '',
    issue?.message ?? 'does not match the AG-UI schema',
    value,
  );
}

/** An SSE frame's data (or an already parsed object, from a WebSocket say) as a validated AG-UI event. */
export function readAgUIChunk(chunk: unknown): AGUIEvent {
  if (
    typeof chunk === 'object' &&
    chunk !== null &&
    // A property read, not `'data' in chunk`: this runs once per streamed frame.
    typeof (chunk as { data?: unknown }).data === 'string' &&
    !('type' in chunk)
  ) {
    const data = (chunk as { data: string }).data;
    let parsed: unknown;
    try {
      parsed = JSON.parse(data);
    } catch {
      throw new AgUIEventError(undefined, '', `the frame is not JSON: ${data.slice(0, 120)}`, data);
    }
    return parseAgUIEvent(parsed);
  }
  return parseAgUIEvent(chunk);
}
