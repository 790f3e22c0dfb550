import type { AnyActorRef } from 'xstate';
import type { AgentCommand } from '../../protocol/commandSchemas';
import { getAgentEntityKey } from '../../protocol/getAgentEntityKey';
import type { RunHandle } from './handles';

/** The actor a command addresses: the run for `run.cancel`, else the approval or tool call, while live. */
export function commandTarget(
  runs: { get(runId: string): RunHandle | undefined },
  command: AgentCommand,
): { run: RunHandle; ref: AnyActorRef } | undefined {
  const run = runs.get(command.runId);
  if (run?.ref === undefined || run.sessionId !== command.sessionId) return undefined;
  if (command.type === 'run.cancel') return { run, ref: run.ref };
  const handle =
    command.type === 'approval.resolve'
      ? run.entities.approval.get(command.payload.approvalId)
      : run.entities.toolCall.get(command.payload.toolCallId);
  return handle?.ref ? { run, ref: handle.ref } : undefined;
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

/** Sends a command to its machine if the machine accepts it now; says whether it did. */
export function submitCommand(
  runs: { get(runId: string): RunHandle | undefined },
  command: AgentCommand,
  now: number,
): boolean {
  const target = commandTarget(runs, command);
  if (target === undefined) return false;
  const event = { type: command.type, command, now };
  const before = target.ref.getSnapshot();
  if (!before.can(event)) return false;
  target.ref.send(event);
  return target.ref.getSnapshot() !== before;
}
