// The demo server's AI SDK backend: what an AI SDK route handler is, with the real `ai` package.
// `streamText` runs a scripted model (the `ai` package's MockLanguageModelV3, so `npm start`
// needs no key) with two tools that run on the server, the email only once the user approved
// it, and answers with the UI message stream, as `toUIMessageStreamResponse` does. The page
// reads it with createAISDKAgentProvider; a `useChat` app would read the same bytes.
import type { ServerResponse } from 'node:http';
import {
  convertToModelMessages,
  jsonSchema,
  type ModelMessage,
  pipeUIMessageStreamToResponse,
  simulateReadableStream,
  stepCountIs,
  streamText,
  tool,
  type UIMessage,
} from 'ai';
import { MockLanguageModelV3 } from 'ai/test';

type ScriptedStream = Extract<ConstructorParameters<typeof MockLanguageModelV3>[0], object>['doStream'];
type StreamPart =
  Awaited<ReturnType<Extract<ScriptedStream, (...args: never[]) => unknown>>>['stream'] extends ReadableStream<
    infer Part
  >
    ? Part
    : never;
type Prompt = ModelMessage[];

const CELSIUS: Record<string, number> = { paris: 14, rome: 21, oslo: 9 };
const TEAM = 'team@example.com';

/** The tools `streamText` runs on the server: the weather at once, the email once approved. */
export function createAISDKDemoTools(outbox: { sent: Array<{ to: string; body: string }> }) {
  return {
    get_weather: tool({
      description: 'Current temperature in a city, in °C.',
      inputSchema: jsonSchema<{ city: string }>({
        type: 'object',
        properties: { city: { type: 'string' } },
        required: ['city'],
      }),
      execute: async ({ city }) => ({ city, celsius: CELSIUS[city.toLowerCase()] ?? 17 }),
    }),
    send_email: tool({
      description: 'Sends an email; the user approves it first.',
      inputSchema: jsonSchema<{ to: string; body: string }>({
        type: 'object',
        properties: { to: { type: 'string' }, body: { type: 'string' } },
        required: ['to', 'body'],
      }),
      needsApproval: true,
      execute: async (email) => {
        outbox.sent.push(email);
        return { sent: true, to: email.to };
      },
    }),
  };
}

/** The results of the tools called since the user last spoke, by tool name. */
function resultsOfTurn(prompt: Prompt): Map<string, { type: string; value?: unknown }> {
  const results = new Map<string, { type: string; value?: unknown }>();
  for (const message of prompt) {
    if (message.role === 'user') results.clear();
    if (message.role !== 'tool') continue;
    for (const part of message.content) {
      if (part.type === 'tool-result') results.set(part.toolName, part.output as { type: string; value?: unknown });
    }
  }
  return results;
}

const words = (text: string) => text.match(/\S+\s*/g) ?? [text];

function textParts(id: string, text: string): StreamPart[] {
  return [
    { type: 'text-start', id },
    ...words(text).map((delta): StreamPart => ({ type: 'text-delta', id, delta })),
    { type: 'text-end', id },
  ];
}

function finished(reason: 'stop' | 'tool-calls'): StreamPart {
  return {
    type: 'finish',
    finishReason: { unified: reason, raw: reason },
    usage: {
      inputTokens: { total: 20, noCache: 20, cacheRead: undefined, cacheWrite: undefined },
      outputTokens: { total: 12, text: 12, reasoning: undefined },
    },
  };
}

/**
 * One step of the script, read from the conversation the model is given: look the weather up,
 * then ask to send the email, then say what became of it.
 */
export function scriptedStep(prompt: Prompt): StreamPart[] {
  const results = resultsOfTurn(prompt);
  const weather = results.get('get_weather');
  const email = results.get('send_email');
  if (weather === undefined) {
    return [
      { type: 'stream-start', warnings: [] },
      { type: 'reasoning-start', id: 'r1' },
      { type: 'reasoning-delta', id: 'r1', delta: 'Look the weather up, then ask before emailing the team.' },
      { type: 'reasoning-end', id: 'r1' },
      ...textParts('t1', 'Let me check the weather in Paris.'),
      { type: 'tool-call', toolCallId: 'weather-1', toolName: 'get_weather', input: '{"city":"Paris"}' },
      finished('tool-calls'),
    ];
  }
  if (email === undefined) {
    const { celsius } = (weather.value ?? {}) as { celsius?: number };
    const body = `Paris: ${String(celsius)} °C.`;
    return [
      { type: 'stream-start', warnings: [] },
      ...textParts('t2', `It is ${String(celsius)} °C in Paris. I will email the team.`),
      { type: 'tool-call', toolCallId: 'email-1', toolName: 'send_email', input: JSON.stringify({ to: TEAM, body }) },
      finished('tool-calls'),
    ];
  }
  const answer = email.type === 'execution-denied' ? 'I did not send the email.' : `Email sent to ${TEAM}.`;
  return [{ type: 'stream-start', warnings: [] }, ...textParts('t3', answer), finished('stop')];
}

/** The scripted model: each call streams the step the conversation is at, a part every `pauseMs`. */
export function createScriptedModel(pauseMs = 40): MockLanguageModelV3 {
  return new MockLanguageModelV3({
    doStream: async ({ prompt }) => ({
      stream: simulateReadableStream({ chunks: scriptedStep(prompt as Prompt), chunkDelayInMs: pauseMs }),
    }),
  });
}

/**
 * `POST /api/ai-sdk`: DefaultChatTransport's body (`{ id, messages, trigger, ... }`), answered
 * with the UI message stream of `streamText` over the scripted model and the tools, up to five
 * steps (a step per tool result), reasoning included.
 */
export async function handleAISDK(
  body: string,
  response: ServerResponse,
  outbox: { sent: Array<{ to: string; body: string }> },
): Promise<void> {
  const { messages } = JSON.parse(body) as { messages?: UIMessage[] };
  if (!Array.isArray(messages)) {
    response.writeHead(400, { 'content-type': 'text/plain' });
    return void response.end('expected { messages: UIMessage[] }');
  }
  const tools = createAISDKDemoTools(outbox);
  const result = streamText({
    model: createScriptedModel(),
    messages: await convertToModelMessages(messages, { tools }),
    tools,
    stopWhen: stepCountIs(5),
  });
  pipeUIMessageStreamToResponse({ response, stream: result.toUIMessageStream({ sendReasoning: true }) });
}
