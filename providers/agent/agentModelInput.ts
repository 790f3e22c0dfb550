import type { AgentJsonSchema } from './createJsonSchemaValidator';
import type { AgentTool } from './defineAgentTool';

/** A tool as the model is told of it. */
export interface AgentModelTool {
  name: string;
  description: string;
  /** The JSON Schema of its arguments (`type: 'object'`). */
  inputSchema: AgentJsonSchema;
}

/** What every model step sends besides the conversation: the instructions and the tools. */
export interface AgentModelRequest {
  system?: string;
  tools: AgentModelTool[];
}

/** The model's input for a step, in its provider's input format. */
export type AgentModelInput = (request: AgentModelRequest) => unknown;

/** The tools as `AgentModelTool`s. */
export function toAgentModelTools(tools: Iterable<AgentTool>): AgentModelTool[] {
  return [...tools].map(({ name, description, inputJsonSchema }) => ({
    name,
    description,
    inputSchema: inputJsonSchema,
  }));
}

/**
 * The input of the OpenAI-compatible provider for a step: `system`, and the tools as Chat
 * Completions `function` tools.
 *
 * @example
 * openAIModelInput({ system: 'Be brief.', tools: [{ name: 'get_weather', description: '...', inputSchema }] });
 * // { system: 'Be brief.', tools: [{ type: 'function', function: { name: 'get_weather', description: '...', parameters: inputSchema } }] }
 */
export const openAIModelInput: AgentModelInput = ({ system, tools }) => {
  const input: Record<string, unknown> = {};
  if (system !== undefined) input.system = system;
  if (tools.length > 0) {
    input.tools = tools.map(({ name, description, inputSchema }) => ({
      type: 'function',
      function: { name, description, parameters: inputSchema },
    }));
  }
  return input;
};

/**
 * The input of the Anthropic provider for a step: `system`, and the tools as Messages API
 * tools (`input_schema`).
 *
 * @example
 * anthropicModelInput({ tools: [{ name: 'get_weather', description: '...', inputSchema }] });
 * // { tools: [{ name: 'get_weather', description: '...', input_schema: inputSchema }] }
 */
export const anthropicModelInput: AgentModelInput = ({ system, tools }) => {
  const input: Record<string, unknown> = {};
  if (system !== undefined) input.system = system;
  if (tools.length > 0) {
    input.tools = tools.map(({ name, description, inputSchema }) => ({ name, description, input_schema: inputSchema }));
  }
  return input;
};
