export * from '../runtime/index';
export type { XChatObserver, XChatSource, XChatSourceOptions, XChatView } from './createXChatSource';
export { createXChatSource } from './createXChatSource';
export type { XChatMessageParser, XChatParsedMessage } from './parseXChatMessages';
export type { XChatError, XChatErrorSource } from './toXChatError';
export { toXChatError } from './toXChatError';
export type { UseXChatOptions, UseXChatResult } from './useXChat';
export { useXChat } from './useXChat';
export type { UseXChatMessageGroupsOptions } from './useXChatMessageGroups';
export { useXChatMessageGroups } from './useXChatMessageGroups';
export {
  selectXChatMessage,
  useXChatApproval,
  useXChatMessage,
  useXChatSelector,
  useXChatToolCall,
} from './useXChatSelector';
export type { XChatMessageListProps, XChatMessageProps } from './XChatMessageList';
export { XChatMessageList } from './XChatMessageList';
export type { XChatConversations } from './xChatConversations';
export { createXChatConversations } from './xChatConversations';
export type { XChatMessageGroup, XChatMessageGroups } from './xChatMessageGroups';
export { createXChatMessageGroups } from './xChatMessageGroups';
export type {
  XChatDefaultMessage,
  XChatDefaultMessages,
  XChatDefaultMessagesLoader,
  XChatMessageLayer,
  XChatMessagePatch,
  XChatMessagesUpdate,
} from './xChatMessageLayer';
export { createXChatMessageLayer } from './xChatMessageLayer';
