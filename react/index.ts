export * from '../runtime/index';
export type { XChatObserver, XChatSource, XChatSourceOptions, XChatView } from './createXChatSource';
export { createXChatSource } from './createXChatSource';
export type { XChatMessageParser, XChatParsedMessage } from './parseXChatMessages';
export type { XChatError, XChatErrorSource } from './toXChatError';
export { toXChatError } from './toXChatError';
export type { UseXChatOptions, UseXChatResult } from './useXChat';
export { useXChat } from './useXChat';
export {
  selectXChatMessage,
  useXChatApproval,
  useXChatMessage,
  useXChatSelector,
  useXChatToolCall,
} from './useXChatSelector';
export type { XChatConversations } from './xChatConversations';
export { createXChatConversations } from './xChatConversations';
export type {
  XChatDefaultMessage,
  XChatDefaultMessages,
  XChatMessageLayer,
  XChatMessagePatch,
  XChatMessagesUpdate,
} from './xChatMessageLayer';
export { createXChatMessageLayer } from './xChatMessageLayer';
