import * as z from 'zod/mini';
import { agentErrorInfoSchema, agentEventSchema } from '../../protocol/eventSchemas';
import { parseAgentCommand, parseAgentEvent } from '../../protocol/parseAgentEvent';
import type { AgentCommandRecord, AgentEventLogEntry, AgentHostSignal } from '../AgentEventLog';
import { AgentEventLogError } from '../AgentEventLogError';

// What the log reads back is checked like any untrusted input: another process (or a person
// with redis-cli) writes the same keys. A value that does not parse rejects the call with
// `unavailable` naming the key, rather than reaching a store as a malformed event.

const commandRecordSchema = z.discriminatedUnion('status', [
  z.object({ status: z.literal('pending'), fingerprint: z.string() }),
  z.object({
    status: z.literal('settled'),
    fingerprint: z.string(),
    outcome: z.discriminatedUnion('status', [
      z.object({ status: z.literal('accepted'), events: z.array(agentEventSchema) }),
      z.object({ status: z.literal('failed'), error: agentErrorInfoSchema }),
    ]),
  }),
]);

function corrupted(key: string, what: string, cause?: unknown): AgentEventLogError {
  return new AgentEventLogError('unavailable', `Corrupted value in Redis key ${key}: ${what}`, { cause });
}

function parseJson(key: string, text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (error) {
    throw corrupted(key, 'not JSON', error);
  }
}

/** Stream entries as a script returns them: `[id, [field, value, ...]]`. */
export function parseStreamEntries(key: string, reply: unknown): AgentEventLogEntry[] {
  if (!Array.isArray(reply)) throw corrupted(key, 'expected a list of stream entries');
  return reply.map((entry: unknown) => {
    const [cursor, fields] = Array.isArray(entry) ? entry : [];
    if (typeof cursor !== 'string' || !Array.isArray(fields)) throw corrupted(key, 'expected a stream entry');
    const eventIndex = fields.indexOf('event');
    const text = eventIndex >= 0 && eventIndex % 2 === 0 ? fields[eventIndex + 1] : undefined;
    if (typeof text !== 'string') throw corrupted(key, `entry ${cursor} has no event`);
    const parsed = parseAgentEvent(parseJson(key, text));
    if (!parsed.success) throw corrupted(key, `entry ${cursor} is not an AgentEvent: ${parsed.error.message}`);
    return { cursor, event: parsed.value };
  });
}

/** A command idempotency record as stored (JSON). */
export function parseCommandRecord(key: string, text: string): AgentCommandRecord {
  const parsed = commandRecordSchema.safeParse(parseJson(key, text));
  if (!parsed.success) throw corrupted(key, 'not a command record', parsed.error);
  return parsed.data as AgentCommandRecord;
}

/** A settled record from a pub/sub message, or undefined for anything else. */
export function settledRecordOf(key: string, message: string): AgentCommandRecord | undefined {
  try {
    const record = parseCommandRecord(key, message);
    return record.status === 'settled' ? record : undefined;
  } catch {
    return undefined;
  }
}

/** A signal from a pub/sub message, or undefined when it is not one (it is dropped, as signals may be). */
export function hostSignalOf(message: string): AgentHostSignal | undefined {
  let value: unknown;
  try {
    value = JSON.parse(message);
  } catch {
    return undefined;
  }
  if (typeof value !== 'object' || value === null || (value as { type?: unknown }).type !== 'command') return undefined;
  const command = parseAgentCommand((value as { command?: unknown }).command);
  return command.success ? { type: 'command', command: command.value } : undefined;
}

/** Lease values: `owned:<owner>` while held, the ended marker after release. */
export const ENDED_RUN = 'ended';
export const ownedRun = (owner: string) => `owned:${owner}`;

export function parseRunOwner(
  key: string,
  value: string | null,
): { state: 'owned'; owner: string } | { state: 'ended' } | { state: 'unowned' } {
  if (value === null) return { state: 'unowned' };
  if (value === ENDED_RUN) return { state: 'ended' };
  if (value.startsWith('owned:')) return { state: 'owned', owner: value.slice('owned:'.length) };
  throw corrupted(key, 'not a run lease');
}
