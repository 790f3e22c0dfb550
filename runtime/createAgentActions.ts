import type { AgentCommandPayloadMap } from '../protocol/commandSchemas';
import { AgentError } from '../protocol/errors';
import { AgentCommandError } from '../providers/AgentCommandError';
import type { AgentLoop } from './agentLoop';
import type { CommandRunner } from './createCommandRunner';
import type { RuntimeStatus } from './runtimeCore';
import type { AgentActions } from './xChatRuntimeTypes';

/** The user's intents as commands through the runner; a destroyed conversation refuses them all. */
export function createAgentActions(
  runner: CommandRunner,
  loop: AgentLoop,
  status: RuntimeStatus,
  destroyedMessage: string,
): AgentActions {
  const refused = () => Promise.reject(new AgentCommandError('runtime_destroyed', destroyedMessage));
  return {
    resolveApproval: ({ runId, approvalId, decision, data, expectedVersion }) => {
      if (status.destroyed) return refused();
      const payload: AgentCommandPayloadMap['approval.resolve'] = { approvalId, decision };
      if (data !== undefined) payload.data = data;
      if (expectedVersion !== undefined) payload.expectedVersion = expectedVersion;
      return runner.act('approval.resolve', runId, payload);
    },
    retryTool: ({ runId, toolCallId }) =>
      status.destroyed ? refused() : runner.act('tool.retry', runId, { toolCallId }),
    cancelRun: ({ runId, reason }) =>
      status.destroyed ? refused() : runner.act('run.cancel', runId, reason === undefined ? {} : { reason }),
    submitToolResult: ({ runId, toolCallId, result, error }) => {
      if (status.destroyed) return refused();
      const payload: AgentCommandPayloadMap['tool.submit_result'] = { toolCallId };
      if (result !== undefined) payload.result = result;
      if (error !== undefined) payload.error = error;
      return runner.act('tool.submit_result', runId, payload);
    },
    continueRun: ({ runId }) =>
      status.destroyed
        ? Promise.reject(new AgentError('runtime_destroyed', destroyedMessage))
        : loop.continueRun(runId),
  };
}
