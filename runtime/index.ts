export { AgentCommandError, type AgentCommandErrorCode } from '../providers/AgentCommandError';
export type { AgentActionTarget } from './agentCommandKeys';
export { getAgentActionKey, getAgentCommandKey } from './agentCommandKeys';
export type { AgentCommandState, AgentCommandStatus } from './commandBook';
export { commandLaneMachine } from './commandLaneMachine';
export type { AgentConnectionState } from './connectionMachine';
export { connectionMachine } from './connectionMachine';
export type {
  AgentActionResult,
  AgentActions,
  XChatRequestOptions,
  XChatRuntime,
  XChatRuntimeOptions,
  XChatSnapshot,
} from './createXChatRuntime';
export { createXChatRuntime } from './createXChatRuntime';
export type { XChatObserver, XChatSource, XChatSourceOptions, XChatView } from './createXChatSource';
export { createXChatSource } from './createXChatSource';
export type { XChatMessageParser, XChatParsedMessage } from './parseXChatMessages';
export type { XChatError, XChatErrorSource } from './toXChatError';
export { toXChatError } from './toXChatError';
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
export { xChatRuntimeMachine } from './xChatRuntimeMachine';
