import type { BaseEvent } from '@ag-ui/core';
import type { AgentRunEmitter } from '../createAgentRunEmitter';

export type LaneKind = 'text' | 'tool' | 'reasoning';

export interface AgUIContextState {
  events: AgentRunEmitter;
  threadId: string;
  /** Open chunk streams, one per lane (the parent agent, or a subagent). */
  lanes: Map<string, { kind: LaneKind; id: string }>;
  /** Message ids the caller already has (the input history) or this run emitted. */
  knownMessages: Set<string>;
  /** Tool calls of this run, in order, and those that got a result. */
  toolCalls: string[];
  toolResults: Set<string>;
  openSteps: Map<string, string[]>;
  stepCount: number;
  serverRun: { threadId: string; runId: string } | undefined;
}

/** An AG-UI event after validation, read field by field. */
export type AnyAgUIEvent = BaseEvent & Record<string, unknown>;

/** Meta that marks an entity as a subagent's. */
export function subagentMeta(event: AnyAgUIEvent): { meta: Record<string, unknown> } | undefined {
  return typeof event.subagentRunId === 'string'
    ? { meta: { agui: { subagentRunId: event.subagentRunId } } }
    : undefined;
}
