export type { AgentHostHeaders } from './agentHostClient';
export type {
  AgentEventProviderContext,
  AgentEventProviderOptions,
  AgentHostRunInput,
} from './createAgentEventProvider';
export { createAgentEventProvider } from './createAgentEventProvider';
export type { AgentHostRunRequest } from './createAgentHostTransport';
