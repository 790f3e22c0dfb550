import { AGENT_EVENT_PROTOCOL_VERSION } from './constants';
import type { AgentEventOf, AgentEventPayloadMap, AgentEventType } from './eventSchemas';
import { randomId } from './randomId';

/**
 * Six random characters. Ids need only be unique within their run, and the sequence in
 * each id already is; the prefix tells factories apart. Kept short so that an id (prefix,
 * dash, sequence in base 36) stays under 13 characters up to sequence 36^5, about 60
 * million: V8 then makes it a flat string, which the store hashes without copying it first.
 */
function shortPrefix(): string {
  return randomId().replaceAll('-', '').slice(0, 6);
}

export interface AgentEventFactoryOptions {
  sessionId: string;
  runId: string;
  /** The sequence already used; the first event gets `initialSequence + 1`. Default 0. */
  initialSequence?: number;
  now?: () => number;
  /** Makes the id of each event; by default a random prefix per factory and a counter. */
  createEventId?: (sequence: number) => string;
}

export interface AgentEventExtra {
  parentId?: string;
  meta?: Record<string, unknown>;
}

export interface AgentEventFactory {
  create<Type extends AgentEventType>(
    type: Type,
    payload: AgentEventPayloadMap[Type],
    extra?: AgentEventExtra,
  ): AgentEventOf<Type>;
  /** The sequence of the last event created. */
  getSequence(): number;
}

/**
 * Creates events of one run with strictly increasing sequences.
 *
 * @example
 * const events = createAgentEventFactory({ sessionId: 's1', runId: 'r1' });
 * store.dispatch(events.create('run.started', {}));
 * store.dispatch(events.create('message.started', { messageId: 'm1', role: 'assistant' }));
 */
export function createAgentEventFactory(options: AgentEventFactoryOptions): AgentEventFactory {
  const { sessionId, runId } = options;
  const now = options.now ?? Date.now;
  let sequence = options.initialSequence ?? 0;
  if (!Number.isSafeInteger(sequence) || sequence < 0) {
    throw new RangeError(`initialSequence must be a non-negative integer, got ${String(sequence)}`);
  }
  const prefix = options.createEventId ? undefined : shortPrefix();
  const createEventId = options.createEventId ?? ((next: number) => `${prefix}-${next.toString(36)}`);

  return {
    create(type, payload, extra) {
      sequence += 1;
      const event: Record<string, unknown> = {
        protocolVersion: AGENT_EVENT_PROTOCOL_VERSION,
        type,
        eventId: createEventId(sequence),
        sessionId,
        runId,
        sequence,
        timestamp: now(),
        payload,
      };
      if (extra?.parentId !== undefined) event.parentId = extra.parentId;
      if (extra?.meta !== undefined) event.meta = extra.meta;
      return event as unknown as AgentEventOf<typeof type>;
    },
    getSequence: () => sequence,
  };
}
