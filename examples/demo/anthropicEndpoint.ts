import type { ServerResponse } from 'node:http';
import { proxyUpstream } from './proxyUpstream';
import { openEventStream, readSSEFrames, toDeltas, writeFrames } from './sseReplay';

/** The real Anthropic API, when `ANTHROPIC_API_KEY` is set. */
export interface AnthropicUpstream {
  baseURL: string;
  apiKey: string;
  model?: string;
}

export function anthropicUpstreamFromEnv(env: NodeJS.ProcessEnv): AnthropicUpstream | undefined {
  if (env.ANTHROPIC_API_KEY === undefined) return undefined;
  const upstream: AnthropicUpstream = {
    baseURL: (env.ANTHROPIC_BASE_URL ?? 'https://api.anthropic.com').replace(/\/+$/, ''),
    apiKey: env.ANTHROPIC_API_KEY,
  };
  if (env.ANTHROPIC_MODEL !== undefined) upstream.model = env.ANTHROPIC_MODEL;
  return upstream;
}

interface ContentBlock {
  type?: string;
  content?: unknown;
}
interface MessagesBody {
  messages?: Array<{ role?: string; content?: string | ContentBlock[] }>;
}

const recording = new URL('../../providers/anthropic/__fixtures__/scenario.sse', import.meta.url);

const frame = (type: string, data: object) => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;

/** The tool results the last user turn carries, if it is one. */
function toolResultsOf(body: MessagesBody): ContentBlock[] {
  const last = body.messages?.at(-1);
  if (last?.role !== 'user' || !Array.isArray(last.content)) return [];
  return last.content.filter((block) => block.type === 'tool_result');
}

function continuation(results: ContentBlock[]): string[] {
  const found = results
    .map((block) => (typeof block.content === 'string' ? block.content : JSON.stringify(block.content)))
    .join('; ');
  const text = `Thanks, the tools answered: ${found}. Pack a light jacket for Paris.`;
  return [
    frame('message_start', {
      message: {
        id: 'msg_demo',
        type: 'message',
        role: 'assistant',
        content: [],
        model: 'demo-recording',
        stop_reason: null,
        stop_sequence: null,
        usage: { input_tokens: 40, output_tokens: 1 },
      },
    }),
    frame('content_block_start', { index: 0, content_block: { type: 'text', text: '' } }),
    ...toDeltas(text).map((piece) =>
      frame('content_block_delta', { index: 0, delta: { type: 'text_delta', text: piece } }),
    ),
    frame('content_block_stop', { index: 0 }),
    frame('message_delta', { delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: 20 } }),
    frame('message_stop', {}),
  ];
}

/**
 * `/v1/messages`. Without an upstream: the first turn replays the recorded thinking, text
 * and two `get_weather` tool uses; a turn that carries tool results gets a generated answer.
 */
export async function handleAnthropic(
  body: string,
  response: ServerResponse,
  upstream?: AnthropicUpstream,
): Promise<void> {
  if (upstream !== undefined) {
    const parsed = JSON.parse(body) as Record<string, unknown>;
    if (upstream.model !== undefined) parsed.model = upstream.model;
    const headers = {
      'content-type': 'application/json',
      'x-api-key': upstream.apiKey,
      'anthropic-version': '2023-06-01',
    };
    return proxyUpstream(response, `${upstream.baseURL}/v1/messages`, headers, JSON.stringify(parsed));
  }
  const results = toolResultsOf(JSON.parse(body) as MessagesBody);
  const frames = results.length > 0 ? continuation(results) : await readSSEFrames(recording);
  openEventStream(response);
  await writeFrames(response, frames);
}
