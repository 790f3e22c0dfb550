import { AgentError } from '../../protocol/errors';

/** One event of a Messages API stream, after `readAnthropicEvent` checked the fields the mapping reads. */
export interface AnthropicStreamEvent {
  type: string;
  index?: number;
  message?: { id?: string; model?: string; usage?: Record<string, unknown> | null };
  content_block?: Record<string, unknown> & { type: string };
  delta?: Record<string, unknown> & { type?: string };
  usage?: Record<string, unknown> | null;
  error?: { type?: string; message?: string };
}

const EXCERPT_LIMIT = 200;

/** An `error` event in the stream (`overloaded_error`, `api_error`, ...). */
export class AnthropicStreamError extends AgentError {
  constructor(type: string, message: string) {
    super(type, message);
    this.name = 'AnthropicStreamError';
  }

  /** Whether `value` is an AnthropicStreamError, from any copy of the package. */
  declare static isInstance: (value: unknown) => value is AnthropicStreamError;
}

/**
 * A frame from the Messages API that is not a stream event the provider can read: not
 * JSON, JSON of another shape, or a tool_use block without a name. `field` is the
 * offending path, `frame` the frame's text.
 */
export class AnthropicEventError extends AgentError {
  readonly field: string;
  readonly frame: string;

  constructor(field: string, reason: string, frame: string) {
    const excerpt = frame.length > EXCERPT_LIMIT ? `${frame.slice(0, EXCERPT_LIMIT)}…` : frame;
    super(
      'invalid_anthropic_event',
      `Invalid event from the Anthropic Messages API${field ? ` at ${field}` : ''}: ${reason}; the frame was ${excerpt}`,
    );
    this.name = 'AnthropicEventError';
    this.field = field;
    this.frame = frame;
  }

  /** Whether `value` is an AnthropicEventError, from any copy of the package. */
  declare static isInstance: (value: unknown) => value is AnthropicEventError;
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);
const isIndex = (value: unknown) => Number.isInteger(value) && (value as number) >= 0;

/** The first field the mapping cannot read, as `[path, reason]`; unknown event types are fine (`ping`, later ones). */
function findProblem(event: unknown): [string, string] | undefined {
  if (!isObject(event)) return ['', 'expected a JSON object'];
  if (typeof event.type !== 'string') return ['type', 'expected a string'];
  switch (event.type) {
    case 'message_start': {
      if (!isObject(event.message)) return ['message', 'expected an object'];
      const { id, model, usage } = event.message;
      if (id !== undefined && typeof id !== 'string') return ['message.id', 'expected a string'];
      if (model !== undefined && typeof model !== 'string') return ['message.model', 'expected a string'];
      if (usage !== undefined && usage !== null && !isObject(usage)) return ['message.usage', 'expected an object'];
      return undefined;
    }
    case 'content_block_start':
      if (!isIndex(event.index)) return ['index', 'expected an integer'];
      if (!isObject(event.content_block)) return ['content_block', 'expected an object'];
      if (typeof event.content_block.type !== 'string') return ['content_block.type', 'expected a string'];
      return undefined;
    case 'content_block_delta':
      if (!isIndex(event.index)) return ['index', 'expected an integer'];
      if (!isObject(event.delta)) return ['delta', 'expected an object'];
      if (typeof event.delta.type !== 'string') return ['delta.type', 'expected a string'];
      return undefined;
    case 'content_block_stop':
      return isIndex(event.index) ? undefined : ['index', 'expected an integer'];
    case 'message_delta':
      if (event.delta !== undefined && !isObject(event.delta)) return ['delta', 'expected an object'];
      if (event.usage !== undefined && event.usage !== null && !isObject(event.usage))
        return ['usage', 'expected an object'];
      return undefined;
    case 'error':
      return isObject(event.error) ? undefined : ['error', 'expected an object'];
    default:
      return undefined;
  }
}

/**
 * Parses one SSE frame's data as a Messages API stream event and checks, by hand (it runs
 * once per streamed token), the fields the mapping reads; unknown fields and types are allowed.
 *
 * @example
 * readAnthropicEvent('{"type":"content_block_stop","index":0}'); // { type: 'content_block_stop', index: 0 }
 * readAnthropicEvent('{"type":"content_block_delta"}'); // throws AnthropicEventError: ... at index: expected an integer ...
 */
export function readAnthropicEvent(data: string): AnthropicStreamEvent {
  let parsed: unknown;
  try {
    parsed = JSON.parse(data);
  } catch {
    throw new AnthropicEventError('', 'the frame is not JSON', data);
  }
  const problem = findProblem(parsed);
  if (problem !== undefined) throw new AnthropicEventError(problem[0], problem[1], data);
  return parsed as AnthropicStreamEvent;
}
