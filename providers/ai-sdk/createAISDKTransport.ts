import { AgentError } from '../../protocol/errors';
import type { AgentTransport } from '../../transports/AgentTransport';
import { createSSETransport, type SSEChunk, type SSETransportOptions } from '../../transports/createSSETransport';
import type { AISDKChatRequest } from './aiSdkRequest';

export interface AISDKTransportOptions {
  /** The chat endpoint `DefaultChatTransport` posts to (`/api/chat`); resuming reads `{api}/{chatId}/stream`. */
  api: string;
  headers?: SSETransportOptions<AISDKChatRequest>['headers'];
  fetch?: typeof fetch;
}

/** `{api}/{chatId}/stream`, before any query or fragment of `api`, as `DefaultChatTransport` builds it. */
export function resumeUrlOf(api: string, chatId: string): string {
  const end = api.search(/[?#]/);
  const path = end === -1 ? api : api.slice(0, end);
  const suffix = end === -1 ? '' : api.slice(end);
  return `${path.replace(/\/$/, '')}/${encodeURIComponent(chatId)}/stream${suffix}`;
}

/**
 * Gives each frame its place in the stream as its cursor (`ai-sdk-1`, `ai-sdk-2`...): the
 * protocol has no event ids, and a resumed stream replays from its start, so a frame's place
 * names it. Not a bare number, so the runner's decimal rule does not skip frames of a stream
 * resumed in a new call: those are mapped again, and their events absorbed.
 */
async function* numbered(frames: AsyncIterable<SSEChunk>): AsyncGenerator<SSEChunk> {
  let place = 0;
  for await (const frame of frames) {
    place += 1;
    frame.id = `ai-sdk-${place}`;
    yield frame;
  }
}

/**
 * The SSE transport of the AI SDK provider: `open` POSTs the request to `api`; `resume`
 * GETs `{api}/{chatId}/stream`, which replays the active stream from its start, and fails
 * with an `AgentError` of code `nothing_to_resume` when the server answers 204 (no active
 * stream). Frames carry their place in the stream as their cursor.
 *
 * @example
 * const transport = createAISDKTransport({ api: '/api/chat' });
 */
export function createAISDKTransport(options: AISDKTransportOptions): AgentTransport<AISDKChatRequest, SSEChunk> {
  const shared: Pick<SSETransportOptions<AISDKChatRequest>, 'headers' | 'fetch'> = {};
  if (options.headers !== undefined) shared.headers = options.headers;
  if (options.fetch !== undefined) shared.fetch = options.fetch;
  const post = createSSETransport<AISDKChatRequest>({ url: options.api, ...shared });

  async function* replay(chatId: string, signal: AbortSignal): AsyncGenerator<SSEChunk> {
    let nothingToResume = false;
    // Bound to globalThis: a bare `fetch` reference called as a method throws "Illegal invocation" in browsers.
    const fetchImpl = options.fetch ?? globalThis.fetch.bind(globalThis);
    const url = resumeUrlOf(options.api, chatId);
    const get = createSSETransport<AISDKChatRequest>({
      ...shared,
      url,
      method: 'GET',
      fetch: async (input, init) => {
        const response = await fetchImpl(input, init);
        if (response.status !== 204) return response;
        nothingToResume = true;
        return new Response(null, { status: 200, headers: { 'content-type': 'text/event-stream' } });
      },
    });
    yield* numbered(get.open({ id: chatId, messages: [], trigger: 'submit-message' }, signal));
    if (nothingToResume) {
      throw new AgentError('nothing_to_resume', `${url} answered 204: the AI SDK backend has no stream to resume`);
    }
  }

  return {
    kind: 'sse',
    open: (request, signal) => numbered(post.open(request, signal)),
    getCursor: (chunk) => chunk.id,
    resume: (request, _cursor, signal) => replay(request.id, signal),
  };
}
