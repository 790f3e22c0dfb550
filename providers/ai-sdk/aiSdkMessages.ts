/**
 * One part of an AI SDK `UIMessage`, as `DefaultChatTransport` posts it: `text`,
 * `reasoning`, `file`, `source-url`, `source-document`, `step-start`, `data-*`, a tool part
 * (`tool-{name}` or `dynamic-tool`, with `toolCallId`, `state`, `input`, `output`,
 * `errorText`, `approval`), and any field a newer `ai` adds. Only `type` is required, so a
 * part from any `ai` version fits; read the other fields after narrowing on `type`.
 *
 * @example
 * const part: AISDKUIMessagePart = { type: 'text', text: 'What is the weather in Oslo?' };
 */
export interface AISDKUIMessagePart {
  type: string;
  [field: string]: unknown;
}

/**
 * An AI SDK `UIMessage` as it travels in the body `DefaultChatTransport` posts
 * (`{ id, messages, trigger, messageId, ...body }`): an id, a role, its parts and optional
 * metadata. Structural, so the `ai` package is not needed to build or read one.
 *
 * @example
 * const message: AISDKUIMessage = { id: 'm1', role: 'user', parts: [{ type: 'text', text: 'Hi' }] };
 */
export interface AISDKUIMessage {
  id: string;
  role: 'system' | 'user' | 'assistant';
  parts: AISDKUIMessagePart[];
  metadata?: unknown;
}
