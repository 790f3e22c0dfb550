import type { Actor } from 'xstate';
import type { AgentCheckpointStorage } from '../checkpoint/AgentCheckpoint';
import type { ParseAgentCheckpointOptions } from '../checkpoint/parseAgentCheckpoint';
import type { AgentInspect, AgentStore, AgentStoreOptions } from '../machines/createAgentStore';
import type { AgentProvider } from '../providers/AgentProvider';
import type { AgentTool } from '../providers/agent/defineAgentTool';
import type { AgentRunResult, RunAgentProviderOptions } from '../providers/runAgentProvider';
import type { AgentActionResult } from './createCommandRunner';
import type { xChatRuntimeMachine } from './xChatRuntimeMachine';
import type { XChatSnapshot } from './xChatSnapshot';

export interface XChatRuntimeOptions<Input, Request, Chunk, Context> {
  /** The provider runs use unless `request` is given another. */
  provider: AgentProvider<Input, Request, Chunk, Context>;
  /** The session every run of this chat belongs to. Default: a random id. */
  sessionId?: string;
  store?: AgentStoreOptions;
  /**
   * When a run that ended waiting for input has every tool result and approval answer it
   * waited for, start the run that continues the conversation. Default `true`.
   */
  autoContinue?: boolean;
  /**
   * Automatic continuations in a row before the runtime stops and leaves it to
   * `agentActions.continueRun` (a model that keeps calling tools must not loop forever).
   * A request of the user starts the count again. Default 5.
   */
  maxAutoContinuations?: number;
  /**
   * Tools the application runs (`defineAgentTool`). When a run ends waiting for input on a
   * call of a tool given here with `execute`, the runtime checks the call's arguments against
   * the tool's schema, runs `execute(input, { signal, runId, toolCallId })` and submits its
   * result as `agentActions.submitToolResult` does: what it returned, or an error with what
   * it threw (its `code`, else `tool_error`) or with the issues of invalid arguments
   * (`invalid_arguments`, `data.issues`), or `timeout` past the tool's `timeoutMs`; the
   * conversation then goes on (`autoContinue`). Each call runs once. A call an approval is
   * about is not run here. `abort()` and `destroy()` abort `execute`'s signal; the call then
   * keeps waiting for a result. Tools without `execute` are the application's to run and
   * render; all are in `tools`, by name. Two tools of one name throw an `AgentValidationError`.
   */
  tools?: readonly AgentTool[];
  /** How long `cancelRun` waits for the runtime's `run.cancelled` before it fails. Default 10 000 ms. */
  cancelTimeoutMs?: number;
  /** The clock of command timestamps and command states. Default `Date.now`. */
  now?: () => number;
  /**
   * Where the conversation's checkpoint is kept. Given, the runtime restores the
   * conversation from it when created (resuming its running runs from their cursors) and
   * saves it as it changes. Missing: nothing is persisted.
   */
  checkpointStorage?: AgentCheckpointStorage;
  /** Checkpoint timing and migration: `throttleMs` (1000), `saveTimeoutMs` (10 000), `migrate`. */
  checkpoint?: {
    throttleMs?: number;
    saveTimeoutMs?: number;
    migrate?: ParseAgentCheckpointOptions['migrate'];
  };
  /** Reconnecting a dropped stream from its cursor (see `runAgentProvider`); `false` turns it off. */
  reconnect?: RunAgentProviderOptions<unknown, unknown, unknown, unknown>['reconnect'];
  /**
   * Sees the conversation's actor system: the runtime's actor (`xChat`), the store's session
   * actor with its runs and their entities, the connection machine and the command lanes. An
   * observer or a function: `createBrowserInspector().inspect` as it is, or
   * `createAgentInspector(...)` to send sizes and statuses rather than whole snapshots.
   * Default: `store.inspect`, when given.
   */
  inspect?: AgentInspect;
}

export interface XChatRequestOptions<Input> {
  /** The provider of this run; the conversation stays the same whichever provider runs it. */
  // biome-ignore lint/suspicious/noExplicitAny: a provider of this input and any request, chunk and context
  provider?: AgentProvider<Input, any, any, any>;
}

/**
 * The user's intents, checked by the machines before anything is sent: a failed
 * precondition or a missing capability rejects with an `AgentCommandError` (its message
 * names the precondition), creates no command and calls no provider. Each action resolves
 * when its command has succeeded and rejects with the `AgentCommandError` it failed with;
 * its state is in `commandStates` either way.
 */
export interface AgentActions {
  /**
   * Sends a decision on a waiting approval. In a running run it goes to the provider's
   * `executeCommand`; on an approval a run ended waiting on (an interrupt), the answer is
   * kept until every approval and tool call the run waits on is answered, then a run that
   * continues it carries the answers (AG-UI `resume`), and the command succeeds once that
   * run has resolved the approval. The same decision sent again reuses its idempotency key.
   */
  resolveApproval(input: {
    runId: string;
    approvalId: string;
    decision: 'approved' | 'rejected' | 'modified';
    data?: unknown;
    expectedVersion?: string | number;
  }): Promise<AgentActionResult>;
  /** Asks the runtime to run a failed, retryable tool call again: the retry arrives as a new tool call. */
  retryTool(input: { runId: string; toolCallId: string }): Promise<AgentActionResult>;
  /**
   * Asks the runtime to cancel a running run and waits for its `run.cancelled`; then the
   * run's stream is closed here. No confirmation within `cancelTimeoutMs`: the command fails
   * and the run stays as it is. Later commands of the run are refused meanwhile.
   */
  cancelRun(input: { runId: string; reason?: string }): Promise<AgentActionResult>;
  /**
   * The result of a tool the application executed. In a running run it goes to the
   * provider (`tool.submit_result`); for a tool call a run ended waiting on, the tool call is
   * settled here (`completed` or `failed`, `meta.agentMachines.executedBy: 'client'`), and when
   * the run has all it waited for, the conversation continues (`autoContinue`).
   */
  submitToolResult(input: {
    runId: string;
    toolCallId: string;
    result?: unknown;
    error?: { message: string; code?: string; retryable?: boolean; data?: unknown };
  }): Promise<AgentActionResult>;
  /**
   * Continues a run that ended waiting for input now, without waiting for the rest: the
   * approvals not answered go as `cancelled`. For `autoContinue: false`, or after
   * `maxAutoContinuations`.
   */
  continueRun(input: { runId: string }): Promise<AgentRunResult>;
}

/** One conversation: its store, the runs it started, its commands, and what a view reads. */
export interface XChatRuntime<Input> {
  readonly sessionId: string;
  readonly store: AgentStore;
  /**
   * The conversation as an XState actor (`xChatRuntimeMachine`): `restoring` or `ready`, its
   * children the store's session actor (`session`, with a `run:<runId>` actor per live run),
   * the connection machine (`connection`) and each run's command lane (`lane:<runId>`). Views
   * read `getSnapshot()`, selected from these actors' snapshots and memoized.
   */
  readonly actor: Actor<typeof xChatRuntimeMachine>;
  readonly agentActions: AgentActions;
  /**
   * The tools given (`tools`, `setTools`), by name: a UI that renders a tool call looks its
   * definition up here (`chat.tools.get(toolCall.name)`).
   */
  readonly tools: ReadonlyMap<string, AgentTool>;
  /**
   * Replaces the tools: the calls of runs that end waiting from now on run with these. For a
   * view whose tools change with it (`useXChat` gives each render's). Two tools of one name
   * throw an `AgentValidationError`.
   */
  setTools(tools: readonly AgentTool[]): void;
  /** Settles when the restore from the checkpoint is done (at once without a checkpoint storage). */
  readonly restored: Promise<void>;
  /** Saves the checkpoint now if anything changed since the last save. */
  flushCheckpoint(): Promise<void>;
  getSnapshot(): XChatSnapshot;
  subscribe(listener: () => void): () => void;
  /**
   * Starts a new run with this input; the provider builds its request with the
   * conversation so far. Resolves with how the run ended; a failed or cancelled run is a
   * result, not a rejection. It rejects only when the provider breaks its contract
   * (`AgentProviderError`) or the store throws (strict protocol mode).
   */
  request(input: Input, options?: XChatRequestOptions<Input>): Promise<AgentRunResult>;
  /**
   * Drops the local streams at once: every run this runtime is streaming ends `cancelled`
   * here, commands in flight fail `interrupted`, and the client tools running have their
   * signal aborted (their calls keep waiting for a result). It never asks the runtime to stop
   * (that is `agentActions.cancelRun`) and never calls `executeCommand`.
   */
  abort(reason?: unknown): void;
  /**
   * Marks one user of this runtime (a mounted chat). When the last one releases it and none
   * takes it again within the same task (StrictMode's effects, a remount), the runs still
   * going are cancelled and the commands in flight interrupted: unmounting a chat, or
   * switching it to another conversation, is the same abort as the user's.
   */
  retain(): () => void;
  /**
   * Disposes the conversation: its streams are dropped (their runs end `cancelled` here, as
   * with `abort`), its commands in flight and those queued behind them fail `interrupted`,
   * and its checkpoint saves nothing more (what was scheduled is dropped: `flushCheckpoint()`
   * first to keep it; the storage keeps the last save). Once those streams and commands have
   * ended (in the tasks that follow), its actor (connection machine, command lanes) and its
   * store are stopped and its listeners are told no more. An answer kept for a waiting run's
   * continuation stays `submitting`: no run will carry it.
   *
   * Afterwards `request` and `agentActions.continueRun` reject with an `AgentError` whose code
   * is `runtime_destroyed`, the other actions with an `AgentCommandError` of that code;
   * `abort`, `retain`, `subscribe`, `flushCheckpoint` and `destroy` itself do nothing, and
   * `getSnapshot` keeps answering with the last view. A registry
   * (`createXChatConversations`) never hands out a destroyed conversation again.
   *
   * @example
   * chat.destroy();
   * chat.destroyed; // true
   */
  destroy(): void;
  /** Whether `destroy` was called. */
  readonly destroyed: boolean;
}
