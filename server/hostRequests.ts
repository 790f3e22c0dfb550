import * as z from 'zod/mini';
import { type AgentCommand, agentCommandSchema } from '../protocol/commandSchemas';
import type { AgentValidationFailure } from '../protocol/errors';
import { agentErrorInfoSchema } from '../protocol/eventSchemas';
import { parseAgentCommand } from '../protocol/parseAgentEvent';
import { checkPlainJson, DEFAULT_MAX_JSON_DEPTH } from '../protocol/plainJson';
import { toValidationFailure, valueAt } from '../protocol/validationFailure';
import type { AgentRunContinuation } from '../providers/AgentProvider';
import { AgentHostError } from './AgentHostError';

/** The longest id or key a host takes (session, run, command, approval and tool call ids, idempotency keys). */
export const MAX_ID_LENGTH = 256;
/** The most approvals, and the most tool results, one continuation carries. */
export const MAX_CONTINUATION_ENTRIES = 1_000;

const id = z.string().check(z.minLength(1), z.maxLength(MAX_ID_LENGTH));

/** The body of `POST /sessions/:sessionId/runs`. */
export const agentHostRunRequestSchema = z.strictObject({
  provider: id,
  input: z.optional(z.unknown()),
  runId: z.optional(id),
  continuation: z.optional(
    z.strictObject({
      runId: id,
      approvals: z
        .array(
          z.strictObject({
            approvalId: id,
            status: z.enum(['resolved', 'cancelled']),
            decision: z.optional(z.enum(['approved', 'rejected', 'modified'])),
            data: z.optional(z.unknown()),
          }),
        )
        .check(z.maxLength(MAX_CONTINUATION_ENTRIES)),
      /**
       * The results of the tool calls the continued run ended waiting on, which the client
       * executed: the host settles those calls in its log before the continuing run starts,
       * so the run's history carries them.
       */
      toolResults: z.optional(
        z
          .array(
            z.strictObject({
              toolCallId: id,
              result: z.optional(z.unknown()),
              error: z.optional(agentErrorInfoSchema),
              /** When the client settled it: the host's event carries the same timestamp. */
              timestamp: z.optional(z.number().check(z.gte(0))),
              commandId: z.optional(id),
            }),
          )
          .check(z.maxLength(MAX_CONTINUATION_ENTRIES)),
      ),
    }),
  ),
});

export type AgentHostRunRequest = z.infer<typeof agentHostRunRequestSchema>;

/** The endpoints of a host, by the last segment of their path. */
export type AgentHostEndpoint = 'runs' | 'events' | 'commands' | 'state';

const ROUTE = /^\/sessions\/([^/]+)\/(runs|events|commands|state)\/?$/;
const METHODS: Record<AgentHostEndpoint, string> = { runs: 'POST', events: 'GET', commands: 'POST', state: 'GET' };
/** Session ids are names, not paths: 1 to 256 characters, none a control character or `/` once decoded. */
export function isSessionId(value: string): boolean {
  if (value.length === 0 || value.length > 256) return false;
  for (let index = 0; index < value.length; index += 1) {
    const code = value.charCodeAt(index);
    if (code < 0x20 || code === 0x7f || code === 0x2f) return false;
  }
  return true;
}

/** The session and endpoint a request is for; a host error when it is for none. */
export function routeOf(request: Request, basePath: string): { sessionId: string; endpoint: AgentHostEndpoint } {
  const { pathname } = new URL(request.url);
  const path = basePath !== '' && pathname.startsWith(basePath) ? pathname.slice(basePath.length) : pathname;
  const match = ROUTE.exec(path);
  if (match === null || (basePath !== '' && path === pathname)) {
    throw new AgentHostError('not_found', `No endpoint at ${pathname}`);
  }
  let sessionId: string;
  try {
    sessionId = decodeURIComponent(match[1] as string);
  } catch {
    throw new AgentHostError('invalid_request', 'The session id in the path is not valid percent-encoding');
  }
  if (!isSessionId(sessionId)) throw new AgentHostError('invalid_request', 'The session id is not a valid id');
  const endpoint = match[2] as AgentHostEndpoint;
  if (request.method !== METHODS[endpoint]) {
    throw new AgentHostError('method_not_allowed', `${endpoint} takes ${METHODS[endpoint]}, not ${request.method}`, {
      allow: METHODS[endpoint],
    });
  }
  return { sessionId, endpoint };
}

/**
 * Reads a JSON body of at most `limit` bytes, without holding more than that. Only a body
 * sent as `application/json` is read: the types a form or a cross-site `fetch` may send
 * without a preflight (`text/plain`, form encodings) are `unsupported_media_type`, so a page
 * on another site cannot start runs or send commands where authorization rides on cookies.
 */
export async function readJsonBody(request: Request, limit: number): Promise<unknown> {
  const mediaType = (request.headers.get('content-type') ?? '').split(';', 1)[0]?.trim().toLowerCase();
  if (mediaType !== 'application/json') {
    await request.body?.cancel().catch(() => {});
    throw new AgentHostError(
      'unsupported_media_type',
      `The body must be sent as application/json, not ${mediaType === '' ? 'without a content-type' : mediaType}`,
    );
  }
  if (request.body === null) throw new AgentHostError('invalid_request', 'The request has no body; send JSON');
  const reader = request.body.getReader();
  const parts: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      await reader.cancel().catch(() => {});
      throw new AgentHostError('payload_too_large', `The body is larger than ${limit} bytes`);
    }
    parts.push(value);
  }
  const bytes = new Uint8Array(size);
  let offset = 0;
  for (const part of parts) {
    bytes.set(part, offset);
    offset += part.byteLength;
  }
  try {
    return JSON.parse(new TextDecoder().decode(bytes));
  } catch {
    throw new AgentHostError('invalid_request', 'The body is not valid JSON');
  }
}

/** The first schema issue as `path: what is wrong`, naming a missing field or an unknown one. */
export function describeIssue(issues: readonly z.core.$ZodIssue[], input: unknown): string {
  const issue = issues[0];
  if (issue === undefined) return 'the body: invalid';
  const path = issue.path.map(String).join('.');
  const where = (name: string) => (path === '' ? name : `${path}.${name}`);
  if (issue.code === 'unrecognized_keys') {
    return `${issue.keys.map((key) => where(key)).join(', ')}: unknown field${issue.keys.length > 1 ? 's' : ''}`;
  }
  if (issue.code === 'invalid_type' && valueAt(input, issue.path) === undefined) {
    return `${path === '' ? 'the body' : path}: missing (expected ${issue.expected})`;
  }
  if (issue.code === 'invalid_value' && valueAt(input, issue.path) === undefined) {
    return `${path}: missing (expected one of ${JSON.stringify(issue.values)})`;
  }
  if (issue.code === 'too_big' && issue.origin === 'array') {
    return `${path}: at most ${String(issue.maximum)} entries`;
  }
  if (issue.code === 'too_big' && issue.origin === 'string') {
    return `${path}: longer than ${String(issue.maximum)} characters`;
  }
  if (issue.code === 'too_small' && issue.origin === 'string') return `${path}: must not be empty`;
  const reason = toValidationFailure([issue as Parameters<typeof toValidationFailure>[0][number]], input).reason;
  return `${path === '' ? 'the body' : path}: ${reason}`;
}

/** A plain-JSON failure of `value` (found at `path`) as the protocol's checks word it, or undefined. */
function plainJsonProblem(path: string, value: unknown): string | undefined {
  if (value === undefined) return undefined;
  const failure = checkPlainJson(value, { maxDepth: DEFAULT_MAX_JSON_DEPTH });
  if (failure === undefined) return undefined;
  return `${failure.path === '' ? path : `${path}.${failure.path}`}: ${failure.reason}`;
}

/**
 * The arrays of a continuation longer than the bound, checked before the schema walks them:
 * a body of a hundred thousand invalid entries costs one look, not one issue per entry.
 */
function tooLong(body: unknown): string | undefined {
  const continuation = valueAt(body, ['continuation']);
  for (const field of ['approvals', 'toolResults']) {
    const entries = valueAt(continuation, [field]);
    if (Array.isArray(entries) && entries.length > MAX_CONTINUATION_ENTRIES) {
      return `continuation.${field}: at most ${MAX_CONTINUATION_ENTRIES} entries`;
    }
  }
  return undefined;
}

/**
 * The run request in a body, or `invalid_request` naming the first thing wrong: a missing
 * or unknown field, an id longer than `MAX_ID_LENGTH`, too many continuation entries, or a
 * free-form value (`input`, an approval's `data`, a tool's `result`) that the protocol
 * would refuse in an event (not plain JSON, or nested deeper than `DEFAULT_MAX_JSON_DEPTH`).
 */
export function parseRunRequest(body: unknown): AgentHostRunRequest {
  const refuse = (problem: string) => new AgentHostError('invalid_request', `Invalid run request: ${problem}`);
  const bound = tooLong(body);
  if (bound !== undefined) throw refuse(bound);
  const result = agentHostRunRequestSchema.safeParse(body);
  if (!result.success) throw refuse(describeIssue(result.error.issues, body));
  const request = result.data;
  const problem =
    plainJsonProblem('input', request.input) ??
    request.continuation?.approvals
      .map((approval, index) => plainJsonProblem(`continuation.approvals.${index}.data`, approval.data))
      .find((found) => found !== undefined) ??
    request.continuation?.toolResults
      ?.map(
        (entry, index) =>
          plainJsonProblem(`continuation.toolResults.${index}.result`, entry.result) ??
          plainJsonProblem(`continuation.toolResults.${index}.error.data`, entry.error?.data),
      )
      .find((found) => found !== undefined);
  if (problem !== undefined) throw refuse(problem);
  return request;
}

/** A protocol validation failure as a host message names it: `path: reason`, a missing field as missing. */
export function describeFailure(failure: AgentValidationFailure, input?: unknown): string {
  const expected = /^expected (.+), got undefined$/.exec(failure.reason)?.[1];
  const missing = expected !== undefined && valueAt(input, failure.path.split('.')) === undefined;
  const reason = missing ? `missing (expected ${expected})` : failure.reason;
  return failure.path === '' ? reason : `${failure.path}: ${reason}`;
}

/**
 * A command as the host takes it: a valid AgentCommand whose ids and key (`commandId`,
 * `idempotencyKey`, `sessionId`, `runId`, and the payload's `approvalId` or `toolCallId`) are
 * at most `MAX_ID_LENGTH` characters; otherwise the message names the first thing wrong.
 */
export function parseHostCommand(
  body: unknown,
): { success: true; value: AgentCommand } | { success: false; message: string } {
  const parsed = parseAgentCommand(body);
  if (!parsed.success) {
    // The schema's own issue names unknown fields and missing ones; past the schema, the plain-JSON check's words.
    const schema = agentCommandSchema.safeParse(body);
    const problem = schema.success ? describeFailure(parsed.error, body) : describeIssue(schema.error.issues, body);
    return { success: false, message: `Invalid command: ${problem}` };
  }
  const command = parsed.value;
  const payload = command.payload as { approvalId?: unknown; toolCallId?: unknown };
  const ids: Array<[string, unknown]> = [
    ['commandId', command.commandId],
    ['idempotencyKey', command.idempotencyKey],
    ['sessionId', command.sessionId],
    ['runId', command.runId],
    ['payload.approvalId', payload.approvalId],
    ['payload.toolCallId', payload.toolCallId],
  ];
  for (const [path, value] of ids) {
    if (typeof value === 'string' && value.length > MAX_ID_LENGTH) {
      return { success: false, message: `Invalid command: ${path}: longer than ${MAX_ID_LENGTH} characters` };
    }
  }
  return { success: true, value: command };
}

/** The run request's continuation as the runner takes it: fields not given are left out, not `undefined`. */
export function toContinuation(request: AgentHostRunRequest): AgentRunContinuation | undefined {
  const continuation = request.continuation;
  if (continuation === undefined) return undefined;
  return {
    runId: continuation.runId,
    approvals: continuation.approvals.map(({ approvalId, status, decision, data }) => ({
      approvalId,
      status,
      ...(decision === undefined ? {} : { decision }),
      ...(data === undefined ? {} : { data }),
    })),
  };
}

/** JSON of a value with object keys sorted, so two equal commands give the same text whatever their key order. */
export function stableJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(stableJson).join(',')}]`;
  if (typeof value === 'object' && value !== null) {
    const record = value as Record<string, unknown>;
    const keys = Object.keys(record)
      .filter((key) => record[key] !== undefined)
      .sort();
    return `{${keys.map((key) => `${JSON.stringify(key)}:${stableJson(record[key])}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}
