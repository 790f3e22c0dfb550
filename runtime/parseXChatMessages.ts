import type { AgentMessageState } from '../machines/agentState';
import type { AgentMessageInfo, AgentMessageInfoStatus } from '../machines/selectors';

/** A parsed message with the id and status of the message it came from. */
export interface XChatParsedMessage<Parsed> {
  id: string;
  message: Parsed;
  status: AgentMessageInfoStatus;
}

export type XChatMessageParser<Parsed> = (message: AgentMessageState) => Parsed | Parsed[];

/**
 * Runs each message through `parser`, keeping the results of messages already parsed
 * in `cache`: a streamed delta parses only the message it changed. A message parsed into
 * several items gets ids `${id}:${index}`.
 */
export function parseXChatMessages<Parsed>(
  messages: readonly AgentMessageInfo[],
  parser: XChatMessageParser<Parsed>,
  cache: WeakMap<AgentMessageInfo, XChatParsedMessage<Parsed>[]>,
): XChatParsedMessage<Parsed>[] {
  const parsedMessages: XChatParsedMessage<Parsed>[] = [];
  for (const info of messages) {
    let parsed = cache.get(info);
    if (parsed === undefined) {
      const result = parser(info.message);
      parsed = Array.isArray(result)
        ? result.map((message, index) => ({ id: `${info.id}:${index}`, message, status: info.status }))
        : [{ id: info.id, message: result, status: info.status }];
      cache.set(info, parsed);
    }
    for (const item of parsed) parsedMessages.push(item);
  }
  return parsedMessages;
}
