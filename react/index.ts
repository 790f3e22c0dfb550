export * from '../runtime/index';
export type { XChatMessageParser, XChatParsedMessage } from './parseXChatMessages';
export type { UseXChatOptions, UseXChatResult } from './useXChat';
export { useXChat } from './useXChat';
export type { XChatConversations } from './xChatConversations';
export { createXChatConversations } from './xChatConversations';
