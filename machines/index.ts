export type {
  AgentActivityState,
  AgentApprovalState,
  AgentApprovalStatus,
  AgentArtifactState,
  AgentArtifactStatus,
  AgentEntityBase,
  AgentEntityKind,
  AgentEntityRef,
  AgentEntityState,
  AgentEntityStateMap,
  AgentExtensionRecord,
  AgentMessageState,
  AgentMessageStatus,
  AgentReasoningState,
  AgentReasoningStatus,
  AgentRunState,
  AgentRunStatus,
  AgentSessionState,
  AgentState,
  AgentTaskState,
  AgentTaskStatus,
  AgentToolCallState,
  AgentToolCallStatus,
} from './agentState';
export { createEmptyAgentState } from './agentState';
export { agentStateSchema, parseAgentState } from './agentStateSchema';
export type { StatePatchLimits } from './applyStatePatch';
export { DEFAULT_STATE_PATCH_LIMITS } from './applyStatePatch';
export type { ApprovalMachineEvent } from './approvalMachine';
export { approvalMachine } from './approvalMachine';
export type { ArtifactMachineEvent } from './artifactMachine';
export { artifactMachine } from './artifactMachine';
export type { AgentInspect, AgentProtocolMode, AgentStore, AgentStoreOptions } from './createAgentStore';
export { createAgentStore } from './createAgentStore';
export type { ToolCallArgumentsPreview } from './createToolCallArgumentsPreview';
export { createToolCallArgumentsPreview } from './createToolCallArgumentsPreview';
export { RUN_TERMINATED_REASON } from './entityUpdates';
export type { MessageMachineEvent } from './messageMachine';
export { messageMachine } from './messageMachine';
export type { ReasoningMachineEvent } from './reasoningMachine';
export { reasoningMachine } from './reasoningMachine';
export { replayAgentEvents } from './replayAgentEvents';
export type { AgentRunContext, AgentRunInput, AgentRunIssueEmitted, RunMachineEvent } from './runMachine';
export { agentRunMachine, entityMachines, readAgentRunEntities } from './runMachine';
export type { SanitizeInspectionOptions } from './sanitizeInspection';
export { sanitizeInspection, summarizeInspectedValue } from './sanitizeInspection';
export type {
  AgentMessageInfo,
  AgentMessageInfoStatus,
  AgentPendingInput,
  AgentTimelineItem,
  AgentVisibleReasoning,
} from './selectors';
export {
  isApprovalExpired,
  selectAgentTimeline,
  selectApproval,
  selectMessages,
  selectPendingInput,
  selectRun,
  selectRunningRuns,
  selectToolCall,
  selectToolCallAttempts,
  selectVisibleReasoning,
} from './selectors';
export type { StoreResetEvent, StoreSpawnRunsEvent } from './sessionMachine';
export { sessionMachine } from './sessionMachine';
export type { TaskMachineEvent } from './taskMachine';
export { taskMachine } from './taskMachine';
export type { ToolCallMachineEvent } from './toolCallMachine';
export { toolCallMachine } from './toolCallMachine';
