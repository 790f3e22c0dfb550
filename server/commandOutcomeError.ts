import type { AgentErrorInfo } from '../protocol/eventSchemas';
import { AGENT_HOST_ERROR_STATUS, AgentHostError, type AgentHostErrorCode } from './AgentHostError';

/** The codes of a runtime's command refusals, as the host answers them. */
const COMMAND_ERROR_CODES: Readonly<Record<string, AgentHostErrorCode>> = {
  invalid_command: 'invalid_command',
  unsupported_capability: 'unsupported_capability',
  protocol_error: 'provider_error',
  interrupted: 'timeout',
};

/** A failed command's error as the host error its HTTP answer carries: a host code as it is, a runtime's mapped. */
export function commandOutcomeError({ code = 'provider_error', message }: AgentErrorInfo): AgentHostError {
  const hostCode: AgentHostErrorCode =
    code in AGENT_HOST_ERROR_STATUS ? (code as AgentHostErrorCode) : (COMMAND_ERROR_CODES[code] ?? 'provider_error');
  return new AgentHostError(hostCode, message);
}
