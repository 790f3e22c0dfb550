import type { AgentState } from '../machines/agentState';
import { getOwn } from '../machines/agentStateProjection';
import { isWaitingForInput } from '../machines/pendingInput';
import { selectPendingInput } from '../machines/selectors';
import { AgentValidationError } from '../protocol/errors';
import type { AgentErrorInfo, AgentEvent } from '../protocol/eventSchemas';
import { getAgentEntityKey } from '../protocol/getAgentEntityKey';
import type { AgentTool } from '../providers/agent/defineAgentTool';
import { executeAgentTool } from '../providers/agent/executeAgentTool';
import { parseToolCallInput } from '../providers/agent/parseToolCallInput';
import type { AgentActions } from './xChatRuntimeTypes';

export interface ClientToolRunnerOptions {
  tools: readonly AgentTool[] | undefined;
  /** The conversation's AgentState now. */
  readState(): AgentState;
  /** Whether the conversation was destroyed: nothing starts then. */
  isDestroyed(): boolean;
  /** Where results go: `agentActions.submitToolResult`. */
  submit: AgentActions['submitToolResult'];
  /** A result could not be submitted (the conversation went on without it, say). */
  onError(error: unknown): void;
}

/** The tools of a conversation that run here, and the calls of its runs they are running. */
export interface ClientToolRunner {
  /** The tools by name: those with `execute` run here, the others are for the application's UI. */
  readonly tools: ReadonlyMap<string, AgentTool>;
  setTools(tools: readonly AgentTool[]): void;
  /**
   * A run of the conversation ended waiting for input (or was restored so): the calls it waits
   * on whose tool has `execute` run, in a task of their own.
   */
  onWaiting(runId: string): void;
  /** An event a stream dispatched: a `run.completed` listing tool calls means the run waits on them. */
  onEvent(event: AgentEvent): void;
  /** The conversation was restored: each of its runs waiting on tool calls is taken as one that ended so here. */
  onRestored(sessionId: string): void;
  /** Aborts the signals of the executions running: their calls keep waiting for a result. */
  abort(reason: unknown): void;
}

function toToolMap(tools: readonly AgentTool[]): ReadonlyMap<string, AgentTool> {
  const byName = new Map<string, AgentTool>();
  for (const tool of tools) {
    if (byName.has(tool.name)) {
      throw new AgentValidationError('chat tools', {
        path: 'tools',
        reason: 'expected unique names',
        message: `two tools are named ${tool.name}`,
      });
    }
    byName.set(tool.name, tool);
  }
  return byName;
}

/** The error as `submitToolResult` takes it. */
function toSubmittedError({ message, code, retryable, data }: AgentErrorInfo) {
  return {
    message,
    ...(code === undefined ? {} : { code }),
    ...(retryable === undefined ? {} : { retryable }),
    ...(data === undefined ? {} : { data }),
  };
}

/**
 * Runs the client tools given with `execute` for the runs of one conversation: when a run ends
 * waiting for input on a call of such a tool (not one an approval is about: that call runs
 * where the approval is answered), its arguments are checked against the tool's schema, then
 * `execute(input, { signal, runId, toolCallId })` runs, and its result is submitted as the
 * application would (`submitToolResult`): what it returned, or an error with what it threw
 * (its `code`, else `tool_error`), or with the issues of invalid arguments
 * (`invalid_arguments`), or `timeout` past the tool's `timeoutMs`. Each call runs once per
 * runtime. An execution aborted (`abort()`, `destroy()`, unmounting) submits nothing: its call
 * still waits for a result.
 */
export function createClientToolRunner(options: ClientToolRunnerOptions): ClientToolRunner {
  let tools = toToolMap(options.tools ?? []);
  /** The calls started here, by entity key: a call runs once. */
  const started = new Set<string>();
  const running = new Set<AbortController>();

  const execute = async (tool: AgentTool, runId: string, toolCallId: string, input: unknown) => {
    const controller = new AbortController();
    running.add(controller);
    let outcome: Awaited<ReturnType<typeof executeAgentTool>>;
    try {
      outcome = await executeAgentTool(tool, input, { signal: controller.signal, runId, toolCallId });
    } finally {
      running.delete(controller);
    }
    if (outcome.status === 'cancelled') return;
    await options.submit(
      outcome.status === 'completed'
        ? { runId, toolCallId, result: outcome.result }
        : { runId, toolCallId, error: toSubmittedError(outcome.error) },
    );
  };

  const start = (runId: string) => {
    if (options.isDestroyed()) return;
    const state = options.readState();
    const run = getOwn(state.runs, runId);
    if (run === undefined || !isWaitingForInput(state, run)) return;
    const pending = selectPendingInput(state, runId);
    const gated = new Set(pending.approvals.map((approval) => approval.toolCallId));
    for (const call of pending.toolCalls) {
      const tool = tools.get(call.name);
      const key = getAgentEntityKey(runId, call.id);
      if (tool?.execute === undefined || call.status !== 'awaiting_execution' || gated.has(call.id)) continue;
      if (started.has(key)) continue;
      started.add(key);
      const parsed = parseToolCallInput(tool, call);
      const done = parsed.success
        ? execute(tool, runId, call.id, parsed.input)
        : options.submit({ runId, toolCallId: call.id, error: toSubmittedError(parsed.error) });
      done.catch(options.onError);
    }
  };

  const onWaiting = (runId: string) => {
    // Not from within the store's dispatch: `execute` may read the conversation, or act on it.
    queueMicrotask(() => start(runId));
  };
  return {
    get tools() {
      return tools;
    },
    setTools(next) {
      tools = toToolMap(next);
    },
    onWaiting,
    onEvent(event) {
      if (event.type === 'run.completed' && event.payload.pendingToolCallIds !== undefined) onWaiting(event.runId);
    },
    onRestored(sessionId) {
      for (const run of Object.values(options.readState().runs)) {
        if (run.sessionId === sessionId && run.pendingToolCallIds !== undefined) onWaiting(run.id);
      }
    },
    abort(reason) {
      for (const controller of running) controller.abort(reason);
    },
  };
}
