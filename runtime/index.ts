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
export { xChatRuntimeMachine } from './xChatRuntimeMachine';
