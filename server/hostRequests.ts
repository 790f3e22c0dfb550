import * as z from 'zod/mini';
import { agentErrorInfoSchema } from '../protocol/eventSchemas';
import type { AgentRunContinuation } from '../providers/AgentProvider';
import { AgentHostError } from './AgentHostError';

const id = z.string().check(z.minLength(1), z.maxLength(256));

/** The body of `POST /sessions/:sessionId/runs`. */
export const agentHostRunRequestSchema = z.strictObject({
  provider: id,
  input: z.optional(z.unknown()),
  runId: z.optional(id),
  continuation: z.optional(
    z.strictObject({
      runId: id,
      approvals: z.array(
        z.strictObject({
          approvalId: id,
          status: z.enum(['resolved', 'cancelled']),
          decision: z.optional(z.enum(['approved', 'rejected', 'modified'])),
          data: z.optional(z.unknown()),
        }),
      ),
      /**
       * The results of the tool calls the continued run ended waiting on, which the client
       * executed: the host settles those calls in its log before the continuing run starts,
       * so the run's history carries them.
       */
      toolResults: z.optional(
        z.array(
          z.strictObject({
            toolCallId: id,
            result: z.optional(z.unknown()),
            error: z.optional(agentErrorInfoSchema),
            /** When the client settled it: the host's event carries the same timestamp. */
            timestamp: z.optional(z.number().check(z.gte(0))),
            commandId: z.optional(id),
          }),
        ),
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
function isSessionId(value: string): boolean {
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
    throw new AgentHostError('method_not_allowed', `${endpoint} takes ${METHODS[endpoint]}, not ${request.method}`);
  }
  return { sessionId, endpoint };
}

/** Reads a JSON body of at most `limit` bytes, without holding more than that. */
export async function readJsonBody(request: Request, limit: number): Promise<unknown> {
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

/** The run request in a body, or `invalid_request` naming the first thing wrong. */
export function parseRunRequest(body: unknown): AgentHostRunRequest {
  const result = agentHostRunRequestSchema.safeParse(body);
  if (result.success) return result.data;
  const issue = result.error.issues[0];
  const where = issue === undefined || issue.path.length === 0 ? 'the body' : issue.path.join('.');
  throw new AgentHostError('invalid_request', `Invalid run request: ${where}: ${issue?.message ?? 'invalid'}`);
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
