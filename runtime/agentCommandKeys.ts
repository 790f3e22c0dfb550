import { commandEntityId } from '../machines/store/storeCommands';
import type { AgentCommand, AgentCommandType } from '../protocol/commandSchemas';
import { getAgentEntityKey } from '../protocol/getAgentEntityKey';

/** What a user acts on: one command type on one entity of one run (no entity for `run.cancel`). */
export interface AgentActionTarget {
  runId: string;
  type: AgentCommandType;
  /** The approval or tool call id; omitted for `run.cancel`. */
  entityId?: string;
}

/**
 * The key of one action on one target: `latestCommandByAction[key]` is the id of the
 * latest command for it, whose state is `commandStates[id]`.
 *
 * @example
 * const key = getAgentActionKey({ runId, type: 'approval.resolve', entityId: approvalId });
 * const state = snapshot.commandStates[snapshot.latestCommandByAction[key] ?? ''];
 * state?.status; // 'submitting' | 'succeeded' | 'failed'
 */
export function getAgentActionKey(target: AgentActionTarget): string {
  return `${target.type}|${getAgentEntityKey(target.runId, target.entityId ?? '')}`;
}

/** The action key of a command: the `key` of its command state. */
export function getAgentCommandKey(command: AgentCommand): string {
  return getAgentActionKey({ runId: command.runId, type: command.type, entityId: commandEntityId(command) });
}
