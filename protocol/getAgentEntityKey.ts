/**
 * The key of an entity in AgentState: entity ids are scoped by run, so two runs may
 * reuse an id. The run id is URI-encoded, so no pair of ids can produce the same key.
 *
 * @example
 * state.toolCalls[getAgentEntityKey('run-1', 'call-1')] // 'run-1:call-1'
 */
export function getAgentEntityKey(runId: string, entityId: string): string {
  return `${encodeURIComponent(runId)}:${entityId}`;
}
