import type { ServerResponse } from 'node:http';
import { proxyUpstream } from './proxyUpstream';
import { openEventStream, readSSEFrames, toDeltas, writeFrames } from './sseReplay';

/** Where `/v1/chat/completions` goes: the real service when the environment names one, else the recording. */
export interface OpenAIUpstream {
  baseURL: string;
  apiKey?: string;
  model?: string;
}

/** The real OpenAI-compatible service from `OPENAI_BASE_URL`, `OPENAI_API_KEY`, `OPENAI_MODEL`, if set. */
export function openAIUpstreamFromEnv(env: NodeJS.ProcessEnv): OpenAIUpstream | undefined {
  if (env.OPENAI_BASE_URL === undefined && env.OPENAI_API_KEY === undefined) return undefined;
  const upstream: OpenAIUpstream = {
    baseURL: (env.OPENAI_BASE_URL ?? 'https://api.openai.com/v1').replace(/\/+$/, ''),
  };
  if (env.OPENAI_API_KEY !== undefined) upstream.apiKey = env.OPENAI_API_KEY;
  if (env.OPENAI_MODEL !== undefined) upstream.model = env.OPENAI_MODEL;
  return upstream;
}

interface ChatBody {
  model?: string;
  messages?: Array<{ role?: string; content?: unknown; tool_call_id?: string }>;
}

const recording = new URL('../../providers/openai/__fixtures__/scenario.sse', import.meta.url);

const chunk = (delta: object, finishReason: string | null = null) =>
  `data: ${JSON.stringify({
    id: 'chatcmpl-demo',
    object: 'chat.completion.chunk',
    created: Math.floor(Date.now() / 1000),
    model: 'demo-recording',
    choices: [{ index: 0, delta, finish_reason: finishReason }],
  })}\n\n`;

/** The answer after the page ran the tools: a sentence made of the tool messages it sent. */
function continuation(body: ChatBody): string[] {
  const messages = body.messages ?? [];
  const lastAssistant = messages.map((message) => message.role).lastIndexOf('assistant');
  const results = messages.slice(lastAssistant + 1).filter((message) => message.role === 'tool');
  const found = results.map((message) => String(message.content)).join('; ');
  const text = `Thanks, the tools answered: ${found}. Both cities look fine for a walk today.`;
  return [
    chunk({ role: 'assistant', content: '' }),
    ...toDeltas(text).map((content) => chunk({ content })),
    chunk({}, 'stop'),
    'data: [DONE]\n\n',
  ];
}

/**
 * `/v1/chat/completions`. Without an upstream: the first turn replays the recorded
 * reasoning, text and two `get_weather` calls (the page runs them); a request whose last
 * message is a tool result gets a generated answer that quotes the results.
 */
export async function handleOpenAI(body: string, response: ServerResponse, upstream?: OpenAIUpstream): Promise<void> {
  if (upstream !== undefined) {
    const parsed = JSON.parse(body) as ChatBody & Record<string, unknown>;
    if (upstream.model !== undefined) parsed.model = upstream.model;
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (upstream.apiKey !== undefined) headers.authorization = `Bearer ${upstream.apiKey}`;
    return proxyUpstream(response, `${upstream.baseURL}/chat/completions`, headers, JSON.stringify(parsed));
  }
  const parsed = JSON.parse(body) as ChatBody;
  const frames = parsed.messages?.at(-1)?.role === 'tool' ? continuation(parsed) : await readSSEFrames(recording);
  openEventStream(response);
  await writeFrames(response, frames);
}
