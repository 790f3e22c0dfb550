import type { AgentState } from '../machines/agentState';
import {
  AGENT_ENTITY_EVENT_ROUTES,
  AGENT_ENTITY_KIND_TABLE,
  AGENT_ENTITY_KINDS,
  type AgentEntityKind,
  type AgentEntityKindInfo,
} from '../protocol/agentEntityKinds';
import type { AgentEventFactory } from '../protocol/createAgentEventFactory';
import type { AgentErrorInfo, AgentEvent, AgentEventPayloadMap, AgentEventType } from '../protocol/eventSchemas';

/** How a run ends when it did not end by itself: cancelled (abort) or failed (error). */
export type AgentRunClosing = { type: 'cancelled'; reason: string } | { type: 'failed'; error: AgentErrorInfo };

/** The terminal events that close an entity of each kind the run did not end itself, read from the table. */
interface ClosingTypes {
  idField: AgentEntityKindInfo['idField'];
  cancelled: AgentEventType | undefined;
  failed: AgentEventType | undefined;
}

const CLOSING_TYPES = Object.fromEntries(
  AGENT_ENTITY_KINDS.map((kind) => {
    const { idField, terminals }: AgentEntityKindInfo = AGENT_ENTITY_KIND_TABLE[kind];
    return [
      kind,
      {
        idField,
        cancelled: terminals.find((type) => type.endsWith('.cancelled')),
        failed: terminals.find((type) => type.endsWith('.failed')),
      },
    ];
  }),
) as Record<AgentEntityKind, ClosingTypes>;

/**
 * The event that closes one open entity: cancelled if its kind can be, else failed. An
 * approval, which can be neither, gets none (undefined): expiring it is the runtime's to
 * say, so the run's terminal closes it, as the store closes whatever a run leaves open
 * (`cancelled`, reason `run_terminated`).
 */
function closingEvent(
  events: AgentEventFactory,
  kind: AgentEntityKind,
  id: string,
  closing: AgentRunClosing,
  error: AgentErrorInfo,
): AgentEvent | undefined {
  const { idField, cancelled, failed } = CLOSING_TYPES[kind];
  if (closing.type === 'cancelled' && cancelled !== undefined) {
    return events.create(cancelled, {
      [idField]: id,
      reason: closing.reason,
    } as AgentEventPayloadMap[typeof cancelled]);
  }
  if (failed !== undefined) {
    return events.create(failed, { [idField]: id, error } as AgentEventPayloadMap[typeof failed]);
  }
  return undefined;
}

/**
 * Follows one run's events: which entities are open, which tool calls have complete
 * arguments, whether the run has ended. Providers use it to close what is open on flush,
 * error or abort; the runner uses it to make sure every run ends. What opens and closes an
 * entity comes from the entity-kind table (`AGENT_ENTITY_KIND_TABLE`).
 *
 * @example
 * const tracker = new AgentRunTracker();
 * for (const event of events) tracker.observe(event);
 * if (!tracker.hasEnded) events.push(...tracker.close(factory, { type: 'cancelled', reason: 'aborted' }));
 */
export class AgentRunTracker {
  private readonly open = new Map<string, { kind: AgentEntityKind; id: string }>();
  private readonly argumentsComplete = new Set<string>();
  private started = false;
  private terminal: AgentEventType | undefined;

  observe(event: AgentEvent): void {
    const type = event.type;
    // Streamed deltas, most of all events, neither open nor close anything: compared
    // before the table lookup, which costs more than the three comparisons.
    if (type === 'message.delta' || type === 'reasoning.delta' || type === 'tool.arguments_delta') return;
    const route = AGENT_ENTITY_EVENT_ROUTES.get(type);
    if (route === undefined) {
      if (event.type === 'run.started') this.started = true;
      else if (event.type === 'run.completed' || event.type === 'run.failed' || event.type === 'run.cancelled') {
        this.terminal = event.type;
      }
      return;
    }
    const id = (event.payload as Record<string, string>)[route.idField] as string;
    if (route.role === 'start') this.open.set(`${route.kind}:${id}`, { kind: route.kind, id });
    else if (route.role === 'terminal') this.open.delete(`${route.kind}:${id}`);
    else if (event.type === 'tool.arguments_completed') this.argumentsComplete.add(id);
  }

  /**
   * Follows a run that started before this tracker saw it, as on a resumed stream: it has
   * started, and the entities `history` holds active for it are open, so an error closes
   * them and ends the run once.
   */
  resume(runId: string, history?: AgentState): void {
    this.started = true;
    if (history === undefined) return;
    for (const kind of AGENT_ENTITY_KINDS) {
      const info: AgentEntityKindInfo = AGENT_ENTITY_KIND_TABLE[kind];
      const records = history[info.container] as Record<string, { id: string; runId: string; status: string }>;
      for (const record of Object.values(records ?? {})) {
        if (record.runId !== runId || !info.activeStatuses.includes(record.status)) continue;
        this.open.set(`${kind}:${record.id}`, { kind, id: record.id });
        // Past `streaming_arguments`, a tool call's arguments are complete.
        if (kind === 'toolCall' && record.status !== 'streaming_arguments') this.argumentsComplete.add(record.id);
      }
    }
  }

  get hasStarted(): boolean {
    return this.started;
  }

  get hasEnded(): boolean {
    return this.terminal !== undefined;
  }

  get terminalType(): AgentEventType | undefined {
    return this.terminal;
  }

  /**
   * Whether the entity of this kind and id started and has not ended.
   * `'tool'` is the former name of `'toolCall'`, still accepted.
   */
  isOpen(kind: AgentEntityKind | 'tool', id: string): boolean {
    return this.open.has(`${kind === 'tool' ? 'toolCall' : kind}:${id}`);
  }

  /** Open tool calls whose arguments are complete: the ones a run may end with, awaiting execution. */
  toolCallsAwaitingExecution(): string[] {
    const ids: string[] = [];
    for (const entry of this.open.values()) {
      if (entry.kind === 'toolCall' && this.argumentsComplete.has(entry.id)) ids.push(entry.id);
    }
    return ids;
  }

  /**
   * The events that close every open entity and end the run, created with `events`.
   * Artifacts, which cannot be cancelled, fail. Approvals, which can be neither, get no
   * event: the run's terminal closes them in the store (`cancelled`, reason
   * `run_terminated`), never a made-up `expired`.
   */
  close(events: AgentEventFactory, closing: AgentRunClosing): AgentEvent[] {
    if (this.terminal !== undefined) return [];
    const cancelled = closing.type === 'cancelled';
    const error: AgentErrorInfo = cancelled ? { message: closing.reason, code: closing.reason } : closing.error;
    const out: AgentEvent[] = [];
    for (const { kind, id } of [...this.open.values()]) {
      const event = closingEvent(events, kind, id, closing, error);
      if (event !== undefined) out.push(event);
    }
    out.push(
      cancelled ? events.create('run.cancelled', { reason: closing.reason }) : events.create('run.failed', { error }),
    );
    for (const event of out) this.observe(event);
    // What the terminal closes (the approvals) is closed here too.
    this.open.clear();
    return out;
  }
}
