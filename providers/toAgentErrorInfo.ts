import type { AgentErrorInfo } from '../protocol/eventSchemas';

/**
 * The `{ message, code }` an error becomes in a `*.failed` event: its own `code` when it has one, else its name.
 *
 * @example
 * events.emit('run.failed', { error: toAgentErrorInfo(error) }); // { message: 'timeout', code: 'network_error' }
 */
export function toAgentErrorInfo(error: unknown, retryable?: boolean): AgentErrorInfo {
  const info: AgentErrorInfo = { message: error instanceof Error ? error.message : String(error) };
  const code = typeof error === 'object' && error !== null ? (error as { code?: unknown }).code : undefined;
  if (typeof code === 'string' && code !== '') info.code = code;
  else if (error instanceof Error && error.name !== 'Error') info.code = error.name;
  if (retryable !== undefined) info.retryable = retryable;
  return info;
}
