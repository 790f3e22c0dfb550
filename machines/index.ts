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
export { approvalMachine } from './approvalMachine';
export { artifactMachine } from './artifactMachine';
export type { AgentInspect, AgentProtocolMode, AgentStore, AgentStoreOptions } from './createAgentStore';
export { createAgentStore } from './createAgentStore';
export type { ToolCallArgumentsPreview } from './createToolCallArgumentsPreview';
export { createToolCallArgumentsPreview } from './createToolCallArgumentsPreview';
export { RUN_TERMINATED_REASON } from './entityUpdates';
export { messageMachine } from './messageMachine';
export { reasoningMachine } from './reasoningMachine';
export { replayAgentEvents } from './replayAgentEvents';
export type { AgentRunContext, AgentRunInput, AgentRunIssueEmitted } from './runMachine';
export { agentRunMachine, entityMachines, readAgentRunEntities } from './runMachine';
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
export { sessionMachine } from './sessionMachine';
export { taskMachine } from './taskMachine';
export { toolCallMachine } from './toolCallMachine';
