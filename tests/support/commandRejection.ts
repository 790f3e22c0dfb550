import { AgentCommandError } from '../../providers/AgentCommandError';

/** The \`AgentCommandError\` a promise rejects with; another error is rethrown, and resolving fails the test. */
export async function commandRejection(promise: Promise<unknown>): Promise<AgentCommandError> {
  try {
    await promise;
  } catch (error) {
    if (AgentCommandError.isInstance(error)) return error;
    throw error;
  }
  throw new Error('expected a rejection');
}
