import * as z from 'zod/mini';
import type { AgentState } from '../../machines/agentState';
import { parseAgentState } from '../../machines/agentStateSchema';
import { AgentTransportError } from '../../transports/AgentTransportError';
import { idleTimeoutOf } from '../../transports/idleTimeout';
import type { AgentHostClient } from './agentHostClient';

/** `GET /sessions/:sessionId/state`: the session's AgentState after the event at `cursor` (null: no event yet). */
export interface AgentHostStateAnswer {
  state: AgentState;
  cursor: string | null;
}

const stateAnswerSchema = z.object({ state: z.unknown(), cursor: z.nullable(z.string()) });

const BODY_EXCERPT_LIMIT = 2048;

/**
 * `<method> <target> answered <status> <code>: <message>`, with the host's refusal
 * (`{ error: { code, message } }`) when the body is one.
 */
export function describeHostAnswer(method: string, target: string, status: number, body: string): string {
  try {
    const { error } = JSON.parse(body) as { error?: { code?: unknown; message?: unknown } };
    if (typeof error?.code === 'string') {
      const message = typeof error.message === 'string' && error.message !== '' ? `: ${error.message}` : '';
      return `${method} ${target} answered ${status} ${error.code}${message}`;
    }
  } catch {
    // Not the host's JSON (a proxy's page, say): the status says it.
  }
  return `${method} ${target} answered ${status}`;
}

/**
 * Reads the session's state from the host. A refusal is an `http_error` carrying the status
 * and the host's code; a network failure, an abort and `idleTimeoutMs` without the whole
 * answer are `network_error`, `aborted` and `timeout`; a state that is not an AgentState
 * throws `parseAgentState`'s `AgentValidationError`.
 */
export async function fetchAgentHostState(client: AgentHostClient, signal: AbortSignal): Promise<AgentHostStateAnswer> {
  // The client's paths are those of the provider; the state endpoint sits beside `events`.
  const target = client.url('events').replace(/\/events$/, '/state');
  const headers = new Headers(typeof client.headers === 'function' ? await client.headers() : client.headers);
  headers.set('accept', 'application/json');
  const idleTimeoutMs = idleTimeoutOf(client.idleTimeoutMs);
  const controller = new AbortController();
  const forwardAbort = () => controller.abort(signal.reason);
  if (signal.aborted) controller.abort(signal.reason);
  else signal.addEventListener('abort', forwardAbort, { once: true });
  let timedOut = false;
  const timer =
    idleTimeoutMs === undefined
      ? undefined
      : setTimeout(() => {
          timedOut = true;
          controller.abort();
        }, idleTimeoutMs);
  let status: number;
  let text: string;
  try {
    const response = await client.fetch(target, { method: 'GET', headers, signal: controller.signal });
    status = response.status;
    text = await response.text();
  } catch (error) {
    if (timedOut) throw new AgentTransportError('timeout', `GET ${target} answered nothing for ${idleTimeoutMs} ms`);
    if (signal.aborted) throw new AgentTransportError('aborted', 'The request was aborted', { cause: signal.reason });
    throw new AgentTransportError('network_error', `GET ${target} failed: ${(error as Error).message}`, {
      cause: error,
    });
  } finally {
    clearTimeout(timer);
    signal.removeEventListener('abort', forwardAbort);
  }
  const bodyExcerpt = text.slice(0, BODY_EXCERPT_LIMIT);
  if (status < 200 || status >= 300) {
    throw new AgentTransportError('http_error', describeHostAnswer('GET', target, status, text), {
      status,
      bodyExcerpt,
    });
  }
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  const answer = stateAnswerSchema.safeParse(body);
  if (!answer.success) {
    throw new AgentTransportError('http_error', `GET ${target} answered ${status} without { state, cursor }`, {
      status,
      bodyExcerpt,
    });
  }
  return { state: parseAgentState(answer.data.state), cursor: answer.data.cursor };
}
