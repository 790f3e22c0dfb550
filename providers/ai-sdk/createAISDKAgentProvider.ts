import type { AgentEvent } from '../../protocol/eventSchemas';
import type { SSEChunk, SSETransportOptions } from '../../transports/createSSETransport';
import type { AgentProvider } from '../AgentProvider';
import { createAgentRunEmitter } from '../createAgentRunEmitter';
import { defineAgentProvider } from '../defineAgentProvider';
import { eventTypesOf } from '../eventTypeGroups';
import { AISDKChunkError } from './AISDKChunkError';
import { type AISDKContext, emptyStep } from './aiSdkContext';
import { confirmAnswers } from './aiSdkContinuation';
import { type AISDKChatInput, type AISDKChatRequest, prepareAISDKRequest, startEvents } from './aiSdkRequest';
import { AI_SDK_INCOMPLETE_STREAM, endAISDKRun } from './aiSdkRunEnd';
import { createAISDKTransport } from './createAISDKTransport';
import { mapUIMessageChunk } from './mapUIMessageChunk';
import { readUIMessageChunk } from './readUIMessageChunk';

export type { AISDKContext } from './aiSdkContext';
export type { AISDKChatInput, AISDKChatRequest } from './aiSdkRequest';

export interface AISDKAgentProviderOptions {
  /** The chat endpoint, as `DefaultChatTransport`'s `api` (`/api/chat`). */
  api: string;
  /** Extra headers, or a function called per request that makes them (a refreshed token, say). */
  headers?: SSETransportOptions<AISDKChatRequest>['headers'];
  /** Extra fields of every request body, as `DefaultChatTransport`'s `body`; the input's `body` goes over them. */
  body?: Record<string, unknown>;
  fetch?: typeof fetch;
}

const AI_SDK_EVENT_TYPES = eventTypesOf(
  ['run', 'message', 'reasoning', 'toolCall', 'approval', 'task', 'artifact', 'activity', 'extension'],
  // Tasks and artifacts are created whole; data parts are replaced, never patched.
  { except: ['task.updated', 'artifact.updated', 'activity.delta'] },
);

/**
 * A provider for any backend that speaks the AI SDK's UI message stream (an AI SDK route
 * answering with `toUIMessageStreamResponse`, Mastra's `chatRoute`, the OpenAI Agents SDK's
 * AI SDK response...). It POSTs what `DefaultChatTransport` posts (`{ ...body, id,
 * messages, trigger: 'submit-message' }`, the session id as the chat id), the conversation
 * built from the session's AgentState (`toAISDKMessages`) and the input's `prompt`, or the
 * input's `messages` as they are. Every chunk is checked against `uiMessageChunkSchema`
 * (`ai` 6.0 and `ai` 7's `reset-step`, `custom`, `reasoning-file`) and mapped by
 * `mapUIMessageChunk`; a chunk that is not one, or that names a part never started, fails
 * the run with an `AISDKChunkError`.
 *
 * A run whose stream finished with client tool calls or approval requests open completes
 * waiting on them. The run that continues it sends the tool results (`output-available`,
 * `output-error`) and the answers (`approval-responded`, with `approval: { id, approved,
 * reason }`), and, once the new stream starts, reports the answers as `approval.resolved`;
 * the outputs it streams settle the waiting run's tool calls. An answer `modified` fails the
 * continuation before anything is sent (`unsupported_capability`): the protocol has no
 * edited input.
 *
 * A dropped stream resumes with `GET {api}/{chatId}/stream` (204: nothing to resume, the run
 * fails `nothing_to_resume`); the server replays the stream from its start, and what was
 * already applied is absorbed (in the same call by the frames' places, in a new call by
 * mapping the replay again and absorbing its events up to the run's last sequence).
 *
 * @example
 * const provider = createAISDKAgentProvider({ api: 'https://app.example.com/api/chat' });
 * await runAgentProvider({
 *   provider,
 *   input: { prompt: 'Weather in Oslo?' },
 *   sessionId: 'chat-1',
 *   history: store.getSnapshot(),
 *   onEvent: store.dispatch,
 * });
 */
export function createAISDKAgentProvider(
  options: AISDKAgentProviderOptions,
): AgentProvider<AISDKChatInput, AISDKChatRequest, SSEChunk, AISDKContext> {
  const transportOptions: Parameters<typeof createAISDKTransport>[0] = { api: options.api };
  if (options.headers !== undefined) transportOptions.headers = options.headers;
  if (options.fetch !== undefined) transportOptions.fetch = options.fetch;
  return defineAgentProvider({
    id: 'ai-sdk',
    capabilities: { eventTypes: AI_SDK_EVENT_TYPES, resumable: true },
    transport: createAISDKTransport(transportOptions),
    createContext: (events, contextOptions): AISDKContext => {
      const { history, continuation, initialSequence } = contextOptions;
      // Resumed in a new call: the replay is mapped from its start, so the events count from 0 again.
      const replaysFromStart = initialSequence > 0;
      return {
        events: replaysFromStart ? createAgentRunEmitter({ ...contextOptions, initialSequence: 0 }) : events,
        history,
        continuation,
        unconfirmedAnswers: continuation?.approvals ?? [],
        replaysFromStart,
        messageId: undefined,
        openTexts: new Map(),
        openReasoning: new Map(),
        takenIds: new Map([['message', new Set(['prompt'])]]),
        nextPlaces: new Map(),
        toolCalls: new Map(),
        openApprovals: new Set(),
        step: emptyStep(undefined),
        stepCount: 0,
        fileCount: 0,
        dataCount: 0,
        failure: undefined,
        outcome: undefined,
      };
    },
    start: startEvents,
    prepareRequest: (input, context) => {
      // The start events were delivered by the call that began the run: made again, unseen, for the sequences.
      if (context.replaysFromStart) startEvents(input, context);
      return prepareAISDKRequest(input, context, options.body);
    },
    transformChunk: (chunk, context) => {
      if (context.events.tracker.hasEnded) return [];
      const parsed = readUIMessageChunk(chunk.data);
      if (context.unconfirmedAnswers.length === 0) return mapUIMessageChunk(parsed, context, chunk.data);
      const confirmed: AgentEvent[] = confirmAnswers(context, parsed?.type === 'error');
      return [...confirmed, ...mapUIMessageChunk(parsed, context, chunk.data)];
    },
    // A stream that ended without `[DONE]` still ends the run its `finish`, `abort` or `error` announced.
    finish: endAISDKRun,
    incompleteStream: AI_SDK_INCOMPLETE_STREAM,
    isRetryable: isRetryableAISDKError,
  });
}

/**
 * Dropped connections, stalled streams, rate limits and server errors are worth retrying;
 * a stream that broke the protocol (`AISDKChunkError`), a client error or nothing to
 * resume is not.
 */
function isRetryableAISDKError(error: unknown): boolean {
  if (AISDKChunkError.isInstance(error) || typeof error !== 'object' || error === null) return false;
  const { code, status } = error as { code?: unknown; status?: unknown };
  if (code === 'http_error') return typeof status === 'number' && (status === 429 || status >= 500);
  return code === 'network_error' || code === 'timeout' || code === 'abnormal_close';
}
