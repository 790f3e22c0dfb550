/** The runner's token that an event was already checked, in `store.dispatch(event, admission)`. */
export type { AgentEventAdmission } from './admittedEvents';
export type {
  AgentCommand,
  AgentCommandEnvelope,
  AgentCommandOf,
  AgentCommandPayloadMap,
  AgentCommandType,
  UnknownAgentCommandEnvelope,
} from './commandSchemas';
export { AGENT_COMMAND_TYPES, agentCommandEnvelopeSchema, agentCommandSchema } from './commandSchemas';
export type { AgentCommandProtocolVersion, AgentEventProtocolVersion } from './constants';
export {
  AGENT_COMMAND_PROTOCOL,
  AGENT_COMMAND_PROTOCOL_VERSION,
  AGENT_EVENT_PROTOCOL,
  AGENT_EVENT_PROTOCOL_VERSION,
} from './constants';
export type {
  AgentContentPart,
  AgentExtensionPart,
  AgentFilePart,
  AgentImagePart,
  AgentMessageContent,
  AgentTextPart,
} from './contentSchemas';
export { agentContentPartSchema, agentMessageContentSchema } from './contentSchemas';
export type { AgentCommandFactory, AgentCommandFactoryOptions } from './createAgentCommandFactory';
export { createAgentCommandFactory } from './createAgentCommandFactory';
export type { AgentEventExtra, AgentEventFactory, AgentEventFactoryOptions } from './createAgentEventFactory';
export { createAgentEventFactory } from './createAgentEventFactory';
export type { AgentValidationFailure } from './errors';
export { AgentError, AgentProtocolError, AgentValidationError } from './errors';
export type {
  AgentApprovalDecision,
  AgentErrorInfo,
  AgentEvent,
  AgentEventEnvelope,
  AgentEventOf,
  AgentEventPayloadMap,
  AgentEventType,
  AgentMessageRole,
  AgentUsage,
  JsonPatchOperation,
} from './eventSchemas';
export {
  AGENT_EVENT_TYPES,
  agentErrorInfoSchema,
  agentEventSchema,
  agentUsageSchema,
  jsonPatchOperationSchema,
} from './eventSchemas';
export { getAgentEntityKey } from './getAgentEntityKey';
export type { AgentParseResult } from './parseAgentEvent';
export {
  isAgentCommand,
  isAgentCommandEnvelope,
  isAgentEvent,
  parseAgentCommand,
  parseAgentEvent,
} from './parseAgentEvent';
export type { PlainJsonFailure, PlainJsonOptions } from './plainJson';
export { checkPlainJson, DEFAULT_MAX_JSON_DEPTH } from './plainJson';
export type { AgentProtocolIssue, AgentProtocolIssueCode } from './protocolIssue';
