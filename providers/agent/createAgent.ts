import { createAgentStore } from '../../machines/createAgentStore';
import { AgentValidationError } from '../../protocol/errors';
import type { AgentEvent, AgentEventType } from '../../protocol/eventSchemas';
import { isAbortError } from '../../transports/AgentTransportError';
import { createAsyncIterableTransport } from '../../transports/createAsyncIterableTransport';
import { AgentCommandError } from '../AgentCommandError';
import type { AgentProvider, AgentProviderContextOptions, AnyAgentProvider } from '../AgentProvider';
import type { AgentRunClosing } from '../AgentRunTracker';
import type { AgentRunEmitter } from '../createAgentRunEmitter';
import { type AgentProviderRunContext, defineAgentProvider } from '../defineAgentProvider';
import { eventTypesOf } from '../eventTypeGroups';
import { type AgentModelInput, anthropicModelInput, openAIModelInput, toAgentModelTools } from './agentModelInput';
import type { AgentEventDraft, AgentLoopChunk } from './agentStepEvents';
import type { AgentLoopConfig, AgentTurn } from './agentTurn';
import type { AgentTool } from './defineAgentTool';
import { runAgentTurn } from './runAgentTurn';

/** What a user's turn sends an agent. */
export interface AgentInput {
  prompt: string;
}

export interface AgentOptions {
  /** A provider that streams tool calls: the OpenAI-compatible or the Anthropic provider, or one with `modelInput`. */
  model: AnyAgentProvider;
  tools: readonly AgentTool[];
  /** Instructions sent with every model step. */
  system?: string;
  /** Model steps one run may take (each with its tool calls) before it completes anyway. Default 10. */
  maxSteps?: number;
  /**
   * The model's input for a step, from the instructions and the tools. Default: the input of
   * the OpenAI-compatible provider (`openAIModelInput`) or of the Anthropic provider
   * (`anthropicModelInput`), by the model's `id`; required for any other model.
   */
  modelInput?: AgentModelInput;
}

/** The context of one agent run: the run's emitter, and the run. */
export interface AgentContext extends AgentProviderRunContext {
  turn: AgentTurn;
  /** Tool calls of the run this one continues that it is running: they are cancelled with it. */
  adoptedRunning: Set<string>;
}

/** What the agent's transport opens: the run. */
export interface AgentRequest {
  turn: AgentTurn;
}

const DEFAULT_MAX_STEPS = 10;
const MODEL_INPUTS: Readonly<Record<string, AgentModelInput>> = {
  'openai-compatible': openAIModelInput,
  anthropic: anthropicModelInput,
};

function invalid(path: string, reason: string, message: string): AgentValidationError {
  return new AgentValidationError('createAgent options', { path, reason, message });
}

function checkOptions(options: AgentOptions): AgentLoopConfig {
  const { model, system } = options;
  if (!model?.capabilities?.eventTypes?.includes('tool.requested')) {
    throw invalid(
      'model',
      'expected a provider that streams tool calls',
      `the model "${String(model?.id)}" does not emit tool.requested: it cannot call tools`,
    );
  }
  const maxSteps = options.maxSteps ?? DEFAULT_MAX_STEPS;
  if (!Number.isSafeInteger(maxSteps) || maxSteps < 1) {
    throw invalid(
      'maxSteps',
      'expected a positive integer',
      `maxSteps must be a positive integer, not ${String(maxSteps)}`,
    );
  }
  const tools = new Map<string, AgentTool>();
  for (const tool of options.tools) {
    if (tools.has(tool.name)) throw invalid('tools', 'expected unique names', `two tools are named ${tool.name}`);
    tools.set(tool.name, tool);
  }
  const modelInput = options.modelInput ?? (Object.hasOwn(MODEL_INPUTS, model.id) ? MODEL_INPUTS[model.id] : undefined);
  if (modelInput === undefined) {
    throw invalid(
      'modelInput',
      'expected a function',
      `the model "${model.id}" is neither the OpenAI-compatible nor the Anthropic provider: give modelInput, which makes its input for a step`,
    );
  }
  const request =
    system === undefined
      ? { tools: toAgentModelTools(tools.values()) }
      : { system, tools: toAgentModelTools(tools.values()) };
  return { model, modelInput: modelInput(request), tools, maxSteps };
}

/** Emits one event of the run and applies it to the run's own history, which the next model step reads. */
function emit(context: AgentContext, draft: AgentEventDraft): AgentEvent {
  // A draft's type and payload belong together, which TypeScript does not follow through the union.
  const emitAny = context.events.emit as (type: AgentEventType, payload: unknown, extra?: object) => AgentEvent;
  const event = emitAny(draft.type, draft.payload, draft.meta === undefined ? undefined : { meta: draft.meta });
  context.turn.history.dispatch(event);
  if (event.type === 'tool.running' && !context.events.tracker.isOpen('toolCall', event.payload.toolCallId)) {
    context.adoptedRunning.add(event.payload.toolCallId);
  } else if (event.type === 'tool.completed' || event.type === 'tool.failed' || event.type === 'tool.cancelled') {
    context.adoptedRunning.delete(event.payload.toolCallId);
  }
  return event;
}

/**
 * Ends the run as `closing` says: the tools it runs for the run it continues are cancelled
 * (its own open entities the emitter's tracker closes), then the run.
 */
function close(context: AgentContext, closing: AgentRunClosing): AgentEvent[] {
  const { events } = context;
  const out: AgentEvent[] = [];
  if (!events.tracker.hasEnded && closing.type === 'cancelled') {
    for (const toolCallId of context.adoptedRunning) {
      out.push(events.emit('tool.cancelled', { toolCallId, reason: closing.reason }));
    }
    context.adoptedRunning.clear();
  }
  out.push(...events.close(closing));
  return out;
}

function createTurn(events: AgentRunEmitter, options: AgentProviderContextOptions): AgentTurn {
  const history = createAgentStore();
  const takenToolCallIds = new Set<string>();
  if (options.history !== undefined) {
    history.reset(options.history);
    for (const toolCall of Object.values(options.history.toolCalls)) {
      if (toolCall.sessionId === events.sessionId) takenToolCallIds.add(toolCall.id);
    }
  }
  return {
    sessionId: options.sessionId,
    runId: options.runId,
    now: options.now,
    continuation: options.continuation,
    history,
    controller: new AbortController(),
    cancelReason: undefined,
    takenToolCallIds,
  };
}

/**
 * An agent as an AgentProvider: it runs the model/tool loop of one user turn in one run,
 * so it runs wherever a provider runs (`createXChatRuntime`, `useXChat`, `fromAgentProvider`,
 * the host). Each model step streams the model's text, reasoning and tool calls as the run's
 * events; each call it makes is validated against its tool's schema (invalid arguments or an
 * unknown tool fail the call, and the model reads why at the next step), then
 * - a tool with `execute` runs here, with the other calls of the step (concurrently):
 *   `tool.running`, then `tool.completed` or `tool.failed`;
 * - a tool whose `needsApproval` says so asks first (`approval.requested`, naming the call);
 * - a tool without `execute` is the client's.
 * The next step sends the results with the conversation; the run completes when a step calls
 * no tool, or after `maxSteps` steps (its `output` says `stoppedBy: 'max_steps'`). When a call
 * waits for the client or for an approval, the run completes waiting for input
 * (`pendingToolCallIds`, `pendingApprovalIds`), as any run does; the run that continues it
 * resolves the approvals, runs what they approved (a `modified` decision's data is the
 * input), tells the model of a rejection as the call's failure (`approval_rejected`), and
 * goes on with the next step. Aborting the run, or `run.cancel` (`cancelRun`), aborts what
 * runs through its signal: the calls and the run end `cancelled`. A call past its tool's
 * `timeoutMs` fails with code `timeout`. A model step that fails fails the run.
 *
 * Each step's request is built by the model provider from the conversation so far, each step
 * as a turn of its own (`toAgentStepHistory`); the run's events are kept in a store of the
 * run for that. `meta.agentMachines.step` on each message, reasoning and tool call says its
 * step; the `output` of `run.completed` (`AgentRunOutput`: `stoppedBy`, `steps`) says how the run ended.
 * Throws an `AgentValidationError` when the options cannot work (a model that emits no tool
 * calls, two tools of one name, a `maxSteps` below 1, a model of unknown input without
 * `modelInput`).
 *
 * @example
 * const agent = createAgent({
 *   model: createOpenAICompatibleAgentProvider({ baseURL: 'https://api.openai.com/v1', apiKey, model: 'gpt-4o-mini' }),
 *   tools: [weather, deleteFiles, pickFile],
 *   system: 'You help with files and the weather.',
 *   maxSteps: 8,
 * });
 * const chat = createXChatRuntime({ provider: agent, sessionId: 'chat-1' });
 * await chat.request({ prompt: 'Weather in Paris?' });
 */
export function createAgent(
  options: AgentOptions,
): AgentProvider<AgentInput, AgentRequest, AgentLoopChunk, AgentContext> {
  const config = checkOptions(options);
  const eventTypes = [
    ...new Set<AgentEventType>([
      ...eventTypesOf(['run', 'message', 'reasoning', 'toolCall', 'approval']),
      ...config.model.capabilities.eventTypes,
    ]),
  ];
  /** The live runs of this agent, by run id: from their context until their runner lets go of them. */
  const turns = new Map<string, AgentTurn>();
  const provider = defineAgentProvider<AgentInput, AgentRequest, AgentLoopChunk, AgentContext>({
    id: 'agent',
    capabilities: { eventTypes, commands: ['run.cancel'] },
    transport: createAsyncIterableTransport((request: AgentRequest) => runAgentTurn(config, request.turn)),
    createContext: (events, contextOptions) => {
      const turn = createTurn(events, contextOptions);
      turns.set(turn.runId, turn);
      const { signal } = contextOptions;
      // The runner aborts its signal when the run is over, however it ended: the loop stops (it
      // starts nothing once aborted, and reads its store no more) and the run is forgotten.
      const release = () => {
        turn.controller.abort(signal.reason);
        turn.history.destroy();
        if (turns.get(turn.runId) === turn) turns.delete(turn.runId);
      };
      if (signal.aborted) release();
      else signal.addEventListener('abort', release, { once: true });
      return { events, turn, adoptedRunning: new Set<string>() };
    },
    start: (input, context) => {
      if (typeof input?.prompt !== 'string' && context.turn.continuation === undefined) {
        throw new AgentValidationError('agent input', {
          path: 'prompt',
          reason: 'expected a string',
          message: 'prompt must be a string',
        });
      }
      const out = [emit(context, { type: 'run.started', payload: { input } })];
      if (context.turn.continuation !== undefined) return out;
      out.push(
        emit(context, {
          type: 'message.started',
          payload: { messageId: 'prompt', role: 'user', content: input.prompt },
        }),
        emit(context, { type: 'message.completed', payload: { messageId: 'prompt' } }),
      );
      return out;
    },
    prepareRequest: (_input, { turn }) => ({ turn }),
    transformChunk: (chunk, context) =>
      chunk.kind === 'close' ? close(context, chunk.closing) : [emit(context, chunk.draft)],
    incompleteStream: { message: 'The agent loop ended without ending the run', code: 'incomplete_stream' },
    // biome-ignore lint/correctness/useYield: the run's own stream ends the run cancelled, so this has no events
    async *executeCommand(command) {
      const turn = turns.get(command.runId);
      if (command.type !== 'run.cancel' || turn === undefined || turn.sessionId !== command.sessionId) {
        throw new AgentCommandError(
          'invalid_command',
          `${command.type} (command ${command.commandId}): the agent has no running run "${command.runId}" in session "${command.sessionId}" that takes it`,
        );
      }
      turn.cancelReason = command.payload.reason ?? 'cancelled';
      turn.controller.abort(new DOMException(`Run "${turn.runId}" was cancelled`, 'AbortError'));
    },
  });
  return {
    ...provider,
    // An abort cancels the tools this run runs for the run it continues as well as its own.
    transformError: (error, context) =>
      isAbortError(error)
        ? close(context, { type: 'cancelled', reason: 'aborted' })
        : provider.transformError(error, context),
  };
}
