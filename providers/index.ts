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
/** What `defineAgentProvider` hands each run's context (`events`), and how `events.close` ends a run. */
export type { AgentRunClosing } from './AgentRunTracker';
export type { AgentModelInput, AgentModelRequest, AgentModelTool } from './agent/agentModelInput';
export { anthropicModelInput, openAIModelInput } from './agent/agentModelInput';
/** The chunks and context in `createAgent`'s provider type, and the agent's meta on events (`meta.agentMachines.step`). */
export type { AgentEventDraft, AgentLoopChunk, AgentStepMeta } from './agent/agentStepEvents';
export type { AgentTurn } from './agent/agentTurn';
export type { AgentContext, AgentInput, AgentOptions, AgentRequest } from './agent/createAgent';
export { createAgent } from './agent/createAgent';
export type { AgentJsonSchema, JsonSchemaIssue } from './agent/createJsonSchemaValidator';
export type {
  AgentTool,
  AgentToolApprovalOptions,
  AgentToolDefinition,
  AgentToolExecuteOptions,
  AgentToolInputResult,
  AgentToolInputSchema,
  InferAgentToolInput,
} from './agent/defineAgentTool';
export { defineAgentTool } from './agent/defineAgentTool';
export type { AgentRunOutput, AgentStopReason } from './agent/runAgentTurn';
export type { AgentRunEmitter } from './createAgentRunEmitter';
export type { AgentProviderDefinition, AgentProviderRunContext } from './defineAgentProvider';
export { defineAgentProvider } from './defineAgentProvider';
export type { AgentEventTypeGroup } from './eventTypeGroups';
export { AGENT_EVENT_TYPE_GROUPS, eventTypesOf } from './eventTypeGroups';
export type {
  AgentProviderActorCommand,
  AgentProviderActorContext,
  AgentProviderActorEmitted,
  AgentProviderActorInput,
  AgentProviderActorLogic,
  AgentProviderActorOptions,
  AgentProviderActorOutput,
  AgentProviderActorSnapshot,
} from './fromAgentProvider';
export { fromAgentProvider } from './fromAgentProvider';
export type {
  LocalAgentContext,
  LocalAgentInput,
  LocalAgentProviderOptions,
  LocalAgentRequest,
  LocalAgentRun,
  LocalAgentRuntime,
} from './local/createLocalAgentProvider';
export { createLocalAgentProvider } from './local/createLocalAgentProvider';
/** The commands a local run is sent (`run.commands`), as a runtime of your own takes them; the provider makes the inbox. */
export type { LocalAgentCommandDelivery, LocalAgentCommandInbox } from './local/LocalAgentCommandInbox';
export type { LocalAgentChunk, LocalAgentScript, LocalAgentStep, LocalAgentWaitFor } from './local/localAgentChunks';
export type { LocalAgentToolResult, LocalAgentTurn } from './local/localAgentTurn';
export { readLocalAgentTurn } from './local/localAgentTurn';
export { LocalAgentRuntimeError } from './local/runLocalAgentScript';
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
