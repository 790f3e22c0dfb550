import type { AgentToolCallState } from '../../machines/agentState';
import type { AgentErrorInfo } from '../../protocol/eventSchemas';
import type { AgentTool } from './defineAgentTool';

/**
 * A tool call's input, checked against its tool's schema: the call's arguments (none is `{}`),
 * or `data` when given (a `modified` approval's input). Arguments that are not JSON, or that
 * do not match, give the error the call fails with (`invalid_arguments`, the schema's issues
 * in `data.issues`), which the model reads as the call's result.
 *
 * @example
 * parseToolCallInput(weather, toolCall);
 * // { success: false, error: { message: 'Invalid arguments for get_weather: city: ...', code: 'invalid_arguments', data: { issues } } }
 */
export function parseToolCallInput(
  tool: AgentTool,
  call: Pick<AgentToolCallState, 'arguments' | 'parsedArguments' | 'argumentsError'>,
  data?: unknown,
): { success: true; input: unknown } | { success: false; error: AgentErrorInfo } {
  let value: unknown;
  if (data !== undefined) value = data;
  else if (call.arguments.trim() === '') value = {};
  else if (call.argumentsError !== undefined) {
    const message = `The arguments of ${tool.name} are not valid JSON: ${call.argumentsError}`;
    return { success: false, error: { message, code: 'invalid_arguments' } };
  } else value = call.parsedArguments;
  const parsed = tool.parseInput(value);
  if (parsed.success) return { success: true, input: parsed.input };
  return {
    success: false,
    error: { message: parsed.message, code: 'invalid_arguments', data: { issues: parsed.issues } },
  };
}
