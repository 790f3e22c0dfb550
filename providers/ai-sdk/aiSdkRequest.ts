import { AgentValidationError } from '../../protocol/errors';
import type { AgentEvent } from '../../protocol/eventSchemas';
import type { AISDKContext } from './aiSdkContext';
import { checkAnswers } from './aiSdkContinuation';
import type { AISDKUIMessage } from './aiSdkMessages';
import { toAISDKMessages } from './toAISDKMessages';

/**
 * What one request sends. Either the whole conversation (`messages`, sent as they are), or
 * the user's new `prompt`, sent after the conversation so far, which the provider builds
 * from the session's AgentState (`toAISDKMessages`). A run that continues one waiting for
 * input needs neither: its request is the conversation, tool results and answers included.
 */
export interface AISDKChatInput {
  /** The conversation to send as it is; given, it wins over the session's history and `prompt`. */
  messages?: AISDKUIMessage[];
  /** The user's new message, sent after the session's conversation so far. */
  prompt?: string;
  /** Extra body fields for this request, over the provider's `body` (`DefaultChatTransport`'s `body` option). */
  body?: Record<string, unknown>;
}

/** The body `DefaultChatTransport` POSTs: extra fields, then the chat id, its messages and the trigger. */
export interface AISDKChatRequest {
  id: string;
  messages: AISDKUIMessage[];
  trigger: 'submit-message' | 'regenerate-message';
  messageId?: string;
  [field: string]: unknown;
}

/** The UIMessage id of the prompt a run sends: stable, so the next request sends it under the same id. */
export function promptMessageIdOf(runId: string): string {
  return `user-${runId}`;
}

/**
 * The run's first events: `run.started`, and the user's message (the prompt, or the last
 * of the input's messages when it is the user's), which a continuing run does not have.
 */
export function startEvents(input: AISDKChatInput, context: AISDKContext): AgentEvent[] {
  const { events } = context;
  const out: AgentEvent[] = [events.emit('run.started', { input })];
  if (context.continuation !== undefined) return out;
  const last = input.messages?.at(-1);
  const text =
    input.messages === undefined
      ? input.prompt
      : last?.role === 'user'
        ? last.parts
            .flatMap((part) => (part.type === 'text' && typeof part.text === 'string' ? [part.text] : []))
            .join('')
        : undefined;
  if (text === undefined) return out;
  const messageId = input.messages === undefined ? promptMessageIdOf(events.runId) : (last as AISDKUIMessage).id;
  out.push(
    events.emit(
      'message.started',
      { messageId: 'prompt', role: 'user', content: text },
      { meta: { aiSdk: { messageId } } },
    ),
    events.emit('message.completed', { messageId: 'prompt' }),
  );
  return out;
}

/**
 * The request: the provider's and the input's `body`, then `id` (the session), the
 * messages (the input's, else the session's conversation with the continuation's answers,
 * and the prompt) and `trigger: 'submit-message'`. Throws an `AgentValidationError` when
 * there is nothing to send, and an `AgentCommandError` (`unsupported_capability`) for a
 * `modified` answer.
 */
export function prepareAISDKRequest(
  input: AISDKChatInput,
  context: AISDKContext,
  body: Record<string, unknown> | undefined,
): AISDKChatRequest {
  const { history, continuation, events } = context;
  const answers = continuation?.approvals ?? [];
  checkAnswers(answers);
  let messages: AISDKUIMessage[];
  if (input.messages !== undefined) messages = input.messages;
  else {
    messages = history === undefined ? [] : toAISDKMessages(history, events.sessionId, answers);
    if (continuation === undefined && input.prompt !== undefined) {
      messages.push({
        id: promptMessageIdOf(events.runId),
        role: 'user',
        parts: [{ type: 'text', text: input.prompt }],
      });
    }
  }
  if (messages.length === 0) {
    throw new AgentValidationError('AI SDK chat input', {
      path: 'prompt',
      reason: 'expected messages or a prompt',
      message: 'nothing to send: no messages, no prompt, and no conversation in the session to continue',
    });
  }
  return { ...body, ...input.body, id: events.sessionId, messages, trigger: 'submit-message' };
}
