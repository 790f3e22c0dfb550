import type { AGUIEvent, BaseEvent, RunAgentInput } from '@ag-ui/core';
import type { AgentEvent } from '../../protocol/eventSchemas';
import { redactSecrets } from '../../protocol/redactSecrets';
import type { AgentTransport } from '../../transports/AgentTransport';
import { createSSETransport, type SSEChunk, type SSETransportOptions } from '../../transports/createSSETransport';
import type { AgentProvider } from '../AgentProvider';
import type { AgentRunEmitter } from '../createAgentRunEmitter';
import { defineAgentProvider } from '../defineAgentProvider';
import { eventTypesOf } from '../eventTypeGroups';
import { type AgUIContextState, subagentMeta, subagentRunIdOf } from './agUIContext';
import { mapExtension } from './agUIExtensions';
import { startFollowOnRun, startsFollowOnRun } from './agUIFollowOnRun';
import { closeAllLanes, closeLaneThen, lanesToClose, mapChunk } from './agUILanes';
import { checkSnapshotNames, hydrateMessage } from './agUIMessages';
import { type AgUIAgentInput, prepareAgUIRequest, userMessageEventsOf } from './agUIRequest';
import { confirmResume } from './agUIResume';
import { finishRun } from './agUIRunFinished';
import { AgUIEventError, readAgUIChunk } from './parseAgUIEvent';

export type { AgUIContextState } from './agUIContext';
export type { AgUIAgentInput } from './agUIRequest';

/** An AG-UI CUSTOM, RAW, ACTIVITY_* or SUBAGENT_* event, handed to the application as it is. */
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
  /**
   * Receives CUSTOM, RAW, ACTIVITY_* and SUBAGENT_* events as they arrived, beside the
   * `extension.emitted` and `activity.*` events they also become.
   */
  onExtension?: (extension: AgUIExtensionEvent) => void;
}

const AGUI_EVENT_TYPES = eventTypesOf(
  ['run', 'message', 'reasoning', 'toolCall', 'approval', 'task', 'state', 'extension', 'activity'],
  // AG-UI has no running state for tools, and steps carry no progress.
  { except: ['tool.running', 'task.updated'] },
);

/** Fields that name an entity or a tool: empty, they name nothing, and later events could not refer to them. */
const NAMING_FIELDS = ['messageId', 'toolCallId', 'toolCallName', 'activityType'] as const;

function checkNames(event: AGUIEvent): void {
  // Read as a record: AG-UI's schema keeps unknown fields, and an empty name is refused on any event.
  const fields: Readonly<Record<string, unknown>> = event;
  for (const field of NAMING_FIELDS) {
    if (fields[field] === '') throw new AgUIEventError(event.type, field, 'is empty', event);
  }
}

/** The three streamed deltas while no chunk stream is open: most events, mapped without detours. */
function mapPlainDelta(event: AGUIEvent, events: AgentRunEmitter): AgentEvent[] | undefined {
  switch (event.type) {
    // An empty id falls through to the full mapping, which refuses it.
    case 'TEXT_MESSAGE_CONTENT':
      if (event.messageId === '') return undefined;
      return [events.emit('message.delta', { messageId: event.messageId, delta: event.delta })];
    case 'REASONING_MESSAGE_CONTENT':
      if (event.messageId === '') return undefined;
      return [events.emit('reasoning.delta', { reasoningId: event.messageId, delta: event.delta })];
    case 'TOOL_CALL_ARGS':
      if (event.toolCallId === '') return undefined;
      return [events.emit('tool.arguments_delta', { toolCallId: event.toolCallId, delta: event.delta })];
    default:
      return undefined;
  }
}

function mapEvent(event: AGUIEvent, context: AgUIContextState, options: AgUIAgentProviderOptions): AgentEvent[] {
  const { events } = context;
  if (context.lanes.size === 0) {
    const mapped = mapPlainDelta(event, events);
    if (mapped !== undefined) return mapped;
  }
  checkNames(event);
  const lane = subagentRunIdOf(event) ?? '';
  const extra = subagentMeta(event);
  switch (event.type) {
    case 'TEXT_MESSAGE_START': {
      context.knownMessages.add(event.messageId);
      const role = event.role ?? 'assistant';
      const payload: { messageId: string; role: typeof role; name?: string } = { messageId: event.messageId, role };
      if (typeof event.name === 'string') payload.name = event.name;
      return closeLaneThen(context, lane, () => events.emit('message.started', payload, extra));
    }
    case 'TEXT_MESSAGE_CONTENT':
      return closeLaneThen(context, lane, () =>
        events.emit('message.delta', { messageId: event.messageId, delta: event.delta }),
      );
    case 'TEXT_MESSAGE_END':
      return closeLaneThen(context, lane, () => events.emit('message.completed', { messageId: event.messageId }));
    case 'TOOL_CALL_START': {
      context.toolCalls.push(event.toolCallId);
      const payload: { toolCallId: string; name: string; messageId?: string } = {
        toolCallId: event.toolCallId,
        name: event.toolCallName,
      };
      if (typeof event.parentMessageId === 'string' && event.parentMessageId !== '')
        payload.messageId = event.parentMessageId;
      return closeLaneThen(context, lane, () => events.emit('tool.requested', payload, extra));
    }
    case 'TOOL_CALL_ARGS':
      return closeLaneThen(context, lane, () =>
        events.emit('tool.arguments_delta', { toolCallId: event.toolCallId, delta: event.delta }),
      );
    case 'TOOL_CALL_END':
      return closeLaneThen(context, lane, () =>
        events.emit('tool.arguments_completed', { toolCallId: event.toolCallId }),
      );
    case 'TOOL_CALL_RESULT': {
      context.toolResults.add(event.toolCallId);
      const content = event.content;
      // The tool message's id, so the next request's history answers the call under the same id.
      const meta = { meta: { agui: { resultMessageId: event.messageId } } };
      return closeLaneThen(context, lane, () =>
        events.emit('tool.completed', { toolCallId: event.toolCallId, result: content }, meta),
      );
    }
    case 'TEXT_MESSAGE_CHUNK':
    case 'TOOL_CALL_CHUNK':
    case 'REASONING_MESSAGE_CHUNK':
      return mapChunk(event, context, lane, extra);
    case 'REASONING_MESSAGE_START':
      return closeLaneThen(context, lane, () =>
        events.emit('reasoning.started', { reasoningId: event.messageId }, extra),
      );
    case 'REASONING_MESSAGE_CONTENT':
      return closeLaneThen(context, lane, () =>
        events.emit('reasoning.delta', { reasoningId: event.messageId, delta: event.delta }),
      );
    case 'REASONING_MESSAGE_END':
      return closeLaneThen(context, lane, () => events.emit('reasoning.completed', { reasoningId: event.messageId }));
    case 'REASONING_START':
    case 'REASONING_END':
      // The reasoning phase itself carries no content; its messages are the entities.
      return lanesToClose(context, lane);
    case 'REASONING_ENCRYPTED_VALUE': {
      const reasoningId = `encrypted:${event.entityId}`;
      return [
        events.emit(
          'reasoning.started',
          { reasoningId, redacted: true, content: event.encryptedValue },
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
      const name = event.stepName;
      context.openSteps.set(name, [...(context.openSteps.get(name) ?? []), taskId]);
      return closeLaneThen(context, lane, () => events.emit('task.created', { taskId, title: name }, extra));
    }
    case 'STEP_FINISHED': {
      const open = context.openSteps.get(event.stepName) ?? [];
      const taskId = open.pop();
      if (taskId === undefined) return lanesToClose(context, lane);
      return closeLaneThen(context, lane, () => events.emit('task.completed', { taskId }));
    }
    case 'STATE_SNAPSHOT':
      return closeLaneThen(context, lane, () => events.emit('state.snapshot', { snapshot: event.snapshot }));
    case 'STATE_DELTA':
      return closeLaneThen(context, lane, () => events.emit('state.delta', { patch: event.delta }));
    case 'MESSAGES_SNAPSHOT':
      checkSnapshotNames(event);
      return [...closeAllLanes(context), ...event.messages.flatMap((message) => hydrateMessage(context, message))];
    case 'RUN_STARTED':
      if (startsFollowOnRun(context)) return startFollowOnRun(event, context);
      context.serverRun = { threadId: event.threadId, runId: event.runId };
      context.runIds.add(event.runId);
      return closeAllLanes(context);
    case 'RUN_FINISHED':
      return [...closeAllLanes(context), ...finishRun(event, context)];
    case 'RUN_ERROR': {
      // The server's words reach whoever reads the run: credentials they may quote are redacted.
      const error: { message: string; code?: string } = { message: redactSecrets(event.message) };
      if (typeof event.code === 'string') error.code = event.code;
      return [...closeAllLanes(context), ...events.close({ type: 'failed', error })];
    }
    default: {
      options.onExtension?.({ name: `agui.${event.type.toLowerCase()}`, runId: events.runId, event });
      return mapExtension(event, events);
    }
  }
}

/**
 * A provider for any AG-UI agent endpoint. AG-UI events are validated with
 * `@ag-ui/core`'s schemas and mapped to the event protocol: runs, text and reasoning
 * messages (chunk events expanded with AG-UI's lane rules), tool calls, steps as tasks,
 * shared state, message snapshots (hydrated without duplicates), interrupts as approvals
 * the run ends waiting on, a RUN_STARTED after RUN_FINISHED as a run of its own (under the
 * AG-UI `runId`, see `startFollowOnRun`), ACTIVITY_* as activities, CUSTOM, RAW and SUBAGENT_* as
 * `extension.emitted` (`agui.custom`, `agui.raw`, `agui.subagent_started`, ...); those
 * also go to `onExtension`. Empty ids and tool names fail the run with an `AgUIEventError`.
 *
 * The request carries the input's `messages`, or the session's conversation built from the
 * run's `history` and the input's `prompt`. A run that continues one waiting on an interrupt
 * sends the `continuation`'s answers as `resume` entries (`AgUIResumePayload`), and once the
 * resumed stream starts, reports them as `approval.resolved`; the tool results it streams
 * settle the waiting run's tool calls. An input that cannot become a request fails the run
 * with an `AgentValidationError` before anything is sent.
 *
 * @example
 * const provider = createAgUIAgentProvider({
 *   url: '/api/agent',
 *   headers: { Authorization: `Bearer ${token}` },
 * });
 * const input = { prompt: 'Clean up the logs' };
 * const session = { sessionId: 'thread-1', onEvent: store.dispatch };
 * await runAgentProvider({ provider, input, ...session, runId: 'run-1', history: store.getSnapshot() });
 * // run-1 ended waiting on the interrupt `int-1`: answer it in a run that continues it.
 * await runAgentProvider({
 *   provider,
 *   input,
 *   ...session,
 *   history: store.getSnapshot(),
 *   continuation: { runId: 'run-1', approvals: [{ approvalId: 'int-1', status: 'resolved', decision: 'approved' }] },
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
  return defineAgentProvider({
    id: 'agui',
    capabilities: { eventTypes: AGUI_EVENT_TYPES, followOnRuns: true },
    transport,
    createContext: (events, { history, continuation, initialSequence, now }) => ({
      events,
      now,
      firstRunId: events.runId,
      runIds: new Set([events.runId]),
      runCount: 1,
      threadId: events.sessionId,
      lanes: new Map(),
      knownMessages: new Set(),
      toolCalls: [],
      toolResults: new Set(),
      openSteps: new Map(),
      stepCount: 0,
      serverRun: undefined,
      history,
      continuation,
      // A reconnected stream (a sequence to continue after) goes on after a chunk that confirmed them.
      unconfirmedAnswers: initialSequence > 0 ? [] : (continuation?.approvals ?? []),
      requestMessages: undefined,
      input: undefined,
    }),
    start(input, context) {
      if (input.threadId !== undefined) context.threadId = input.threadId;
      return [
        context.events.emit(
          'run.started',
          { input },
          { meta: { agui: { threadId: context.threadId, runId: context.events.runId } } },
        ),
        ...userMessageEventsOf(input, context),
      ];
    },
    prepareRequest: (input, context) => {
      context.input = input;
      return prepareAgUIRequest(input, context);
    },
    transformChunk: (chunk, context) => {
      const event = readAgUIChunk(chunk);
      if (context.unconfirmedAnswers.length === 0) return mapEvent(event, context, options);
      return [...confirmResume(event, context), ...mapEvent(event, context, options)];
    },
    // Chunk streams AG-UI leaves open end with the stream; the run itself did not finish.
    finish: closeAllLanes,
    incompleteStream: {
      message: 'The AG-UI stream ended without RUN_FINISHED or RUN_ERROR',
      code: 'missing_run_finished',
    },
    isRetryable: isRetryableAgUIError,
  });
}

/**
 * Dropped connections, stalled streams, rate limits and server errors are worth retrying;
 * an AG-UI stream that broke its own rules (`AgUIEventError`) or a client error is not.
 */
function isRetryableAgUIError(error: unknown): boolean {
  if (error instanceof AgUIEventError || typeof error !== 'object' || error === null) return false;
  const { code, status } = error as { code?: unknown; status?: unknown };
  if (code === 'http_error') return typeof status === 'number' && (status === 429 || status >= 500);
  return code === 'network_error' || code === 'timeout' || code === 'abnormal_close';
}
