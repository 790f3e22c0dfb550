export * from '../runtime/index';
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
