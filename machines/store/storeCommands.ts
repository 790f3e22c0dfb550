import type { AnyActorRef } from 'xstate';
import type { AgentCommand } from '../../protocol/commandSchemas';
import { getAgentEntityKey } from '../../protocol/getAgentEntityKey';
import { commandActorId } from '../runMachine';
import type { RunHandle, RunRef } from './handles';

/**
 * The run actor a command goes to, while the run is live: the run takes `run.cancel` itself
 * and hands the entity commands to the approval or tool call they name, whose guards answer.
 */
export function commandTarget(
  runs: { get(runId: string): RunHandle | undefined },
  command: AgentCommand,
): RunRef | undefined {
  return runs.get(command.runId)?.ref;
}

/** The entity id a command addresses: the approval or tool call, '' for the run itself. */
export function commandEntityId(command: AgentCommand): string {
  switch (command.type) {
    case 'approval.resolve':
      return command.payload.approvalId;
    case 'tool.retry':
    case 'tool.submit_result':
      return command.payload.toolCallId;
    case 'run.cancel':
      return '';
  }
}

/** One key per command target, so one submission per target is tracked. */
export function commandTargetKey(command: AgentCommand): string {
  return `${command.type}|${getAgentEntityKey(command.runId, commandEntityId(command))}`;
}

/** Sends a command to its run if the machines accept it now; says whether they took it. */
export function submitCommand(
  runs: { get(runId: string): RunHandle | undefined },
  command: AgentCommand,
  now: number,
): boolean {
  const run = commandTarget(runs, command);
  if (run === undefined) return false;
  const event = { type: command.type, command, now };
  const before = run.getSnapshot();
  if (!before.can(event)) return false;
  // The actor that changes: the entity the run hands the command to, or the run itself.
  const actorId = commandActorId(command);
  const target: AnyActorRef = actorId === undefined ? run : (before.context.live[actorId] as AnyActorRef);
  const targetBefore = target.getSnapshot();
  run.send(event);
  return target.getSnapshot() !== targetBefore;
}
