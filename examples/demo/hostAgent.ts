// The agent the demo server's agent-machines host runs: createAgent with tools that run on the
// server. Its model is the OpenAI-compatible service the environment names (OPENAI_API_KEY,
// OPENAI_BASE_URL, OPENAI_MODEL), or, without one, a scripted model: the local provider playing
// a model that reads the conversation and answers as one would, so `npm start` needs no key.
import * as z from 'zod/mini';
import type { AgentState, AgentToolCallState } from '../../machines/agentState';
import type { AnyAgentProvider } from '../../providers/AgentProvider';
import { createAgent } from '../../providers/agent/createAgent';
import { defineAgentTool } from '../../providers/agent/defineAgentTool';
import { createLocalAgentProvider } from '../../providers/local/createLocalAgentProvider';
import type { LocalAgentScript } from '../../providers/local/localAgentChunks';
import type { LocalAgentTurn } from '../../providers/local/localAgentTurn';
import { createOpenAICompatibleAgentProvider } from '../../providers/openai/createOpenAICompatibleAgentProvider';
import type { OpenAIUpstream } from './openAIEndpoint';

const CELSIUS: Record<string, number> = { paris: 14, rome: 21, oslo: 9, berlin: 9, tokyo: 18 };

/** The emails `send_email` sent, newest last: the server's outbox. */
export interface DemoOutbox {
  sent: Array<{ to: string; subject: string; body?: string | undefined }>;
}

/** The host agent's tools: the weather runs on the server; an email is sent from the server once the user approved it. */
export function createDemoTools(outbox: DemoOutbox) {
  return [
    defineAgentTool({
      name: 'get_weather',
      description: 'Current temperature in a city, in °C.',
      inputSchema: z.object({ city: z.string() }),
      execute: ({ city }) => ({ city, celsius: CELSIUS[city.toLowerCase()] ?? 17 }),
    }),
    defineAgentTool({
      name: 'send_email',
      description: 'Sends an email. The user approves each one first, and may edit it.',
      inputSchema: z.object({ to: z.string(), subject: z.string(), body: z.optional(z.string()) }),
      needsApproval: true,
      execute: (email) => {
        outbox.sent.push(email);
        return { sent: true, to: email.to };
      },
    }),
  ];
}

/** The last user prompt of the conversation and the tool calls made since, in their order. */
function currentTurn(history: AgentState | undefined): { prompt: string; calls: AgentToolCallState[] } {
  let prompt = '';
  let calls: AgentToolCallState[] = [];
  for (const ref of history?.order ?? []) {
    const message = ref.kind === 'message' ? history?.messages[ref.key] : undefined;
    if (message?.role === 'user') {
      prompt = typeof message.content === 'string' ? message.content : '';
      calls = [];
    }
    const call = ref.kind === 'toolCall' ? history?.toolCalls[ref.key] : undefined;
    if (call !== undefined) calls.push(call);
  }
  return { prompt, calls };
}

const settled = (calls: AgentToolCallState[], name: string) =>
  calls.filter((call) => call.name === name && (call.status === 'completed' || call.status === 'failed'));

const celsiusOf = (call: AgentToolCallState | undefined) => (call?.result as { celsius?: number } | undefined)?.celsius;

/**
 * A model without a service behind it: it answers each step from the conversation, as a model
 * would. Asked for the weather in Paris and Rome and an email: it calls `get_weather` twice,
 * then writes what the results say and calls `send_email`, then says whether it was sent.
 * Asked for Oslo "slowly": one lookup, streamed at 400 ms a step. `paced: false` streams at once.
 */
export const createScriptedModel =
  (paced = true) =>
  (_input: unknown, turn: LocalAgentTurn): LocalAgentScript => {
    const script = scriptedStep(turn);
    return paced ? script : { ...script, delayMs: 0 };
  };

function scriptedStep(turn: LocalAgentTurn): LocalAgentScript {
  const { prompt, calls } = currentTurn(turn.history);
  const weather = settled(calls, 'get_weather');
  if (/\bslowly\b/i.test(prompt)) {
    if (weather.length === 0) {
      return {
        delayMs: 400,
        steps: [
          { type: 'text', deltas: ['Looking it up, ', 'slowly.'] },
          { type: 'tool', name: 'get_weather', argumentDeltas: ['{"city":', '"Oslo"}'] },
        ],
      };
    }
    return { delayMs: 400, steps: [{ type: 'text', deltas: ['Oslo is ', `${celsiusOf(weather[0])} °C.`] }] };
  }
  // 120 ms a step: each delta is seen on screen, even by a busy page that draws a frame late.
  if (weather.length === 0) {
    return {
      delayMs: 120,
      usage: { inputTokens: 42, outputTokens: 31 },
      steps: [
        {
          type: 'reasoning',
          deltas: ['The user wants ', 'two cities; ', 'call the weather tool twice, ', 'then email.'],
        },
        { type: 'text', deltas: ['Let me check ', 'the weather ', 'in both cities.'] },
        { type: 'tool', name: 'get_weather', argumentDeltas: ['{"city":', '"Paris"}'] },
        { type: 'tool', name: 'get_weather', argumentDeltas: ['{"city":', '"Rome"}'] },
      ],
    };
  }
  const [email] = settled(calls, 'send_email');
  if (email === undefined) {
    const [paris, rome] = weather.map(celsiusOf);
    const forecast = `Paris is ${paris} °C, Rome ${rome} °C.`;
    const arguments_ = JSON.stringify({ to: 'team@example.com', subject: 'Forecast', body: forecast });
    return {
      delayMs: 120,
      usage: { inputTokens: 80, outputTokens: 24 },
      steps: [
        { type: 'text', deltas: [`Paris is ${paris} °C, `, `Rome ${rome} °C. `, 'Sending the email now.'] },
        { type: 'tool', name: 'send_email', argumentDeltas: [arguments_.slice(0, 20), arguments_.slice(20)] },
      ],
    };
  }
  const sent = email.status === 'completed' ? (email.result as { to?: unknown }) : undefined;
  const text =
    sent === undefined
      ? ['The email was not sent. ', 'Anything else?']
      : ['Email sent ', `to ${String(sent.to)}. `, 'Anything else?'];
  return { delayMs: 60, steps: [{ type: 'text', deltas: text }] };
}

/** The model: the real OpenAI-compatible service when the environment names one, else the scripted model. */
function demoModel(openAI: OpenAIUpstream | undefined, paced: boolean): { model: AnyAgentProvider; scripted: boolean } {
  if (openAI === undefined) {
    return { model: createLocalAgentProvider({ script: createScriptedModel(paced) }), scripted: true };
  }
  const model = createOpenAICompatibleAgentProvider({
    baseURL: openAI.baseURL,
    ...(openAI.apiKey === undefined ? {} : { apiKey: openAI.apiKey }),
    model: openAI.model ?? 'gpt-4o-mini',
  });
  return { model, scripted: false };
}

export interface DemoHostAgentOptions {
  /** Where `send_email` sends. */
  outbox?: DemoOutbox;
  /** Whether the scripted model streams at a pace one can watch. Default `true`. */
  paced?: boolean;
}

/** The host's agent: `get_weather` and `send_email` (which needs the user's approval) run on the server. */
export function createDemoHostAgent(openAI: OpenAIUpstream | undefined, options: DemoHostAgentOptions = {}) {
  const outbox = options.outbox ?? { sent: [] };
  const { model, scripted } = demoModel(openAI, options.paced ?? true);
  return createAgent({
    model,
    tools: createDemoTools(outbox),
    system: 'You look up the weather and email it when asked. Be brief.',
    maxSteps: 6,
    // The scripted model reads the conversation, not an input: its input only has the prompt its runs need.
    ...(scripted ? { modelInput: () => ({ prompt: '' }) } : {}),
  });
}
