import type { ActorRefFrom } from 'xstate';
import type { AgentProtocolIssue } from '../../protocol/protocolIssue';
import type { AgentStateProjection } from '../agentStateProjection';
import type { StatePatchLimits } from '../applyStatePatch';

import type { sessionMachine } from '../sessionMachine';
import type { DeltaCoalescer } from './DeltaCoalescer';
import type { RunRegistry } from './RunRegistry';

export type SessionRef = ActorRefFrom<typeof sessionMachine>;

/**
 * What the parts of the store share: the projection readers see, the session actor that
 * owns the run actors, the run registry and the delta coalescer. `reset` replaces the
 * projection and the registry at once; the session actor stays.
 */
export interface StoreCore {
  readonly strict: boolean;
  readonly patchLimits: StatePatchLimits | undefined;
  projection: AgentStateProjection;
  readonly session: SessionRef;
  runs: RunRegistry;
  readonly deltas: DeltaCoalescer;
  /** The issues run actors emitted during the current `sendToRun`. */
  readonly raised: AgentProtocolIssue[];
}

/**
 * What the store does with an event, decided before anything changes: absorb it (a
 * redelivery), refuse it (an issue; in record mode its id is remembered, and the run's
 * sequence moves when `advance`), or apply it (then it is remembered and moves the sequence),
 * possibly with issues to record beside it.
 */
export type EventOutcome =
  | { kind: 'absorbed' }
  | { kind: 'refused'; issue: AgentProtocolIssue; remember?: { runId: string; eventId: string; advance: boolean } }
  | { kind: 'applied'; issues?: AgentProtocolIssue[] };

export const ABSORBED: EventOutcome = { kind: 'absorbed' };
export const APPLIED: EventOutcome = { kind: 'applied' };

/** A refusal of an event of a known identity: remembered by id, moving the run's sequence when `advance`. */
export function refuse(
  issue: AgentProtocolIssue,
  event: { runId: string; eventId: string },
  advance: boolean,
): EventOutcome {
  return { kind: 'refused', issue, remember: { runId: event.runId, eventId: event.eventId, advance } };
}
