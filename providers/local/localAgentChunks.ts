import type { AgentErrorInfo, AgentUsage } from '../../protocol/eventSchemas';

type Meta = Record<string, unknown>;

/** The frames the local runtime yields: a small private wire format, mapped by the local provider. */
export type LocalAgentChunk =
  | { type: 'reasoning.start'; id: string; redacted?: boolean }
  | { type: 'reasoning.delta'; id: string; delta: string }
  | { type: 'reasoning.end'; id: string }
  | { type: 'text.start'; id: string }
  | { type: 'text.delta'; id: string; delta: string }
  | { type: 'text.end'; id: string }
  /** `attempt` and `retryOf` mark a retry: a new call that repeats a failed one. */
  | { type: 'tool.start'; id: string; name: string; attempt?: number; retryOf?: string }
  | { type: 'tool.args'; id: string; delta: string }
  | { type: 'tool.args_end'; id: string }
  | { type: 'tool.running'; id: string }
  | { type: 'tool.result'; id: string; result: unknown; meta?: Meta }
  | { type: 'tool.error'; id: string; error: AgentErrorInfo; meta?: Meta }
  | { type: 'tool.cancelled'; id: string; reason: string }
  | {
      type: 'approval.request';
      id: string;
      description: string;
      risk?: string;
      toolCallId?: string;
      data?: unknown;
      editable?: boolean;
      version?: string | number;
    }
  | {
      type: 'approval.resolved';
      id: string;
      decision: 'approved' | 'rejected' | 'modified' | 'expired';
      data?: unknown;
      meta?: Meta;
    }
  | { type: 'task.start'; id: string; title: string }
  | { type: 'task.progress'; id: string; progress: number }
  | { type: 'task.end'; id: string }
  | { type: 'artifact.start'; id: string; mediaType: string; title?: string; content?: string }
  | { type: 'artifact.version'; id: string; version: number; content: string }
  | { type: 'artifact.end'; id: string }
  | { type: 'error'; error: AgentErrorInfo }
  /** The runtime stopped the run on the user's `run.cancel`: what is open is cancelled, then the run. */
  | { type: 'cancelled'; reason: string }
  | { type: 'done'; usage?: AgentUsage; pendingToolCallIds?: string[]; pendingApprovalIds?: string[] };

/**
 * Where a step that needs an answer gets it. `continuation` (the default): the run ends
 * listing the tool call or approval as pending, and the answer comes with the run that
 * continues it. `command`: the run waits, still running, for the command that answers it
 * (`tool.submit_result`, `approval.resolve`), then goes on.
 */
export type LocalAgentWaitFor = 'command' | 'continuation';

/**
 * One step of a scripted agent; the local runtime turns each into chunks. Entity ids are
 * `<step type>-<step index>` (`tool-2`), and a retry of a tool call `<first call's id>-retry-<attempt>`.
 */
export type LocalAgentStep =
  | { type: 'reasoning'; deltas: string[]; redacted?: boolean }
  | { type: 'text'; deltas: string[] }
  | {
      type: 'tool';
      name: string;
      argumentDeltas: string[];
      /** What the tool returned; omit it (and `error`) for a tool the application executes. */
      result?: unknown;
      /** The tool failed. When `retryable`, a `tool.retry` command while the run runs makes a new attempt. */
      error?: AgentErrorInfo;
      /**
       * What a retry returns. Without it (and without `retryError`) every retry fails again
       * with `error`: the runtime never makes a result up.
       */
      retryResult?: unknown;
      /** What a retry fails with, instead of `error`; it wins over `retryResult`. */
      retryError?: AgentErrorInfo;
      /** For a tool the application executes: whether the run ends waiting for its result or waits for it running. */
      waitFor?: LocalAgentWaitFor;
      /**
       * An earlier approval step (`approval-<its index>`) the call's arguments come from: its
       * data as the user answered it (`modified`), else as it was asked. `argumentDeltas`
       * are the arguments only when that approval has no data. A tool call gated this way
       * runs with what the user approved, as an agent runs a tool after its approval.
       */
      argumentsFrom?: string;
    }
  | {
      type: 'approval';
      description: string;
      risk?: string;
      /** The tool call it is about: the id of an earlier tool step, `tool-<its index>`. */
      toolCallId?: string;
      /** What the user is asked to approve, and may edit (a `modified` decision). */
      data?: unknown;
      /** `false`: the runtime refuses a `modified` decision. */
      editable?: boolean;
      /** The request's version: an `approval.resolve` whose `expectedVersion` differs is refused. */
      version?: string | number;
      /**
       * How the runtime resolves it by itself; omit it to leave the approval to the user, as
       * `waitFor` says. An approved or modified answer lets the script go on; a rejected one
       * stops it: a tool call the approval names that is still waiting is cancelled
       * (`approval_rejected`), and the run completes with no further step. Left to the
       * continuation, the approval ends the run before the next step that is not another
       * such approval; the run that continues it (with the answers) plays the script on from
       * that step, or, when an answer rejects, cancels that tool call and plays nothing more.
       * An answer sent while the run still runs is taken in the run.
       */
      decision?: 'approved' | 'rejected' | 'modified' | 'expired';
      waitFor?: LocalAgentWaitFor;
    }
  | { type: 'task'; title: string; progress: number[] }
  | { type: 'artifact'; mediaType: string; title?: string; versions: string[] }
  /** The runtime fails here, as a crashed model server would. */
  | { type: 'fail'; error: AgentErrorInfo }
  /** The runtime reports an error in the stream and ends. */
  | { type: 'error'; error: AgentErrorInfo }
  /** The runtime hangs here until the run is aborted or cancelled; it still carries out commands. */
  | { type: 'stall' }
  /** The runtime pauses; it carries out commands (a tool retry, a cancel) meanwhile. */
  | { type: 'wait'; ms: number }
  /**
   * The run waits for the user's next command that it can carry out (a `tool.retry`), carries
   * it out, and goes on; after `timeoutMs` it goes on without one. No `timeoutMs`: it waits
   * until a command, a `run.cancel` or an abort.
   */
  | { type: 'await_command'; timeoutMs?: number };

/**
 * A scripted agent run for the local provider.
 *
 * @example
 * const script: LocalAgentScript = {
 *   steps: [
 *     { type: 'reasoning', deltas: ['Need the weather.'] },
 *     { type: 'tool', name: 'weather', argumentDeltas: ['{"city":"Paris"}'], result: { celsius: 14 } },
 *     { type: 'approval', description: 'Email the team?', waitFor: 'command' },
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
