import type { AgentCommandOf, AgentCommandType } from '../protocol/commandSchemas';

/** A command as an entity or run machine receives it: the command and the time it is checked at. */
export interface CommandMachineEvent<Type extends AgentCommandType> {
  type: Type;
  command: AgentCommandOf<Type>;
  now: number;
}
