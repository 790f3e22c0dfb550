export type { AgentProviderContractOptions, AgentProviderFixture } from './describeAgentProviderContract';
export { describeAgentProviderContract } from './describeAgentProviderContract';
export type { AgentProviderFixtureRun } from './runAgentProviderFixture';
export {
  afterFirstChunk,
  failingAfterFirstChunk,
  findActiveEntities,
  runAgentProviderFixture,
  withTransport,
} from './runAgentProviderFixture';
export type {
  AgentProviderCommandRecord,
  AgentProviderCommandValidationCode,
  AgentProviderCommandValidationIssue,
} from './validateAgentProviderCommands';
export { validateAgentProviderCommands } from './validateAgentProviderCommands';
export type { AgentProviderValidationCode, AgentProviderValidationIssue } from './validateAgentProviderEvents';
export { validateAgentProviderEvents } from './validateAgentProviderEvents';
