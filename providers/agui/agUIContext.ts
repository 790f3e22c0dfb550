import type { AGUIEvent } from '@ag-ui/core';
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

/**
 * The subagent an event belongs to, if any. RUN_* and MESSAGES_SNAPSHOT declare no
 * `subagentRunId`, but AG-UI's schema keeps unknown fields, so one sent there still counts.
 */
export function subagentRunIdOf(event: AGUIEvent): string | undefined {
  return 'subagentRunId' in event && typeof event.subagentRunId === 'string' ? event.subagentRunId : undefined;
}

/** Meta that marks an entity as a subagent's. */
export function subagentMeta(event: AGUIEvent): { meta: Record<string, unknown> } | undefined {
  const subagentRunId = subagentRunIdOf(event);
  return subagentRunId === undefined ? undefined : { meta: { agui: { subagentRunId } } };
}
