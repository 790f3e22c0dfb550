import * as z from 'zod/mini';
import type { AgentState } from '../../machines/agentState';
import { parseAgentState } from '../../machines/agentStateSchema';
import { AgentTransportError } from '../../transports/AgentTransportError';
import { type AgentHostClient, describeRefusal } from './agentHostClient';

/** `GET /sessions/:sessionId/state`: the session's AgentState after the event at `cursor` (null: no event yet). */
export interface AgentHostStateAnswer {
  state: AgentState;
  cursor: string | null;
}

const stateAnswerSchema = z.object({ state: z.unknown(), cursor: z.nullable(z.string()) });

/**
 * Reads the session's state from the host. A refusal is an `http_error` carrying the status
 * and the host's code; a network failure, an abort and `idleTimeoutMs` without the whole
 * answer are `network_error`, `aborted` and `timeout`; a state that is not an AgentState
 * throws `parseAgentState`'s `AgentValidationError`.
 */
export async function fetchAgentHostState(client: AgentHostClient, signal: AbortSignal): Promise<AgentHostStateAnswer> {
  const target = client.url('state');
  const answer = await client.getJSON('state', signal);
  if (!answer.ok) {
    throw new AgentTransportError('http_error', describeRefusal(target, answer, 'GET'), {
      status: answer.status,
      bodyExcerpt: answer.bodyExcerpt,
    });
  }
  const parsed = stateAnswerSchema.safeParse(answer.body);
  if (!parsed.success) {
    throw new AgentTransportError('http_error', `GET ${target} answered ${answer.status} without { state, cursor }`, {
      status: answer.status,
      bodyExcerpt: (typeof answer.body === 'string' ? answer.body : (JSON.stringify(answer.body) ?? '')).slice(0, 2048),
    });
  }
  return { state: parseAgentState(parsed.data.state), cursor: parsed.data.cursor };
}
