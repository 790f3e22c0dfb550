import type { AgentEventFactory } from '../protocol/createAgentEventFactory';
import type { AgentErrorInfo, AgentEvent } from '../protocol/eventSchemas';

type OpenKind = 'message' | 'reasoning' | 'tool' | 'approval' | 'task' | 'artifact';

const START_EVENTS: Readonly<Record<string, [OpenKind, string]>> = {
  'message.started': ['message', 'messageId'],
  'reasoning.started': ['reasoning', 'reasoningId'],
  'tool.requested': ['tool', 'toolCallId'],
  'approval.requested': ['approval', 'approvalId'],
  'task.created': ['task', 'taskId'],
  'artifact.created': ['artifact', 'artifactId'],
};

const END_EVENTS: Record<string, [OpenKind, string]> = {};
for (const [kind, field, ends] of [
  ['message', 'messageId', ['completed', 'failed', 'cancelled']],
  ['reasoning', 'reasoningId', ['completed', 'failed', 'cancelled']],
  ['tool', 'toolCallId', ['completed', 'failed', 'cancelled']],
  ['approval', 'approvalId', ['resolved']],
  ['task', 'taskId', ['completed', 'failed', 'cancelled']],
  ['artifact', 'artifactId', ['completed', 'failed']],
] as const) {
  for (const end of ends) END_EVENTS[`${kind}.${end}`] = [kind, field];
}

/** How a run ends when it did not end by itself: cancelled (abort) or failed (error). */
export type AgentRunClosing = { type: 'cancelled'; reason: string } | { type: 'failed'; error: AgentErrorInfo };

/**
 * Follows one run's events: which entities are open, which tool calls have complete
 * arguments, whether the run has ended. Providers use it to close what is open on flush,
 * error or abort; the runner uses it to make sure every run ends.
 *
 * @example
 * const tracker = new AgentRunTracker();
 * for (const event of events) tracker.observe(event);
 * if (!tracker.hasEnded) events.push(...tracker.close(factory, { type: 'cancelled', reason: 'aborted' }));
 */
export class AgentRunTracker {
  private readonly open = new Map<string, { kind: OpenKind; id: string }>();
  private readonly argumentsComplete = new Set<string>();
  private started = false;
  private terminal: AgentEvent['type'] | undefined;

  observe(event: AgentEvent): void {
    const type = event.type;
    // Streamed deltas, most of all events, neither open nor close anything.
    if (type === 'message.delta' || type === 'reasoning.delta' || type === 'tool.arguments_delta') return;
    if (event.type === 'run.started') this.started = true;
    else if (event.type === 'run.completed' || event.type === 'run.failed' || event.type === 'run.cancelled') {
      this.terminal = event.type;
    } else if (event.type === 'tool.arguments_completed') {
      this.argumentsComplete.add(event.payload.toolCallId);
    }
    const payload = event.payload as Record<string, string>;
    const start = START_EVENTS[event.type];
    if (start) this.open.set(`${start[0]}:${payload[start[1]]}`, { kind: start[0], id: payload[start[1]] as string });
    const end = END_EVENTS[event.type];
    if (end) this.open.delete(`${end[0]}:${payload[end[1]]}`);
  }

  get hasStarted(): boolean {
    return this.started;
  }

  get hasEnded(): boolean {
    return this.terminal !== undefined;
  }

  get terminalType(): AgentEvent['type'] | undefined {
    return this.terminal;
  }

  isOpen(kind: OpenKind, id: string): boolean {
    return this.open.has(`${kind}:${id}`);
  }

  /** Open tool calls whose arguments are complete: the ones a run may end with, awaiting execution. */
  toolCallsAwaitingExecution(): string[] {
    const ids: string[] = [];
    for (const entry of this.open.values()) {
      if (entry.kind === 'tool' && this.argumentsComplete.has(entry.id)) ids.push(entry.id);
    }
    return ids;
  }

  /**
   * The events that close every open entity and end the run, created with `events`.
   * Approvals, which have no cancelled state, are resolved as `expired`; artifacts fail.
   */
  close(events: AgentEventFactory, closing: AgentRunClosing): AgentEvent[] {
    if (this.terminal !== undefined) return [];
    const out: AgentEvent[] = [];
    const cancelled = closing.type === 'cancelled';
    const error: AgentErrorInfo = cancelled ? { message: closing.reason, code: closing.reason } : closing.error;
    const reason = cancelled ? closing.reason : undefined;
    for (const { kind, id } of [...this.open.values()]) {
      switch (kind) {
        case 'message':
          out.push(
            cancelled
              ? events.create('message.cancelled', { messageId: id, reason })
              : events.create('message.failed', { messageId: id, error }),
          );
          break;
        case 'reasoning':
          out.push(
            cancelled
              ? events.create('reasoning.cancelled', { reasoningId: id, reason })
              : events.create('reasoning.failed', { reasoningId: id, error }),
          );
          break;
        case 'tool':
          out.push(
            cancelled
              ? events.create('tool.cancelled', { toolCallId: id, reason })
              : events.create('tool.failed', { toolCallId: id, error }),
          );
          break;
        case 'task':
          out.push(
            cancelled
              ? events.create('task.cancelled', { taskId: id, reason })
              : events.create('task.failed', { taskId: id, error }),
          );
          break;
        case 'approval':
          out.push(events.create('approval.resolved', { approvalId: id, decision: 'expired' }));
          break;
        case 'artifact':
          out.push(events.create('artifact.failed', { artifactId: id, error }));
          break;
      }
    }
    out.push(cancelled ? events.create('run.cancelled', { reason }) : events.create('run.failed', { error }));
    for (const event of out) this.observe(event);
    return out;
  }
}
