import type {
  Context as AgUIContext,
  Message as AgUIMessage,
  Tool as AgUITool,
  ResumeEntry,
  RunAgentInput,
} from '@ag-ui/core';
import { getOwn } from '../../machines/agentStateProjection';
import { AgentValidationError } from '../../protocol/errors';
import type { AgentEvent } from '../../protocol/eventSchemas';
import { getAgentEntityKey } from '../../protocol/getAgentEntityKey';
import type { AgUIContextState } from './agUIContext';
import { contentOf } from './agUIMessages';
import { resumeEntriesOf } from './agUIResume';
import { toAgUIMessages } from './toAgUIMessages';

/**
 * What a run of an AG-UI agent starts from: the AG-UI `RunAgentInput` fields the caller
 * owns. Give the conversation as `messages`, or a `prompt`: the request then carries the
 * session's conversation, built from the run's `history` (`toAgUIMessages`), and the prompt
 * as a new user message. A run that continues another (`continuation`) needs neither and
 * sends no new user message.
 */
export interface AgUIAgentInput {
  /**
   * The whole conversation to send, as the caller keeps it; given, it replaces the history.
   * A message without an `id` gets one made of the run id and its place (the last user
   * message the prompt's id, `prompt-<runId>`; others `input-<runId>-<index>`), the same
   * on every resend of the run.
   */
  messages?: AgUIMessage[];
  /**
   * The user's new message, sent after the history (or after `messages`, unless their last
   * message is this same user message, which is then not sent twice).
   */
  prompt?: string;
  /** Default: the session id. */
  threadId?: string;
  tools?: AgUITool[];
  context?: AgUIContext[];
  state?: unknown;
  forwardedProps?: unknown;
  /** Answers to the interrupts a previous run ended with; given, they replace those built from the continuation. */
  resume?: ResumeEntry[];
}

/**
 * The id of the user message a `prompt` becomes, on the wire and in AgentState alike, so a
 * later run's history sends it under the same id. Unique in the thread, as AG-UI wants.
 */
export function promptMessageIdOf(runId: string): string {
  return `prompt-${runId}`;
}

/** The error of an input that cannot become a request: the run fails with it before anything is sent. */
function invalidInput(path: string, reason: string): AgentValidationError {
  return new AgentValidationError('AG-UI input', { path, reason, message: `${path}: ${reason}` });
}

function checkInput(input: AgUIAgentInput, context: AgUIContextState): void {
  if (input.messages !== undefined) return;
  if (input.prompt === '') throw invalidInput('prompt', 'is empty');
  if (input.prompt === undefined && context.continuation === undefined) {
    throw invalidInput('messages', 'the input has neither `messages` nor `prompt`, and the run continues none');
  }
}

/**
 * Throws when the answers cannot be sent: an approval answered twice, or, when the history
 * holds the continued run, an approval that run does not wait on (unknown, or settled already).
 */
function checkAnswers(context: AgUIContextState): void {
  const { continuation, history } = context;
  if (continuation === undefined) return;
  const answered = new Set<string>();
  const continued = history === undefined ? undefined : getOwn(history.runs, continuation.runId);
  for (const [index, answer] of continuation.approvals.entries()) {
    const field = `continuation.approvals.${index}.approvalId`;
    if (answered.has(answer.approvalId)) throw invalidInput(field, `answers "${answer.approvalId}" again`);
    answered.add(answer.approvalId);
    if (history === undefined || continued === undefined) continue;
    const approval = getOwn(history.approvals, getAgentEntityKey(continuation.runId, answer.approvalId));
    if (approval?.status !== 'waiting') {
      const state = approval === undefined ? 'unknown' : approval.status;
      throw invalidInput(
        field,
        `run "${continuation.runId}" does not wait on approval "${answer.approvalId}" (${state})`,
      );
    }
  }
}

/**
 * The input's messages, each with an id. A message without one (OpenAI-style callers send
 * none) gets an id made of the run id and its place, so a resend of the run sends the same
 * ids: the last, when it is the user's, is the run's new message and gets the prompt's id
 * (`promptMessageIdOf`); any other `input-<runId>-<index>`. Throws when a message is not an
 * object with a `role`, or its id is not a non-empty string.
 */
function inputMessagesOf(messages: unknown, runId: string): AgUIMessage[] {
  if (!Array.isArray(messages)) throw invalidInput('messages', 'is not an array');
  return messages.map((message: unknown, index) => {
    if (typeof message !== 'object' || message === null || Array.isArray(message)) {
      throw invalidInput(`messages.${index}`, 'is not a message object');
    }
    const { id, role } = message as { id?: unknown; role?: unknown };
    if (typeof role !== 'string') throw invalidInput(`messages.${index}.role`, 'is not a string');
    if (id === undefined) {
      const last = index === messages.length - 1 && role === 'user';
      return { ...message, id: last ? promptMessageIdOf(runId) : `input-${runId}-${index}` } as AgUIMessage;
    }
    if (typeof id !== 'string' || id === '') throw invalidInput(`messages.${index}.id`, 'is not a non-empty string');
    return message as AgUIMessage;
  });
}

/**
 * The request's messages: the input's, else the session's conversation from the history;
 * then the prompt as a new user message, unless the run continues another or the prompt is
 * the last of the input's messages already (callers that send both often repeat it there). Built once per
 * run; their ids become known, so a MESSAGES_SNAPSHOT that repeats them hydrates nothing
 * twice. Throws when the input cannot become a request (`checkInput`, `inputMessagesOf`).
 */
function requestMessagesOf(input: AgUIAgentInput, context: AgUIContextState): AgUIMessage[] {
  if (context.requestMessages !== undefined) return context.requestMessages;
  checkInput(input, context);
  const { runId, sessionId } = context.events;
  const messages =
    input.messages !== undefined
      ? inputMessagesOf(input.messages, runId)
      : context.history === undefined
        ? []
        : toAgUIMessages(context.history, sessionId);
  const { prompt } = input;
  if (context.continuation === undefined && prompt !== undefined) {
    // Only the caller's own messages can repeat it: the history's last user message is an earlier run's.
    const last = input.messages === undefined ? undefined : messages.at(-1);
    const repeated = last?.role === 'user' && contentOf(last.content) === prompt;
    if (!repeated) messages.push({ id: promptMessageIdOf(runId), role: 'user', content: prompt });
  }
  for (const message of messages) context.knownMessages.add(message.id);
  context.requestMessages = messages;
  return messages;
}

/**
 * The run's new user message, as `start` emits it: the request's last message when it is
 * the user's (the prompt, or the caller's own). None for a continuing run, or an input that
 * cannot become a request: `prepareRequest` then fails the run saying why.
 */
export function userMessageEventsOf(input: AgUIAgentInput, context: AgUIContextState): AgentEvent[] {
  // A continuing run answers what the waiting run asked; it says nothing new.
  if (context.continuation !== undefined) return [];
  let last: AgUIMessage | undefined;
  try {
    last = requestMessagesOf(input, context).at(-1);
  } catch (error) {
    if (AgentValidationError.isInstance(error)) return [];
    throw error;
  }
  // The user's new message belongs to this run; the rest of the history is the caller's.
  if (last?.role !== 'user') return [];
  const { events } = context;
  const messageId = last.id;
  return [
    events.emit('message.started', { messageId, role: 'user', content: contentOf(last.content) }),
    events.emit('message.completed', { messageId }),
  ];
}

/**
 * The AG-UI `RunAgentInput` of a run. Throws an `AgentValidationError` (the runner fails the
 * run with it, before anything is sent) when the input cannot become one: neither `messages`,
 * a `prompt` nor a continuation; an empty prompt; an approval
 * answered twice, or one the continued run does not wait on (checked when the history holds it).
 */
export function prepareAgUIRequest(input: AgUIAgentInput, context: AgUIContextState): RunAgentInput {
  const messages = requestMessagesOf(input, context);
  checkAnswers(context);
  if (input.threadId !== undefined) context.threadId = input.threadId;
  const request: RunAgentInput = {
    threadId: context.threadId,
    runId: context.events.runId,
    messages,
    tools: input.tools ?? [],
    context: input.context ?? [],
    state: input.state,
    forwardedProps: input.forwardedProps,
  };
  const answers = context.continuation?.approvals ?? [];
  const resume = input.resume ?? (answers.length > 0 ? resumeEntriesOf(answers) : undefined);
  if (resume !== undefined) request.resume = resume;
  return request;
}
