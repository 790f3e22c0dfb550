import { AGENT_ENTITY_EVENT_ROUTES } from '../../protocol/agentEntityKinds';
import type {
  AgentErrorInfo,
  AgentEvent,
  AgentEventPayloadMap,
  AgentEventType,
  AgentUsage,
} from '../../protocol/eventSchemas';
import type { AgentRunClosing } from '../AgentRunTracker';

/** An event of the agent's run before the run's emitter gives it its id, sequence and time. */
export type AgentEventDraft = {
  [Type in AgentEventType]: { type: Type; payload: AgentEventPayloadMap[Type]; meta?: Record<string, unknown> };
}[AgentEventType];

/** What the agent loop hands its provider: an event of the run, or how the run ends when it does not complete. */
export type AgentLoopChunk = { kind: 'event'; draft: AgentEventDraft } | { kind: 'close'; closing: AgentRunClosing };

/** The namespace of the agent's own meta on events and records. */
export interface AgentStepMeta {
  /** The model step (1-based, within its run) that produced the entity. */
  step?: number;
}

/** How a model step ended, as the loop needs it. */
export interface AgentStepOutcome {
  status: 'completed' | 'failed' | 'cancelled';
  /** The tool calls the model asked for and left to the agent, under their ids in the agent's run. */
  toolCallIds: string[];
  usage?: AgentUsage;
  error?: AgentErrorInfo;
}

/** The step an entity of an agent's run came from, as its record's meta says. */
export function stepOf(meta: Record<string, unknown> | undefined): number | undefined {
  const step = (meta?.agentMachines as AgentStepMeta | undefined)?.step;
  return typeof step === 'number' ? step : undefined;
}

function withStep(meta: Record<string, unknown> | undefined, step: number): Record<string, unknown> {
  const own = meta?.agentMachines;
  const agentMachines = typeof own === 'object' && own !== null ? { ...own, step } : { step };
  return { ...meta, agentMachines };
}

/** Payload fields that name an entity, and the kind of id each holds. */
const ID_FIELDS = { messageId: 'message', reasoningId: 'reasoning', toolCallId: 'toolCall' } as const;

/**
 * Maps the events of one model step to events of the agent's run. The model's own run
 * (`run.*`) and the user message it echoes are dropped: the agent's run has them. Message
 * and reasoning ids, which a model provider numbers per request, get the step as a prefix
 * (`step-2.message-1`); tool call ids stay as the model made them (they go back to it), unless
 * one is taken already in the conversation, when they get a suffix (`call_0_2`). Start
 * events carry `meta.agentMachines.step`, which the agent reads back to rebuild each step's
 * turn for the model. The model's `run.completed` says what the step left to the agent.
 */
export class AgentStepEvents {
  private readonly messageIds = new Map<string, string>();
  private readonly reasoningIds = new Map<string, string>();
  private readonly toolCallIds = new Map<string, string>();
  /** The ids of the user messages the model provider echoed, dropped with their later events. */
  private readonly echoed = new Set<string>();
  outcome: AgentStepOutcome | undefined;

  constructor(
    private readonly step: number,
    /** Tool call ids taken in the conversation; ids this step makes are added. */
    private readonly takenToolCallIds: Set<string>,
  ) {}

  /** The agent's event for one model event; undefined for an event the agent's run does not repeat. */
  map(event: AgentEvent): AgentEventDraft | undefined {
    switch (event.type) {
      case 'run.started':
        return undefined;
      case 'run.completed': {
        const toolCallIds = (event.payload.pendingToolCallIds ?? []).map((id) => this.toolCallIds.get(id) ?? id);
        this.outcome = { status: 'completed', toolCallIds };
        if (event.payload.usage !== undefined) this.outcome.usage = event.payload.usage;
        return undefined;
      }
      case 'run.failed':
        this.outcome = { status: 'failed', toolCallIds: [], error: event.payload.error };
        return undefined;
      case 'run.cancelled':
        this.outcome = { status: 'cancelled', toolCallIds: [] };
        return undefined;
      case 'message.started':
        if (event.payload.role === 'user') {
          this.echoed.add(event.payload.messageId);
          return undefined;
        }
        break;
      default:
        if ('messageId' in event.payload && this.echoed.has(event.payload.messageId ?? '')) return undefined;
    }
    const payload: Record<string, unknown> = { ...event.payload };
    const starts = AGENT_ENTITY_EVENT_ROUTES.get(event.type)?.role === 'start';
    for (const [field, kind] of Object.entries(ID_FIELDS)) {
      const id = payload[field];
      if (typeof id === 'string') payload[field] = this.rename(kind, id, starts && field === routeField(event.type));
    }
    const draft = { type: event.type, payload } as AgentEventDraft;
    if (starts) draft.meta = withStep(event.meta, this.step);
    else if (event.meta !== undefined) draft.meta = event.meta;
    return draft;
  }

  private rename(kind: 'message' | 'reasoning' | 'toolCall', id: string, starting: boolean): string {
    if (kind === 'message') return this.prefixed(this.messageIds, id);
    if (kind === 'reasoning') return this.prefixed(this.reasoningIds, id);
    const known = this.toolCallIds.get(id);
    if (known !== undefined || !starting) return known ?? id;
    let unique = id;
    for (let suffix = this.step; this.takenToolCallIds.has(unique); suffix += 1) unique = `${id}_${suffix}`;
    this.takenToolCallIds.add(unique);
    this.toolCallIds.set(id, unique);
    return unique;
  }

  private prefixed(ids: Map<string, string>, id: string): string {
    let renamed = ids.get(id);
    if (renamed === undefined) {
      renamed = `step-${this.step}.${id}`;
      ids.set(id, renamed);
    }
    return renamed;
  }
}

/** The id field of the entity an event starts or changes. */
function routeField(type: AgentEventType): string | undefined {
  return AGENT_ENTITY_EVENT_ROUTES.get(type)?.idField;
}
