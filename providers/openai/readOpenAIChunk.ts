import { AgentError } from '../../protocol/errors';

export interface OpenAIToolCallFragment {
  index?: number;
  id?: string | null;
  type?: string;
  function?: { name?: string | null; arguments?: string | null } | null;
}

export interface OpenAIChunkDelta {
  role?: string | null;
  /** A string; some servers (Mistral) send parts, whose `text` parts are read. */
  content?: string | null | Array<Record<string, unknown>>;
  reasoning_content?: string | null;
  reasoning?: string | null;
  refusal?: string | null;
  tool_calls?: OpenAIToolCallFragment[] | null;
}

/** One `chat.completion.chunk`, after `readOpenAIChunk` checked the fields the mapping reads. */
export interface OpenAICompletionChunk {
  id?: string;
  model?: string;
  choices?: Array<{ index?: number; delta?: OpenAIChunkDelta | null; finish_reason?: string | null }>;
  usage?: Record<string, unknown> | null;
  error?: { message?: string; code?: string | number | null; type?: string } | null;
}

const EXCERPT_LIMIT = 200;

/** An error object the server sent inside the stream. */
export class OpenAIStreamError extends AgentError {
  readonly type: string | undefined;

  constructor(message: string, code: string | undefined, type: string | undefined) {
    super(code ?? type ?? 'openai_error', message);
    this.name = 'OpenAIStreamError';
    this.type = type;
  }

  /** Whether `value` is an OpenAIStreamError, from any copy of the package. */
  declare static isInstance: (value: unknown) => value is OpenAIStreamError;
}

/**
 * A frame from an OpenAI-compatible server that is not a chunk: not JSON, or JSON of
 * another shape, or a tool call without a name. `field` is the offending path, `frame`
 * the frame's text.
 */
export class OpenAIChunkError extends AgentError {
  readonly field: string;
  readonly frame: string;

  constructor(field: string, reason: string, frame: string) {
    const excerpt = frame.length > EXCERPT_LIMIT ? `${frame.slice(0, EXCERPT_LIMIT)}…` : frame;
    super(
      'invalid_openai_chunk',
      `Invalid chunk from the OpenAI-compatible server${field ? ` at ${field}` : ''}: ${reason}; the frame was ${excerpt}`,
    );
    this.name = 'OpenAIChunkError';
    this.field = field;
    this.frame = frame;
  }

  /** Whether `value` is an OpenAIChunkError, from any copy of the package. */
  declare static isInstance: (value: unknown) => value is OpenAIChunkError;
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);
const isTextOrNull = (value: unknown) => value === undefined || value === null || typeof value === 'string';

/** The first field the mapping cannot read, as `[path, reason]`, or undefined when the chunk is fine. */
/** What is wrong in one choice's `delta`, as a path below it (`.content`) and a reason. */
function deltaProblem(delta: unknown): [string, string] | undefined {
  if (!isObject(delta)) return ['', 'expected an object'];
  const content = delta.content;
  if (Array.isArray(content)) {
    const part = content.findIndex((item) => !isObject(item) || typeof item.type !== 'string');
    if (part !== -1) return [`.content.${part}`, 'expected a content part with a type'];
  } else if (!isTextOrNull(content)) return ['.content', 'expected a string or parts'];
  if (!isTextOrNull(delta.role)) return ['.role', 'expected a string'];
  if (!isTextOrNull(delta.reasoning_content)) return ['.reasoning_content', 'expected a string'];
  if (!isTextOrNull(delta.reasoning)) return ['.reasoning', 'expected a string'];
  if (!isTextOrNull(delta.refusal)) return ['.refusal', 'expected a string'];
  const toolCalls = delta.tool_calls;
  if (toolCalls === undefined || toolCalls === null) return undefined;
  if (!Array.isArray(toolCalls)) return ['.tool_calls', 'expected an array'];
  for (let call = 0; call < toolCalls.length; call += 1) {
    const fragment = toolCalls[call];
    if (!isObject(fragment)) return [`.tool_calls.${call}`, 'expected an object'];
    if (fragment.index !== undefined && !Number.isInteger(fragment.index)) {
      return [`.tool_calls.${call}.index`, 'expected an integer'];
    }
    if (!isTextOrNull(fragment.id)) return [`.tool_calls.${call}.id`, 'expected a string'];
    const fn = fragment.function;
    if (fn === undefined || fn === null) continue;
    if (!isObject(fn)) return [`.tool_calls.${call}.function`, 'expected an object'];
    if (!isTextOrNull(fn.name)) return [`.tool_calls.${call}.function.name`, 'expected a string'];
    if (!isTextOrNull(fn.arguments)) return [`.tool_calls.${call}.function.arguments`, 'expected a string'];
  }
  return undefined;
}

function findProblem(chunk: unknown): [string, string] | undefined {
  if (!isObject(chunk)) return ['', 'expected a JSON object'];
  const { choices, usage, error } = chunk;
  if (error !== undefined && error !== null) return isObject(error) ? undefined : ['error', 'expected an object'];
  if (usage !== undefined && usage !== null && !isObject(usage)) return ['usage', 'expected an object'];
  if (choices === undefined) {
    return usage === undefined || usage === null ? ['choices', 'is missing (not a chat.completion.chunk)'] : undefined;
  }
  if (!Array.isArray(choices)) return ['choices', 'expected an array'];
  // Paths are built only for a problem: this runs once per streamed token.
  for (let index = 0; index < choices.length; index += 1) {
    const choice = choices[index];
    if (!isObject(choice)) return [`choices.${index}`, 'expected an object'];
    if (choice.index !== undefined && typeof choice.index !== 'number') {
      return [`choices.${index}.index`, 'expected a number'];
    }
    if (!isTextOrNull(choice.finish_reason)) return [`choices.${index}.finish_reason`, 'expected a string'];
    const delta = choice.delta;
    if (delta === undefined || delta === null) continue;
    const problem = deltaProblem(delta);
    if (problem !== undefined) return [`choices.${index}.delta${problem[0]}`, problem[1]];
  }
  return undefined;
}

/**
 * Parses one SSE frame's data as a `chat.completion.chunk` and checks, by hand (it runs
 * once per streamed token), the fields the mapping reads; unknown fields are allowed.
 *
 * @example
 * readOpenAIChunk('{"choices":[{"index":0,"delta":{"content":"Hi"}}]}').choices[0].delta.content; // 'Hi'
 * readOpenAIChunk('{"choices":"no"}'); // throws OpenAIChunkError: ... at choices: expected an array ...
 */
export function readOpenAIChunk(data: string): OpenAICompletionChunk {
  let parsed: unknown;
  try {
    parsed = JSON.parse(data);
  } catch {
    throw new OpenAIChunkError('', 'the frame is not JSON', data);
  }
  const problem = findProblem(parsed);
  if (problem !== undefined) throw new OpenAIChunkError(problem[0], problem[1], data);
  return parsed as OpenAICompletionChunk;
}
