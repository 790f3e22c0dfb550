import * as z from 'zod/mini';
import type { AgentCommand } from '../../protocol/commandSchemas';
import type { AgentEvent } from '../../protocol/eventSchemas';
import { parseAgentEvent } from '../../protocol/parseAgentEvent';
import { AgentTransportError, isAbortError } from '../../transports/AgentTransportError';
import { AgentCommandError, type AgentCommandErrorCode } from '../AgentCommandError';
import type { AgentCommandOptions } from '../AgentProvider';
import { type AgentHostClient, describeRefusal } from './agentHostClient';

const commandAcceptedSchema = z.object({ status: z.literal('accepted'), events: z.array(z.unknown()) });

/**
 * The command error of each host refusal that is about the command: the rest (a failed
 * provider, an unavailable instance, a timeout, a refused authorization) is `provider_error`.
 */
const REFUSAL_CODES: Readonly<Record<string, AgentCommandErrorCode>> = {
  invalid_command: 'invalid_command',
  unsupported_capability: 'unsupported_capability',
  idempotency_conflict: 'invalid_command',
  session_mismatch: 'invalid_command',
  unknown_run: 'invalid_command',
  run_ended: 'invalid_command',
};

/** Server errors and rate limits may pass; a refusal of the request itself will not. */
function isRetryableStatus(status: number): boolean {
  return status >= 500 || status === 429;
}

/**
 * Sends one command with `POST /commands` and yields the events the host answered it with,
 * each checked with `parseAgentEvent` before any is yielded. A refusal is an
 * `AgentCommandError` naming the host's code and message (its `cause` an `http_error`
 * carrying the status); a network failure or a timeout is a retryable `provider_error`; an
 * abort is rethrown as it is, which `runAgentCommand` reports as `interrupted`.
 */
export async function* executeAgentHostCommand(
  client: AgentHostClient,
  command: AgentCommand,
  options: AgentCommandOptions,
): AsyncGenerator<AgentEvent> {
  const target = client.url('commands');
  let answer: Awaited<ReturnType<AgentHostClient['postJSON']>>;
  try {
    answer = await client.postJSON('commands', command, options.signal);
  } catch (error) {
    if (isAbortError(error) || options.signal.aborted) throw error;
    throw new AgentCommandError(
      'provider_error',
      `The host did not answer ${command.type}: ${(error as Error).message}`,
      { retryable: AgentTransportError.isInstance(error) && error.code !== 'aborted', cause: error },
    );
  }
  if (!answer.ok) {
    const description = describeRefusal(target, answer);
    const cause = new AgentTransportError('http_error', description, {
      status: answer.status,
      bodyExcerpt: answer.bodyExcerpt,
    });
    const code = REFUSAL_CODES[answer.refusal.code] ?? 'provider_error';
    throw new AgentCommandError(code, `The host refused ${command.type}: ${description}`, {
      retryable: code === 'provider_error' && isRetryableStatus(answer.status),
      cause,
    });
  }
  const accepted = commandAcceptedSchema.safeParse(answer.body);
  if (!accepted.success) {
    throw new AgentCommandError(
      'protocol_error',
      `The host answered ${command.type} with ${answer.status} but not { status: "accepted", events: [...] }`,
      { cause: answer.body },
    );
  }
  const events: AgentEvent[] = [];
  for (const [index, value] of accepted.data.events.entries()) {
    const parsed = parseAgentEvent(value);
    if (!parsed.success) {
      throw new AgentCommandError(
        'protocol_error',
        `The host answered ${command.type} with an invalid event at ${index}: ${parsed.error.message}`,
        { cause: value },
      );
    }
    events.push(parsed.value);
  }
  yield* events;
}
