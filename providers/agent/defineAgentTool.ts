import { en } from 'zod/locales';
import * as z from 'zod/mini';
import { AgentValidationError } from '../../protocol/errors';
import { checkPlainJson } from '../../protocol/plainJson';
import { type AgentJsonSchema, createJsonSchemaValidator, type JsonSchemaIssue } from './createJsonSchemaValidator';

/** A tool's input schema: any zod 4 schema (classic or mini), or a JSON Schema object. */
export type AgentToolInputSchema = z.core.$ZodType | AgentJsonSchema;

/** The input a tool's `execute` gets: what its zod schema outputs; `unknown` for a JSON Schema. */
export type InferAgentToolInput<Schema> = Schema extends z.core.$ZodType ? z.output<Schema> : unknown;

/** What a tool's `execute` gets besides its input. */
export interface AgentToolExecuteOptions {
  /** Aborted when the run is cancelled or aborted, or when the tool is past its `timeoutMs`. */
  signal: AbortSignal;
  runId: string;
  toolCallId: string;
}

/** What `needsApproval` gets besides the input. */
export interface AgentToolApprovalOptions {
  runId: string;
  toolCallId: string;
}

/** What `defineAgentTool` takes. */
export interface AgentToolDefinition<Schema extends AgentToolInputSchema, Output> {
  /** The name the model calls the tool by: letters, digits, `_` and `-`, at most 64 characters. */
  name: string;
  /** What the tool does, for the model. */
  description: string;
  /** The arguments' schema; its JSON Schema is what the model is sent. */
  inputSchema: Schema;
  /**
   * Runs the tool where the agent runs, with the validated input. Missing: the tool runs
   * elsewhere (the client), and the run ends waiting for its result.
   */
  execute?: (input: InferAgentToolInput<Schema>, options: AgentToolExecuteOptions) => Output | PromiseLike<Output>;
  /**
   * Whether a call needs the user's approval before it runs: always, never (default), or as
   * the input says. For tools with `execute`; a client tool asks its user itself.
   */
  needsApproval?:
    | boolean
    | ((input: InferAgentToolInput<Schema>, options: AgentToolApprovalOptions) => boolean | PromiseLike<boolean>);
  /** How long `execute` may take before the call fails with code `timeout` and its signal is aborted. */
  timeoutMs?: number;
}

/** Whether arguments matched a tool's schema: the input `execute` gets, or why they did not. */
export type AgentToolInputResult<Input> =
  | { success: true; input: Input }
  | { success: false; message: string; issues: JsonSchemaIssue[] };

/**
 * A tool, as `createAgent` takes it and a UI can look it up by name. Its methods take their
 * parameters bivariantly, so tools of different inputs go in one list.
 */
export interface AgentTool<Input = unknown, Output = unknown> {
  readonly name: string;
  readonly description: string;
  readonly inputSchema: AgentToolInputSchema;
  /** The JSON Schema of the arguments, as the model is sent it (`type: 'object'`). */
  readonly inputJsonSchema: AgentJsonSchema;
  readonly timeoutMs?: number;
  /** Missing: a client tool. */
  execute?(input: Input, options: AgentToolExecuteOptions): Output | PromiseLike<Output>;
  /** Whether this call needs approval; missing when the tool never does. */
  needsApproval?(input: Input, options: AgentToolApprovalOptions): boolean | PromiseLike<boolean>;
  /** Checks arguments against the schema: a zod schema parses them (defaults and transforms apply), a JSON Schema validates them. */
  parseInput(value: unknown): AgentToolInputResult<Input>;
}

const TOOL_NAME = /^[a-zA-Z0-9_-]{1,64}$/;

function isZodSchema(schema: AgentToolInputSchema): schema is z.core.$ZodType {
  return typeof schema === 'object' && schema !== null && '_zod' in schema;
}

function invalid(name: string, path: string, reason: string, message: string): AgentValidationError {
  return new AgentValidationError(`agent tool "${name}"`, { path, reason, message });
}

/** The JSON Schema the model is sent: zod's export of the input side, without `$schema`, which the APIs do not need. */
function toInputJsonSchema(name: string, schema: AgentToolInputSchema): AgentJsonSchema {
  let json: Record<string, unknown>;
  if (isZodSchema(schema)) {
    try {
      json = z.toJSONSchema(schema, { io: 'input' }) as Record<string, unknown>;
    } catch (error) {
      const reason = error instanceof Error ? error.message : String(error);
      throw invalid(
        name,
        'inputSchema',
        'expected a schema JSON Schema can express',
        `its zod schema has no JSON Schema: ${reason}`,
      );
    }
    const { $schema: _dialect, ...rest } = json;
    json = rest;
  } else {
    const failure = checkPlainJson(schema);
    if (typeof schema !== 'object' || schema === null || Array.isArray(schema) || failure !== undefined) {
      const where = failure === undefined ? '' : ` (${failure.path || 'the value'} ${failure.reason})`;
      throw invalid(
        name,
        'inputSchema',
        'expected a zod schema or a JSON Schema object',
        `inputSchema is neither a zod schema nor a JSON Schema object${where}`,
      );
    }
    json = schema as Record<string, unknown>;
  }
  if (json.type !== 'object') {
    throw invalid(
      name,
      'inputSchema',
      'expected an object schema',
      `the model APIs take an object of arguments, and inputSchema describes ${JSON.stringify(json.type ?? 'any value')}`,
    );
  }
  return json;
}

let englishErrors: z.core.$ZodErrorMap | undefined;

/**
 * How arguments are parsed: with zod's English messages, which the model reads, unless the
 * application configured zod's messages itself (`z.config`). `zod/mini` loads no locale, and
 * its messages alone ("Invalid input") tell the model nothing.
 */
function parseContext(): { error: z.core.$ZodErrorMap } | undefined {
  const config = z.config();
  if (config.customError !== undefined || config.localeError !== undefined) return undefined;
  englishErrors ??= en().localeError;
  return { error: englishErrors };
}

function zodIssues(error: z.core.$ZodError): JsonSchemaIssue[] {
  return error.issues.map((issue) => ({ path: issue.path.map(String).join('.'), message: issue.message }));
}

type InputCheck = (value: unknown) => { success: true; input: unknown } | { success: false; issues: JsonSchemaIssue[] };

/** How a tool checks its arguments, made once per tool: zod parses them, a JSON Schema validates them. */
function toInputCheck(name: string, schema: AgentToolInputSchema): InputCheck {
  if (isZodSchema(schema)) {
    return (value) => {
      const parsed = z.safeParse(schema, value, parseContext());
      return parsed.success
        ? { success: true, input: parsed.data }
        : { success: false, issues: zodIssues(parsed.error) };
    };
  }
  let validate: (value: unknown) => JsonSchemaIssue[];
  try {
    validate = createJsonSchemaValidator(schema);
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw invalid(
      name,
      'inputSchema',
      'expected a JSON Schema the validator can read',
      `its JSON Schema cannot be read: ${reason}`,
    );
  }
  return (value) => {
    const issues = validate(value);
    return issues.length === 0 ? { success: true, input: value } : { success: false, issues };
  };
}

/** The issues as one sentence the model reads: `city: <why>; days: <why>`. */
function describeIssues(issues: JsonSchemaIssue[]): string {
  return issues.map((issue) => (issue.path === '' ? issue.message : `${issue.path}: ${issue.message}`)).join('; ');
}

/**
 * Defines a tool for `createAgent`. The arguments the model sends are checked against
 * `inputSchema` before anything runs: a zod 4 schema (classic or `zod/mini`) parses them
 * (its output is `execute`'s input, typed), a JSON Schema object validates them with
 * `@cfworker/json-schema` (draft 2020-12, or the draft its `$schema` names; the input is
 * `unknown`).
 *
 * Throws an `AgentValidationError` when the definition cannot work: a name the model APIs
 * refuse, a schema that is not an object schema (or that the validator cannot read), a zod
 * schema with no JSON Schema, a `timeoutMs` that is not a positive number.
 *
 * @example
 * const weather = defineAgentTool({
 *   name: 'get_weather',
 *   description: 'The current weather in a city',
 *   inputSchema: z.object({ city: z.string() }),
 *   execute: async ({ city }, { signal }) => (await fetch(`https://wttr.in/${city}?format=j1`, { signal })).json(),
 *   timeoutMs: 10_000,
 * });
 * const deleteFiles = defineAgentTool({
 *   name: 'delete_files',
 *   description: 'Deletes the files that match a glob',
 *   inputSchema: { type: 'object', properties: { glob: { type: 'string' } }, required: ['glob'] },
 *   needsApproval: true,
 *   execute: async (input) => removeFiles((input as { glob: string }).glob),
 * });
 * // No `execute`: the client runs it, and the run waits for its result.
 * const pickFile = defineAgentTool({ name: 'pick_file', description: 'Asks the user for a file', inputSchema: z.object({}) });
 */
export function defineAgentTool<Schema extends AgentToolInputSchema, Output = unknown>(
  definition: AgentToolDefinition<Schema, Output>,
): AgentTool<InferAgentToolInput<Schema>, Output> {
  type Input = InferAgentToolInput<Schema>;
  const { name, description, inputSchema, execute, needsApproval, timeoutMs } = definition;
  if (typeof name !== 'string' || !TOOL_NAME.test(name)) {
    throw invalid(
      String(name),
      'name',
      'expected 1 to 64 letters, digits, _ or -',
      `the name ${JSON.stringify(name)} is not one the model APIs take (1 to 64 letters, digits, _ or -)`,
    );
  }
  if (typeof description !== 'string') {
    throw invalid(name, 'description', 'expected a string', 'description must be a string');
  }
  if (timeoutMs !== undefined && !(typeof timeoutMs === 'number' && timeoutMs > 0 && Number.isFinite(timeoutMs))) {
    throw invalid(
      name,
      'timeoutMs',
      'expected a positive number',
      `timeoutMs must be a positive number of milliseconds, not ${String(timeoutMs)}`,
    );
  }
  const inputJsonSchema = toInputJsonSchema(name, inputSchema);
  const check = toInputCheck(name, inputSchema);
  const parseInput = (value: unknown): AgentToolInputResult<Input> => {
    const checked = check(value);
    if (checked.success) return { success: true, input: checked.input as Input };
    const { issues } = checked;
    return { success: false, message: `Invalid arguments for ${name}: ${describeIssues(issues)}`, issues };
  };
  const tool: AgentTool<Input, Output> = { name, description, inputSchema, inputJsonSchema, parseInput };
  if (timeoutMs !== undefined) Object.assign(tool, { timeoutMs });
  if (execute !== undefined) tool.execute = execute;
  if (typeof needsApproval === 'function') tool.needsApproval = needsApproval;
  else if (needsApproval === true) tool.needsApproval = () => true;
  return Object.freeze(tool);
}
