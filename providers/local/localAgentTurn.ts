import type { AgentState } from '../../machines/agentState';
import type { AgentErrorInfo } from '../../protocol/eventSchemas';
import { getAgentEntityKey } from '../../protocol/getAgentEntityKey';
import type { AgentProviderContextOptions, AgentRunContinuation } from '../AgentProvider';

/** The settled result of a tool call the run being continued left to the application. */
export interface LocalAgentToolResult {
  toolCallId: string;
  name: string;
  /** The call's arguments, parsed as JSON (undefined when they were not valid JSON). */
  arguments: unknown;
  status: 'completed' | 'failed';
  result?: unknown;
  error?: AgentErrorInfo;
}

/**
 * What a script is written for besides the input: whether this run continues one that
 * ended waiting for input, with the application's tool results and the user's answers.
 */
export interface LocalAgentTurn {
  /** Given when this run continues a waiting run; its approval answers are already resolved when the script plays. */
  continuation?: AgentRunContinuation;
  /** The results of the waiting run's pending tool calls that the application has settled, in its order. */
  toolResults: LocalAgentToolResult[];
  /** The conversation so far: the session's AgentState as the run starts. */
  history?: AgentState;
}

function own<Value>(record: Record<string, Value>, key: string): Value | undefined {
  return Object.hasOwn(record, key) ? record[key] : undefined;
}

/**
 * The turn a run plays: from the runner's history and continuation, the settled results
 * of the tool calls the continued run listed as pending.
 *
 * @example
 * const turn = readLocalAgentTurn({ history: store.getSnapshot(), continuation: { runId: 'run-1', approvals: [] } });
 * turn.toolResults; // [{ toolCallId: 'tool-0', name: 'weather', status: 'completed', result: { celsius: 14 }, ... }]
 */
export function readLocalAgentTurn(
  options: Pick<AgentProviderContextOptions, 'history' | 'continuation'>,
): LocalAgentTurn {
  const { history, continuation } = options;
  const turn: LocalAgentTurn = { toolResults: [] };
  if (history !== undefined) turn.history = history;
  if (continuation === undefined) return turn;
  turn.continuation = continuation;
  const waiting = history === undefined ? undefined : own(history.runs, continuation.runId);
  if (history === undefined || waiting === undefined) return turn;
  for (const toolCallId of waiting.pendingToolCallIds ?? []) {
    const toolCall = own(history.toolCalls, getAgentEntityKey(waiting.id, toolCallId));
    if (toolCall === undefined || (toolCall.status !== 'completed' && toolCall.status !== 'failed')) continue;
    const result: LocalAgentToolResult = {
      toolCallId,
      name: toolCall.name,
      arguments: toolCall.parsedArguments,
      status: toolCall.status,
    };
    if (toolCall.status === 'completed') result.result = toolCall.result;
    else if (toolCall.error !== undefined) result.error = toolCall.error;
    turn.toolResults.push(result);
  }
  return turn;
}
