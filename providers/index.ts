/** Re-exported for code that imports the transport contract from `agent-machines/providers`. */
export type { AgentTransport, AgentTransportKind } from '../transports/AgentTransport';
export type { AgentCommandErrorCode } from './AgentCommandError';
export { AgentCommandError } from './AgentCommandError';
export type {
  AgentApprovalAnswer,
  AgentCommandOptions,
  AgentProvider,
  AgentProviderCapabilities,
  AgentProviderContextOptions,
  AgentRunContinuation,
  AnyAgentProvider,
} from './AgentProvider';
export { isAgentProvider } from './AgentProvider';
export type { AgentProviderErrorCode } from './AgentProviderError';
export { AgentProviderError } from './AgentProviderError';
export type { AgentRunClosing } from './AgentRunTracker';
export { AgentRunTracker } from './AgentRunTracker';
export type { AgentRunEmitter } from './createAgentRunEmitter';
export { createAgentRunEmitter } from './createAgentRunEmitter';
export type { AgentProviderDefinition, AgentProviderRunContext } from './defineAgentProvider';
export { defineAgentProvider } from './defineAgentProvider';
export type { AgentEventTypeGroup } from './eventTypeGroups';
export { AGENT_EVENT_TYPE_GROUPS, eventTypesOf } from './eventTypeGroups';
export type {
  LocalAgentContext,
  LocalAgentInput,
  LocalAgentProviderOptions,
  LocalAgentRequest,
  LocalAgentRun,
  LocalAgentRuntime,
} from './local/createLocalAgentProvider';
export { createLocalAgentProvider } from './local/createLocalAgentProvider';
export type { LocalAgentCommandDelivery } from './local/LocalAgentCommandInbox';
export { LocalAgentCommandInbox } from './local/LocalAgentCommandInbox';
export type { LocalAgentChunk, LocalAgentScript, LocalAgentStep, LocalAgentWaitFor } from './local/localAgentChunks';
export type { LocalAgentToolResult, LocalAgentTurn } from './local/localAgentTurn';
export { readLocalAgentTurn } from './local/localAgentTurn';
export type { LocalAgentScriptOptions } from './local/runLocalAgentScript';
export { LocalAgentRuntimeError, runLocalAgentScript } from './local/runLocalAgentScript';
export type { AgentConnectionChange, AgentReconnectOptions } from './reconnect';
export type { RunAgentCommandOptions } from './runAgentCommand';
export { runAgentCommand } from './runAgentCommand';
export type { AgentRunResult, RunAgentProviderOptions } from './runAgentProvider';
export { runAgentProvider } from './runAgentProvider';
export type {
  AgentProviderCommandRecord,
  AgentProviderCommandValidationCode,
  AgentProviderCommandValidationIssue,
} from './testing/validateAgentProviderCommands';
export { validateAgentProviderCommands } from './testing/validateAgentProviderCommands';
export type {
  AgentProviderValidationCode,
  AgentProviderValidationIssue,
} from './testing/validateAgentProviderEvents';
export { validateAgentProviderEvents } from './testing/validateAgentProviderEvents';
export { toAgentErrorInfo } from './toAgentErrorInfo';
