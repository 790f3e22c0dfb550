import { createQuickAccept } from '../../protocol/createQuickAccept';
import { AISDKChunkError } from './AISDKChunkError';
import { type UIMessageChunk, uiMessageChunkSchema } from './uiMessageChunkSchema';

const quickAccept = createQuickAccept(uiMessageChunkSchema);

/** The variant a chunk's `type` names, so a refusal speaks of its fields rather than of the whole union. */
type Variant = (typeof uiMessageChunkSchema._zod.def.options)[number];
const variantByType = new Map<string, Variant>();
let dataVariant: Variant | undefined;
for (const option of uiMessageChunkSchema._zod.def.options) {
  const values = option._zod.def.shape.type._zod.values;
  if (values === undefined) dataVariant = option;
  else for (const value of values) if (typeof value === 'string') variantByType.set(value, option);
}

interface Issue {
  path: PropertyKey[];
  code?: string;
  expected?: string;
  input?: unknown;
  values?: readonly unknown[];
  message: string;
}

/** The first problem zod reports, as a dotted path and what was wrong, in words (zod/mini has no locale). */
function problemOf(issues: readonly Issue[]): [string, string] {
  const issue = issues[0];
  if (issue === undefined) return ['', 'not a UI message stream chunk'];
  const path = issue.path.map(String).join('.');
  if (issue.code === 'invalid_type') {
    if (issue.input !== undefined) return [path, `expected ${issue.expected}`];
    return [path, issue.expected === 'nonoptional' ? 'is missing' : `is missing (expected ${issue.expected})`];
  }
  if (issue.code === 'invalid_value' && issue.values !== undefined) {
    return [path, `expected one of ${issue.values.map((value) => JSON.stringify(value)).join(', ')}`];
  }
  return [path, issue.message];
}

/**
 * Parses one server-sent event's `data` as a UI message stream chunk, checked with
 * `uiMessageChunkSchema` (a quick check that allocates nothing first: it runs once per
 * streamed token). The stream's closing `[DONE]` is `undefined`. Anything else throws an
 * `AISDKChunkError` naming the field and what was wrong with it.
 *
 * @example
 * readUIMessageChunk('{"type":"text-delta","id":"t1","delta":"Hi"}'); // { type: 'text-delta', id: 't1', delta: 'Hi' }
 * readUIMessageChunk('[DONE]'); // undefined
 * readUIMessageChunk('{"type":"text-delta","id":"t1"}'); // throws: ... at delta: Invalid input ...
 */
export function readUIMessageChunk(data: string): UIMessageChunk | undefined {
  if (data === '[DONE]') return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(data);
  } catch {
    throw new AISDKChunkError(undefined, '', 'the frame is not JSON', data);
  }
  if (quickAccept(parsed)) return parsed as UIMessageChunk;
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new AISDKChunkError(undefined, '', 'expected a JSON object', data);
  }
  const type = (parsed as { type?: unknown }).type;
  if (typeof type !== 'string') throw new AISDKChunkError(undefined, 'type', 'expected a string', data);
  const variant = variantByType.get(type) ?? (type.startsWith('data-') ? dataVariant : undefined);
  if (variant === undefined) throw new AISDKChunkError(type, 'type', 'not a chunk type of the protocol', data);
  const result = variant.safeParse(parsed);
  if (result.success) return result.data as UIMessageChunk;
  const [field, reason] = problemOf(result.error.issues as readonly Issue[]);
  throw new AISDKChunkError(type, field, reason, data);
}
