import * as z from 'zod/mini';
import type { AISDKUIMessage } from '../../providers/ai-sdk/aiSdkMessages';
import { AgentHostError } from '../AgentHostError';
import { describeIssue, isSessionId, MAX_ID_LENGTH } from '../hostRequests';

/** The most messages one chat request carries. */
export const MAX_CHAT_MESSAGES = 10_000;

const part = z.looseObject({ type: z.string().check(z.minLength(1)) });

const chatRequestSchema = z.looseObject({
  id: z.string().check(z.minLength(1), z.maxLength(MAX_ID_LENGTH)),
  messages: z
    .array(
      z.looseObject({
        id: z.string(),
        role: z.enum(['system', 'user', 'assistant']),
        parts: z.array(part),
        metadata: z.optional(z.unknown()),
      }),
    )
    .check(z.minLength(1), z.maxLength(MAX_CHAT_MESSAGES)),
  trigger: z.enum(['submit-message', 'regenerate-message']),
  messageId: z.optional(z.nullable(z.string())),
});

/** What `DefaultChatTransport` posts, read: the chat (our session), its messages, and the app's own fields. */
export interface ChatRequest {
  /** The chat's id: the session's. */
  id: string;
  messages: AISDKUIMessage[];
  trigger: 'submit-message' | 'regenerate-message';
  /** The fields the app added to the body (`useChat`'s `body`), without the transport's own. */
  body: Record<string, unknown>;
}

/**
 * The body of `POST {basePath}/chat` (`{ id, messages, trigger, messageId, ...body }`), or
 * `invalid_request` naming the first thing wrong: a missing or empty `messages`, a message
 * without a role or parts, an unknown trigger, a chat id that is no session id.
 */
export function parseChatRequest(body: unknown): ChatRequest {
  const refuse = (problem: string) => new AgentHostError('invalid_request', `Invalid chat request: ${problem}`);
  const messages = (body as { messages?: unknown } | null)?.messages;
  if (Array.isArray(messages) && messages.length > MAX_CHAT_MESSAGES) {
    throw refuse(`messages: at most ${MAX_CHAT_MESSAGES} entries`);
  }
  const result = chatRequestSchema.safeParse(body);
  if (!result.success) {
    const issue = result.error.issues[0];
    if (issue?.code === 'too_small' && issue.path.join('.') === 'messages') {
      throw refuse('messages: send at least one message');
    }
    throw refuse(describeIssue(result.error.issues, body));
  }
  const { id, messages: parsed, trigger, messageId: _messageId, ...rest } = result.data;
  if (!isSessionId(id)) throw refuse('id: not a valid chat id (1 to 256 characters, no "/" or control character)');
  return { id, messages: parsed as AISDKUIMessage[], trigger, body: rest };
}

/** The text of a user message: its text parts, joined by blank lines. */
export function promptOf(message: AISDKUIMessage): string {
  const texts: string[] = [];
  for (const messagePart of message.parts) {
    if (messagePart.type === 'text' && typeof messagePart.text === 'string') texts.push(messagePart.text);
  }
  return texts.join('\n\n');
}
