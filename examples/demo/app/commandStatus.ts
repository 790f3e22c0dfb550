import { type AgentActionTarget, getAgentActionKey } from '../../../runtime/agentCommandKeys';
import type { AgentCommandState } from '../../../runtime/commandBook';

/** What a button needs to know about its action: the latest command's state, if any. */
export interface DemoCommands {
  commandStates: Readonly<Record<string, AgentCommandState>>;
  latestCommandByAction: Readonly<Record<string, string>>;
}

/** The state of the latest command for one action, e.g. to show a button as loading. */
export function commandOf(commands: DemoCommands, target: AgentActionTarget): AgentCommandState | undefined {
  const commandId = commands.latestCommandByAction[getAgentActionKey(target)];
  return commandId === undefined ? undefined : commands.commandStates[commandId];
}
