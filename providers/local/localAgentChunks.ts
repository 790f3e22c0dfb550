import type { AgentErrorInfo, AgentUsage } from '../../protocol/eventSchemas';

/** The frames the local runtime yields: a small private wire format, mapped by the local provider. */
export type LocalAgentChunk =
  | { type: 'reasoning.start'; id: string; redacted?: boolean }
  | { type: 'reasoning.delta'; id: string; delta: string }
  | { type: 'reasoning.end'; id: string }
  | { type: 'text.start'; id: string }
  | { type: 'text.delta'; id: string; delta: string }
  | { type: 'text.end'; id: string }
  | { type: 'tool.start'; id: string; name: string }
  | { type: 'tool.args'; id: string; delta: string }
  | { type: 'tool.args_end'; id: string }
  | { type: 'tool.running'; id: string }
  | { type: 'tool.result'; id: string; result: unknown }
  | { type: 'tool.error'; id: string; error: AgentErrorInfo }
  | { type: 'approval.request'; id: string; description: string; risk?: string; toolCallId?: string }
  | { type: 'approval.resolved'; id: string; decision: 'approved' | 'rejected' | 'modified' | 'expired' }
  | { type: 'task.start'; id: string; title: string }
  | { type: 'task.progress'; id: string; progress: number }
  | { type: 'task.end'; id: string }
  | { type: 'artifact.start'; id: string; mediaType: string; title?: string; content?: string }
  | { type: 'artifact.version'; id: string; version: number; content: string }
  | { type: 'artifact.end'; id: string }
  | { type: 'error'; error: AgentErrorInfo }
  | { type: 'done'; usage?: AgentUsage; pendingToolCallIds?: string[]; pendingApprovalIds?: string[] };

/** One step of a scripted agent; the local runtime turns each into chunks. */
export type LocalAgentStep =
  | { type: 'reasoning'; deltas: string[]; redacted?: boolean }
  | { type: 'text'; deltas: string[] }
  | {
      type: 'tool';
      name: string;
      argumentDeltas: string[];
      /** What the tool returned; omit it (and `error`) for a tool the application executes. */
      result?: unknown;
      error?: AgentErrorInfo;
    }
  | {
      type: 'approval';
      description: string;
      risk?: string;
      /** The tool call it is about: the id of an earlier tool step, `tool-<its index>`. */
      toolCallId?: string;
      /**
       * How the runtime resolves it; omit it to leave the approval waiting for the user: the
       * run then ends listing it in `pendingApprovalIds`.
       */
      decision?: 'approved' | 'rejected' | 'modified' | 'expired';
    }
  | { type: 'task'; title: string; progress: number[] }
  | { type: 'artifact'; mediaType: string; title?: string; versions: string[] }
  /** The runtime fails here, as a crashed model server would. */
  | { type: 'fail'; error: AgentErrorInfo }
  /** The runtime reports an error in the stream and ends. */
  | { type: 'error'; error: AgentErrorInfo }
  /** The runtime hangs here until the run is aborted. */
  | { type: 'stall' }
  | { type: 'wait'; ms: number };

/**
 * A scripted agent run for the local provider.
 *
 * @example
 * const script: LocalAgentScript = {
 *   steps: [
 *     { type: 'reasoning', deltas: ['Need the weather.'] },
 *     { type: 'tool', name: 'weather', argumentDeltas: ['{"city":"Paris"}'], result: { celsius: 14 } },
 *     { type: 'text', deltas: ['It is ', '14 °C.'] },
 *   ],
 *   delayMs: 30,
 * };
 */
export interface LocalAgentScript {
  steps: LocalAgentStep[];
  /** Milliseconds between chunks; default 0. */
  delayMs?: number;
  usage?: AgentUsage;
}
