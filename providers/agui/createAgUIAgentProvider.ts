import type {
  Context as AgUIContext,
  Message as AgUIMessage,
  Tool as AgUITool,
  BaseEvent,
  ResumeEntry,
  RunAgentInput,
} from '@ag-ui/core';
import type { AgentContentPart, AgentMessageContent } from '../../protocol/contentSchemas';
import type { AgentEvent, AgentUsage } from '../../protocol/eventSchemas';
import { isAbortError } from '../../transports/AgentTransportError';
import { createSSETransport, type SSEChunk, type SSETransportOptions } from '../../transports/createSSETransport';
import type { AgentProvider, AgentTransport } from '../AgentProvider';
import { type AgentRunEmitter, createAgentRunEmitter } from '../createAgentRunEmitter';
import { eventTypesOf } from '../eventTypeGroups';
import { toAgentErrorInfo } from '../toAgentErrorInfo';
import { AgUIEventError, readAgUIChunk } from './parseAgUIEvent';

/** What a run of an AG-UI agent starts from: the AG-UI `RunAgentInput` fields the caller owns. */
export interface AgUIAgentInput {
  messages: AgUIMessage[];
  /** Default: the session id. */
  threadId?: string;
  tools?: AgUITool[];
  context?: AgUIContext[];
  state?: unknown;
  forwardedProps?: unknown;
  /** Answers to the interrupts a previous run ended with. */
  resume?: ResumeEntry[];
}

/** An AG-UI event with no standard home (CUSTOM, RAW, ACTIVITY_*, SUBAGENT_*), handed to the application as it is. */
export interface AgUIExtensionEvent {
  name: `agui.${string}`;
  runId: string;
  event: BaseEvent;
}

export interface AgUIAgentProviderOptions {
  /** The transport to the AG-UI endpoint; or give `url` (and `headers`, `fetch`) for SSE. */
  transport?: AgentTransport<RunAgentInput, SSEChunk | BaseEvent>;
  url?: SSETransportOptions<RunAgentInput>['url'];
  headers?: SSETransportOptions<RunAgentInput>['headers'];
  fetch?: typeof fetch;
  /** Receives CUSTOM, RAW, ACTIVITY_* and SUBAGENT_* events, which map to no standard event. */
  onExtension?: (extension: AgUIExtensionEvent) => void;
}

type LaneKind = 'text' | 'tool' | 'reasoning';

export interface AgUIContextState {
  events: AgentRunEmitter;
  threadId: string;
  /** Open chunk streams, one per lane (the parent agent, or a subagent). */
  lanes: Map<string, { kind: LaneKind; id: string }>;
  /** Message ids the caller already has (the input history) or this run emitted. */
  knownMessages: Set<string>;
  /** Tool calls of this run, in order, and those that got a result. */
  toolCalls: string[];
  toolResults: Set<string>;
  openSteps: Map<string, string[]>;
  stepCount: number;
  serverRun: { threadId: string; runId: string } | undefined;
}

const AGUI_EVENT_TYPES = eventTypesOf(['run', 'message', 'reasoning', 'tool', 'approval', 'task', 'state'], {
  // AG-UI has no running state for tools, and steps carry no progress.
  except: ['tool.running', 'task.updated'],
});

type AnyAgUIEvent = BaseEvent & Record<string, unknown>;

function lanesToClose(context: AgUIContextState, lane: string): AgentEvent[] {
  const open = context.lanes.get(lane);
  if (open === undefined) return [];
  context.lanes.delete(lane);
  const { events } = context;
  if (open.kind === 'text') return [events.emit('message.completed', { messageId: open.id })];
  if (open.kind === 'reasoning') return [events.emit('reasoning.completed', { reasoningId: open.id })];
  return [events.emit('tool.arguments_completed', { toolCallId: open.id })];
}

/** Closes the lane's open chunk stream (if any), then emits the event: the common case allocates one array. */
function closeLaneThen(context: AgUIContextState, lane: string, emit: () => AgentEvent): AgentEvent[] {
  if (context.lanes.size === 0) return [emit()];
  const out = lanesToClose(context, lane);
  out.push(emit());
  return out;
}

function closeAllLanes(context: AgUIContextState): AgentEvent[] {
  return [...context.lanes.keys()].flatMap((lane) => lanesToClose(context, lane));
}

function contentOf(content: unknown): AgentMessageContent {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content.map((part: Record<string, unknown>): AgentContentPart => {
    if (part.type === 'text' && typeof part.text === 'string') return { type: 'text', text: part.text };
    return { type: `agui.${String(part.type)}`, data: part };
  });
}

function usageOf(entries: unknown): AgentUsage | undefined {
  if (!Array.isArray(entries) || entries.length === 0) return undefined;
  const usage: AgentUsage = {};
  for (const field of ['inputTokens', 'outputTokens', 'totalTokens'] as const) {
    const values = entries
      .map((entry: Record<string, unknown>) => entry[field])
      .filter((value) => typeof value === 'number');
    if (values.length > 0) usage[field] = (values as number[]).reduce((sum, value) => sum + value, 0);
  }
  usage.byModel = entries;
  return usage;
}

function subagentMeta(event: AnyAgUIEvent): { meta: Record<string, unknown> } | undefined {
  return typeof event.subagentRunId === 'string'
    ? { meta: { agui: { subagentRunId: event.subagentRunId } } }
    : undefined;
}

/** Emits a message already complete (from MESSAGES_SNAPSHOT), unless the caller already has it. */
function hydrateMessage(context: AgUIContextState, message: AnyAgUIEvent): AgentEvent[] {
  const { events } = context;
  const id = message.id as string;
  if (context.knownMessages.has(id)) return [];
  context.knownMessages.add(id);
  const out: AgentEvent[] = [];
  switch (message.role) {
    case 'reasoning':
      out.push(
        events.emit('reasoning.started', { reasoningId: id, content: String(message.content ?? '') }),
        events.emit('reasoning.completed', { reasoningId: id }),
      );
      return out;
    case 'activity':
      return out;
    case 'tool':
      out.push(
        events.emit('message.started', {
          messageId: id,
          role: 'tool',
          content: contentOf(message.content),
          toolCallId: message.toolCallId as string,
        }),
      );
      break;
    default: {
      const role = message.role as 'user' | 'assistant' | 'system' | 'developer';
      out.push(events.emit('message.started', { messageId: id, role, content: contentOf(message.content ?? '') }));
    }
  }
  out.push(events.emit('message.completed', { messageId: id }));
  for (const call of (message.toolCalls as Array<{ id: string; function: { name: string; arguments: string } }>) ??
    []) {
    if (context.toolCalls.includes(call.id)) continue;
    context.toolCalls.push(call.id);
    out.push(
      events.emit('tool.requested', {
        toolCallId: call.id,
        name: call.function.name,
        arguments: call.function.arguments,
        messageId: id,
      }),
      events.emit('tool.arguments_completed', { toolCallId: call.id }),
    );
  }
  return out;
}

/** The three streamed deltas while no chunk stream is open: most events, mapped without detours. */
function mapPlainDelta(event: AnyAgUIEvent, events: AgentRunEmitter): AgentEvent[] | undefined {
  switch (event.type) {
    case 'TEXT_MESSAGE_CONTENT':
      return [events.emit('message.delta', { messageId: event.messageId as string, delta: event.delta as string })];
    case 'REASONING_MESSAGE_CONTENT':
      return [events.emit('reasoning.delta', { reasoningId: event.messageId as string, delta: event.delta as string })];
    case 'TOOL_CALL_ARGS':
      return [
        events.emit('tool.arguments_delta', { toolCallId: event.toolCallId as string, delta: event.delta as string }),
      ];
    default:
      return undefined;
  }
}

function mapEvent(event: AnyAgUIEvent, context: AgUIContextState, options: AgUIAgentProviderOptions): AgentEvent[] {
  const { events } = context;
  if (context.lanes.size === 0) {
    const mapped = mapPlainDelta(event, events);
    if (mapped !== undefined) return mapped;
  }
  const lane = typeof event.subagentRunId === 'string' ? event.subagentRunId : '';
  const extra = subagentMeta(event);
  switch (event.type) {
    case 'TEXT_MESSAGE_START': {
      context.knownMessages.add(event.messageId as string);
      const role = (event.role as 'user' | 'assistant' | 'system' | 'developer' | undefined) ?? 'assistant';
      const payload: { messageId: string; role: typeof role; name?: string } = {
        messageId: event.messageId as string,
        role,
      };
      if (typeof event.name === 'string') payload.name = event.name;
      return closeLaneThen(context, lane, () => events.emit('message.started', payload, extra));
    }
    case 'TEXT_MESSAGE_CONTENT':
      return closeLaneThen(context, lane, () =>
        events.emit('message.delta', { messageId: event.messageId as string, delta: event.delta as string }),
      );
    case 'TEXT_MESSAGE_END':
      return closeLaneThen(context, lane, () =>
        events.emit('message.completed', { messageId: event.messageId as string }),
      );
    case 'TOOL_CALL_START': {
      context.toolCalls.push(event.toolCallId as string);
      const payload: { toolCallId: string; name: string; messageId?: string } = {
        toolCallId: event.toolCallId as string,
        name: event.toolCallName as string,
      };
      if (typeof event.parentMessageId === 'string') payload.messageId = event.parentMessageId;
      return closeLaneThen(context, lane, () => events.emit('tool.requested', payload, extra));
    }
    case 'TOOL_CALL_ARGS':
      return closeLaneThen(context, lane, () =>
        events.emit('tool.arguments_delta', { toolCallId: event.toolCallId as string, delta: event.delta as string }),
      );
    case 'TOOL_CALL_END':
      return closeLaneThen(context, lane, () =>
        events.emit('tool.arguments_completed', { toolCallId: event.toolCallId as string }),
      );
    case 'TOOL_CALL_RESULT': {
      context.toolResults.add(event.toolCallId as string);
      const content = event.content;
      return closeLaneThen(context, lane, () =>
        events.emit('tool.completed', { toolCallId: event.toolCallId as string, result: content }),
      );
    }
    case 'TEXT_MESSAGE_CHUNK':
    case 'TOOL_CALL_CHUNK':
    case 'REASONING_MESSAGE_CHUNK':
      return mapChunk(event, context, lane, extra);
    case 'REASONING_MESSAGE_START':
      return closeLaneThen(context, lane, () =>
        events.emit('reasoning.started', { reasoningId: event.messageId as string }, extra),
      );
    case 'REASONING_MESSAGE_CONTENT':
      return closeLaneThen(context, lane, () =>
        events.emit('reasoning.delta', { reasoningId: event.messageId as string, delta: event.delta as string }),
      );
    case 'REASONING_MESSAGE_END':
      return closeLaneThen(context, lane, () =>
        events.emit('reasoning.completed', { reasoningId: event.messageId as string }),
      );
    case 'REASONING_START':
    case 'REASONING_END':
      // The reasoning phase itself carries no content; its messages are the entities.
      return lanesToClose(context, lane);
    case 'REASONING_ENCRYPTED_VALUE': {
      const reasoningId = `encrypted:${String(event.entityId)}`;
      return [
        events.emit(
          'reasoning.started',
          { reasoningId, redacted: true, content: event.encryptedValue as string },
          {
            meta: { agui: { subtype: event.subtype, entityId: event.entityId } },
          },
        ),
        events.emit('reasoning.completed', { reasoningId }),
      ];
    }
    case 'STEP_STARTED': {
      context.stepCount += 1;
      const taskId = `step-${context.stepCount}`;
      const name = event.stepName as string;
      context.openSteps.set(name, [...(context.openSteps.get(name) ?? []), taskId]);
      return closeLaneThen(context, lane, () => events.emit('task.created', { taskId, title: name }, extra));
    }
    case 'STEP_FINISHED': {
      const open = context.openSteps.get(event.stepName as string) ?? [];
      const taskId = open.pop();
      if (taskId === undefined) return lanesToClose(context, lane);
      return closeLaneThen(context, lane, () => events.emit('task.completed', { taskId }));
    }
    case 'STATE_SNAPSHOT':
      return closeLaneThen(context, lane, () => events.emit('state.snapshot', { snapshot: event.snapshot }));
    case 'STATE_DELTA':
      return closeLaneThen(context, lane, () => events.emit('state.delta', { patch: event.delta as never }));
    case 'MESSAGES_SNAPSHOT':
      return [
        ...closeAllLanes(context),
        ...(event.messages as AnyAgUIEvent[]).flatMap((message) => hydrateMessage(context, message)),
      ];
    case 'RUN_STARTED':
      context.serverRun = { threadId: event.threadId as string, runId: event.runId as string };
      return closeAllLanes(context);
    case 'RUN_FINISHED':
      return [...closeAllLanes(context), ...finishRun(event, context)];
    case 'RUN_ERROR': {
      const error: { message: string; code?: string } = { message: event.message as string };
      if (typeof event.code === 'string') error.code = event.code;
      return [...closeAllLanes(context), ...events.close({ type: 'failed', error })];
    }
    default: {
      options.onExtension?.({ name: `agui.${event.type.toLowerCase()}`, runId: events.runId, event });
      return [];
    }
  }
}

function mapChunk(
  event: AnyAgUIEvent,
  context: AgUIContextState,
  lane: string,
  extra: { meta: Record<string, unknown> } | undefined,
): AgentEvent[] {
  const { events } = context;
  const kind: LaneKind =
    event.type === 'TEXT_MESSAGE_CHUNK' ? 'text' : event.type === 'TOOL_CALL_CHUNK' ? 'tool' : 'reasoning';
  const id = (kind === 'tool' ? event.toolCallId : event.messageId) as string | undefined;
  const open = context.lanes.get(lane);
  const out: AgentEvent[] = [];
  let current = open;
  // A chunk continues the open stream of its lane unless it names another id.
  if (open === undefined || open.kind !== kind || (id !== undefined && id !== open.id)) {
    out.push(...lanesToClose(context, lane));
    if (id === undefined) {
      throw new AgUIEventError(
        event.type,
        kind === 'tool' ? 'toolCallId' : 'messageId',
        'the first chunk of a stream must name it',
        event,
      );
    }
    current = { kind, id };
    context.lanes.set(lane, current);
    if (kind === 'text') {
      context.knownMessages.add(id);
      const role = (event.role as 'user' | 'assistant' | 'system' | 'developer' | undefined) ?? 'assistant';
      out.push(events.emit('message.started', { messageId: id, role }, extra));
    } else if (kind === 'reasoning') {
      out.push(events.emit('reasoning.started', { reasoningId: id }, extra));
    } else {
      if (typeof event.toolCallName !== 'string') {
        throw new AgUIEventError(event.type, 'toolCallName', 'the first chunk of a tool call must name it', event);
      }
      context.toolCalls.push(id);
      const payload: { toolCallId: string; name: string; messageId?: string } = {
        toolCallId: id,
        name: event.toolCallName,
      };
      if (typeof event.parentMessageId === 'string') payload.messageId = event.parentMessageId;
      out.push(events.emit('tool.requested', payload, extra));
    }
  }
  const delta = event.delta;
  if (typeof delta === 'string' && delta !== '' && current !== undefined) {
    if (kind === 'text') out.push(events.emit('message.delta', { messageId: current.id, delta }));
    else if (kind === 'reasoning') out.push(events.emit('reasoning.delta', { reasoningId: current.id, delta }));
    else out.push(events.emit('tool.arguments_delta', { toolCallId: current.id, delta }));
  }
  return out;
}

function finishRun(event: AnyAgUIEvent, context: AgUIContextState): AgentEvent[] {
  const { events } = context;
  const outcome = event.outcome as
    | { type: 'success'; pendingToolCallIds?: string[] }
    | { type: 'interrupt'; interrupts: Array<Record<string, unknown>> }
    | { type: 'cancelled' }
    | undefined;
  const meta = { meta: { agui: { threadId: event.threadId, runId: event.runId } } };
  if (outcome?.type === 'cancelled') return events.close({ type: 'cancelled', reason: 'agui_cancelled' });
  const out: AgentEvent[] = [];
  const payload: {
    output?: unknown;
    usage?: AgentUsage;
    pendingToolCallIds?: string[];
    pendingApprovalIds?: string[];
  } = {};
  if (event.result !== undefined) payload.output = event.result;
  const usage = usageOf(event.usage);
  if (usage !== undefined) payload.usage = usage;
  if (outcome?.type === 'interrupt') {
    payload.pendingApprovalIds = [];
    for (const interrupt of outcome.interrupts) {
      const approval: Parameters<AgentRunEmitter['emit']>[1] & Record<string, unknown> = {
        approvalId: interrupt.id as string,
        description: (interrupt.message as string | undefined) ?? (interrupt.reason as string),
        data: { reason: interrupt.reason, responseSchema: interrupt.responseSchema, metadata: interrupt.metadata },
      };
      if (typeof interrupt.toolCallId === 'string') approval.toolCallId = interrupt.toolCallId;
      const expiresAt = typeof interrupt.expiresAt === 'string' ? Date.parse(interrupt.expiresAt) : Number.NaN;
      if (Number.isFinite(expiresAt)) approval.expiresAt = expiresAt;
      out.push(events.emit('approval.requested', approval as never));
      payload.pendingApprovalIds.push(interrupt.id as string);
    }
  }
  // AG-UI's own rule: the outcome lists pending tool calls, or they are the calls that got no result.
  const pending =
    outcome?.type === 'success' && outcome.pendingToolCallIds !== undefined
      ? outcome.pendingToolCallIds
      : context.toolCalls.filter((id) => !context.toolResults.has(id) && events.tracker.isOpen('tool', id));
  if (pending.length > 0) payload.pendingToolCallIds = pending;
  out.push(events.emit('run.completed', payload, meta));
  return out;
}

/**
 * A provider for any AG-UI agent endpoint. AG-UI events are validated with
 * `@ag-ui/core`'s schemas and mapped to the event protocol: runs, text and reasoning
 * messages (chunk events expanded with AG-UI's lane rules), tool calls, steps as tasks,
 * shared state, message snapshots (hydrated without duplicates), interrupts as approvals
 * the run ends waiting on. CUSTOM, RAW, ACTIVITY_* and SUBAGENT_* go to `onExtension`.
 *
 * @example
 * const provider = createAgUIAgentProvider({
 *   url: '/api/agent',
 *   headers: { Authorization: `Bearer ${token}` },
 * });
 * await runAgentProvider({
 *   provider,
 *   input: { messages: [{ id: 'u1', role: 'user', content: 'Plan my trip' }] },
 *   sessionId: 'thread-1',
 *   onEvent: store.dispatch,
 * });
 */
export function createAgUIAgentProvider(
  options: AgUIAgentProviderOptions,
): AgentProvider<AgUIAgentInput, RunAgentInput, SSEChunk | BaseEvent, AgUIContextState> {
  const transport =
    options.transport ??
    (() => {
      if (options.url === undefined) throw new TypeError('createAgUIAgentProvider needs a `transport` or a `url`');
      const sse: SSETransportOptions<RunAgentInput> = { url: options.url };
      if (options.headers !== undefined) sse.headers = options.headers;
      if (options.fetch !== undefined) sse.fetch = options.fetch;
      return createSSETransport(sse);
    })();
  return {
    id: 'agui',
    protocol: { name: 'agent-event', version: '0.1' },
    capabilities: { eventTypes: AGUI_EVENT_TYPES, transports: [transport.kind] },
    transport,
    createContext: (context) => ({
      events: createAgentRunEmitter(context),
      threadId: context.sessionId,
      lanes: new Map(),
      knownMessages: new Set(),
      toolCalls: [],
      toolResults: new Set(),
      openSteps: new Map(),
      stepCount: 0,
      serverRun: undefined,
    }),
    start(input, context) {
      if (input.threadId !== undefined) context.threadId = input.threadId;
      for (const message of input.messages) context.knownMessages.add(message.id);
      const out: AgentEvent[] = [
        context.events.emit(
          'run.started',
          { input },
          { meta: { agui: { threadId: context.threadId, runId: context.events.runId } } },
        ),
      ];
      const last = input.messages.at(-1);
      if (last?.role === 'user') {
        // The user's new message belongs to this run; the rest of the history is the caller's.
        const messageId = `${last.id}`;
        out.push(
          context.events.emit('message.started', { messageId, role: 'user', content: contentOf(last.content) }),
          context.events.emit('message.completed', { messageId }),
        );
      }
      return out;
    },
    prepareRequest(input, context) {
      const request: RunAgentInput = {
        threadId: context.threadId,
        runId: context.events.runId,
        messages: input.messages,
        tools: input.tools ?? [],
        context: input.context ?? [],
        state: input.state,
        forwardedProps: input.forwardedProps,
      };
      if (input.resume !== undefined) request.resume = input.resume;
      return request;
    },
    transformChunk: (chunk, context) => mapEvent(readAgUIChunk(chunk) as AnyAgUIEvent, context, options),
    flush: (context) => [
      ...closeAllLanes(context),
      ...context.events.close({
        type: 'failed',
        error: { message: 'The AG-UI stream ended without RUN_FINISHED or RUN_ERROR', code: 'missing_run_finished' },
      }),
    ],
    transformError: (error, context) =>
      context.events.close(
        isAbortError(error)
          ? { type: 'cancelled', reason: 'aborted' }
          : { type: 'failed', error: toAgentErrorInfo(error) },
      ),
  };
}
