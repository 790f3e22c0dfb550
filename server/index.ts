export type {
  AgentCommandOutcome,
  AgentCommandRecord,
  AgentEventLog,
  AgentEventLogEntry,
  AgentEventLogFollowOptions,
  AgentEventLogReadOptions,
  AgentHostSignal,
  AgentSessionSnapshot,
} from './AgentEventLog';
export { AgentEventLogError, type AgentEventLogErrorCode } from './AgentEventLogError';
export { AGENT_HOST_ERROR_STATUS, AgentHostError, type AgentHostErrorCode } from './AgentHostError';
export {
  type AgentHost,
  type AgentHostAccess,
  type AgentHostOptions,
  type AgentHostProvider,
  type AgentHostState,
  createAgentHost,
} from './createAgentHost';
export { createMemoryEventLog, type MemoryEventLog, type MemoryEventLogOptions } from './createMemoryEventLog';
export { type AgentHostRunRequest, agentHostRunRequestSchema } from './hostRequests';
export { type AgentFetchHandler, toNodeHandler } from './node';
export type {
  AgentHostChatInputRequest,
  AgentHostUIMessageStreamOptions,
} from './uiMessageStream/UIMessageStreamEndpoint';
