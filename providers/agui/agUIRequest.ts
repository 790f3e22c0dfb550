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
  /** The whole conversation to send, as the caller keeps it; given, it wins over the history and `prompt`. */
  messages?: AgUIMessage[];
  /** The user's new message; the rest of the conversation comes from the run's history. */
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

/** The run's new user message, as `start` emits it: the prompt, or the last message given when it is the user's. */
export function userMessageEventsOf(input: AgUIAgentInput, context: AgUIContextState): AgentEvent[] {
  // A continuing run answers what the waiting run asked; it says nothing new.
  if (context.continuation !== undefined) return [];
  const { events } = context;
  let messageId: string;
  let content: ReturnType<typeof contentOf>;
  if (input.messages !== undefined) {
    const last = input.messages.at(-1);
    // The user's new message belongs to this run; the rest of the history is the caller's.
    if (last?.role !== 'user') return [];
    messageId = last.id;
    content = contentOf(last.content);
  } else if (input.prompt !== undefined && input.prompt !== '') {
    messageId = promptMessageIdOf(events.runId);
    content = input.prompt;
  } else {
    // Not a valid input: `prepareRequest` fails the run saying why.
    return [];
  }
  return [
    events.emit('message.started', { messageId, role: 'user', content }),
    events.emit('message.completed', { messageId }),
  ];
}

/**
 * The request's messages: the input's, else the session's conversation from the history and
 * the prompt. Built once per run; their ids become known, so a MESSAGES_SNAPSHOT that repeats
 * them hydrates nothing twice.
 */
function requestMessagesOf(input: AgUIAgentInput, context: AgUIContextState): AgUIMessage[] {
  if (context.requestMessages !== undefined) return context.requestMessages;
  let messages: AgUIMessage[];
  if (input.messages !== undefined) {
    messages = input.messages;
  } else {
    messages = context.history === undefined ? [] : toAgUIMessages(context.history, context.events.sessionId);
    if (context.continuation === undefined && input.prompt !== undefined) {
      messages.push({ id: promptMessageIdOf(context.events.runId), role: 'user', content: input.prompt });
    }
  }
  for (const message of messages) context.knownMessages.add(message.id);
  context.requestMessages = messages;
  return messages;
}

/**
 * The AG-UI `RunAgentInput` of a run. Throws an `AgentValidationError` (the runner fails the
 * run with it, before anything is sent) when the input cannot become one: neither `messages`,
 * a `prompt` nor a continuation; an empty prompt; an approval
 * answered twice, or one the continued run does not wait on (checked when the history holds it).
 */
export function prepareAgUIRequest(input: AgUIAgentInput, context: AgUIContextState): RunAgentInput {
  checkInput(input, context);
  checkAnswers(context);
  if (input.threadId !== undefined) context.threadId = input.threadId;
  const request: RunAgentInput = {
    threadId: context.threadId,
    runId: context.events.runId,
    messages: requestMessagesOf(input, context),
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
