export type { XChatRuntime, XChatRuntimeOptions, XChatSnapshot } from './createXChatRuntime';
export { createXChatRuntime } from './createXChatRuntime';
export type { XChatMessageParser, XChatParsedMessage } from './parseXChatMessages';
export type { UseXChatOptions, UseXChatResult } from './useXChat';
export { useXChat } from './useXChat';
export type { XChatConversations } from './xChatConversations';
export { createXChatConversations } from './xChatConversations';
