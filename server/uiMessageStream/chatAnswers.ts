import type { AgentApprovalState, AgentState, AgentToolCallState } from '../../machines/agentState';
import type { AgentCommand } from '../../protocol/commandSchemas';
import { AGENT_COMMAND_PROTOCOL, AGENT_COMMAND_PROTOCOL_VERSION } from '../../protocol/constants';
import type { AISDKUIMessage, AISDKUIMessagePart } from '../../providers/ai-sdk/aiSdkMessages';
import { stableJson } from '../hostRequests';

/** What the last assistant message of a chat request answers. */
export interface ChatAnswers {
  /** The commands for the approvals and tool calls still open, each with a key of its own answer. */
  commands: AgentCommand[];
  /**
   * The runs the message's answers are about, open or already answered (a request sent
   * again): the one whose continuation the client reads.
   */
  runIds: string[];
}

const isToolPart = (part: AISDKUIMessagePart) => part.type.startsWith('tool-') || part.type === 'dynamic-tool';

const hex = (bytes: ArrayBuffer) =>
  Array.from(new Uint8Array(bytes), (byte) => byte.toString(16).padStart(2, '0')).join('');

/**
 * The idempotency key (and command id) of the answer to one approval or tool call of a run:
 * the same whatever request carries it, so a retried POST is the same command, applied once.
 */
async function answerKeyOf(runId: string, kind: 'approval' | 'tool', id: string): Promise<string> {
  const digest = await crypto.subtle.digest('SHA-256', new TextEncoder().encode(stableJson([runId, kind, id])));
  return `ui-message-stream:${hex(digest)}`;
}

/** The newest entity of the session with this id (ids are scoped by run: runs may reuse one). */
function newest<Entity extends { id: string; createdAt: number }>(
  records: Record<string, Entity>,
  id: string,
): Entity | undefined {
  let found: Entity | undefined;
  for (const record of Object.values(records)) {
    if (record.id === id && (found === undefined || record.createdAt >= found.createdAt)) found = record;
  }
  return found;
}

/** Whether the call is one its run left to the client: pending, and no approval of the run is about it. */
function isClientToolCall(state: AgentState, call: AgentToolCallState): boolean {
  const run = state.runs[call.runId];
  if (run?.pendingToolCallIds?.includes(call.id) !== true) return false;
  for (const approval of Object.values(state.approvals)) {
    if (approval.runId === call.runId && approval.toolCallId === call.id) return false;
  }
  return true;
}

function command(
  type: 'approval.resolve' | 'tool.submit_result',
  sessionId: string,
  runId: string,
  key: string,
  payload: Record<string, unknown>,
): AgentCommand {
  return {
    commandProtocol: AGENT_COMMAND_PROTOCOL,
    commandProtocolVersion: AGENT_COMMAND_PROTOCOL_VERSION,
    type,
    commandId: key,
    idempotencyKey: key,
    sessionId,
    runId,
    timestamp: Date.now(),
    payload,
  } as AgentCommand;
}

/**
 * The answers in the last assistant message of a chat request, read against the session: a
 * tool part in `approval-responded` answers the approval it names (approved, or rejected),
 * one in `output-available` / `output-error` the client tool call it names (its result, or
 * its error). Only what the session still waits for becomes a command; a part about an
 * approval or call already answered names its run (the request was sent before), and a part
 * the session knows nothing of (a server tool's output, another backend's history) is skipped.
 */
export async function chatAnswersOf(
  state: AgentState,
  sessionId: string,
  message: AISDKUIMessage,
): Promise<ChatAnswers> {
  const commands: AgentCommand[] = [];
  const runIds: string[] = [];
  const named = (runId: string) => {
    if (!runIds.includes(runId)) runIds.push(runId);
  };
  for (const part of message.parts) {
    if (!isToolPart(part)) continue;
    if (part.state === 'approval-responded') {
      const answer = part.approval as { id?: unknown; approved?: unknown } | undefined;
      if (typeof answer?.id !== 'string' || typeof answer.approved !== 'boolean') continue;
      const approval: AgentApprovalState | undefined = newest(state.approvals, answer.id);
      if (approval === undefined) continue;
      named(approval.runId);
      if (approval.status !== 'waiting') continue;
      const key = await answerKeyOf(approval.runId, 'approval', approval.id);
      const decision = answer.approved ? 'approved' : 'rejected';
      commands.push(command('approval.resolve', sessionId, approval.runId, key, { approvalId: approval.id, decision }));
      continue;
    }
    if (part.state !== 'output-available' && part.state !== 'output-error') continue;
    if (typeof part.toolCallId !== 'string') continue;
    const call = newest(state.toolCalls, part.toolCallId);
    if (call === undefined || !isClientToolCall(state, call)) continue;
    named(call.runId);
    if (call.status !== 'awaiting_execution' && call.status !== 'running') continue;
    const key = await answerKeyOf(call.runId, 'tool', call.id);
    const payload =
      part.state === 'output-available'
        ? { toolCallId: call.id, result: part.output === undefined ? null : part.output }
        : {
            toolCallId: call.id,
            error: { message: typeof part.errorText === 'string' ? part.errorText : 'The tool failed' },
          };
    commands.push(command('tool.submit_result', sessionId, call.runId, key, payload));
  }
  return { commands, runIds };
}
