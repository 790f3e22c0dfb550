export type { AgentHostHeaders } from './agentHostClient';
export type { AgentHostToolResult } from './clientToolResults';
export type {
  AgentEventProviderContext,
  AgentEventProviderOptions,
  AgentHostRunInput,
} from './createAgentEventProvider';
export { createAgentEventProvider } from './createAgentEventProvider';
export type { AgentHostContinuation, AgentHostRunRequest } from './createAgentHostTransport';
export type { AgentSessionFollowChange, FollowAgentSessionOptions } from './followAgentSession';
export { followAgentSession } from './followAgentSession';
