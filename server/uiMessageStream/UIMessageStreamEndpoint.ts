import type { AgentRunState, AgentState } from '../../machines/agentState';
import type { AgentCommand } from '../../protocol/commandSchemas';
import type { AISDKUIMessage } from '../../providers/ai-sdk/aiSdkMessages';
import type { AgentCommandOutcome, AgentEventLog } from '../AgentEventLog';
import { AgentHostError } from '../AgentHostError';
import { commandOutcomeError } from '../commandOutcomeError';
import type { AgentHostRunRequest } from '../hostRequests';
import { isSessionId, parseHostCommand, parseRunRequest, readJsonBody } from '../hostRequests';
import type { SessionStates } from '../SessionStates';
import { continuationOf, missingInput } from '../waitingRuns';
import { chatAnswersOf } from './chatAnswers';
import { createUIMessageStreamBody, type UIMessageStreamRuns } from './createUIMessageStreamBody';
import { parseChatRequest, promptOf } from './parseChatRequest';
import { UIMessageChunkEncoder } from './UIMessageChunkEncoder';

/** What a chat request gives `toInput`: the new user message's text, every message, and the app's own body fields. */
export interface AgentHostChatInputRequest {
  prompt: string;
  messages: AISDKUIMessage[];
  body: Record<string, unknown>;
}

/** The host's AI SDK UI message stream endpoints (`POST {basePath}/chat`, `GET {basePath}/chat/:chatId/stream`). */
export interface AgentHostUIMessageStreamOptions {
  /** The provider (by its name in `providers`) a new user message starts a run of. */
  provider: string;
  /**
   * The run's input from the request; what it returns is checked as `POST /runs` checks an
   * input (plain JSON, the provider's `parseInput`). A throw refuses the request
   * (`400 invalid_input`). Default: `{ prompt }`.
   */
  toInput?: (request: AgentHostChatInputRequest) => unknown;
}

export interface UIMessageStreamEndpointOptions extends AgentHostUIMessageStreamOptions {
  log: AgentEventLog;
  sessions: SessionStates;
  basePath: string;
  maxBodyBytes: number;
  pageSize: number;
  heartbeatMs: number;
  /** The host's `authorize`: whom the request is allowed for, or a throw. */
  authorize: (request: Request, access: { sessionId: string; action: 'run' | 'read' }) => Promise<string | undefined>;
  startRun: (
    sessionId: string,
    request: AgentHostRunRequest,
    options: { clientId?: string | undefined },
  ) => Promise<{ runId: string; cursor: string | null }>;
  executeCommand: (command: AgentCommand) => Promise<AgentCommandOutcome>;
  /** Looks for the session's runs whose instance is gone (or only `runId`), while a stream waits. */
  onIdle: (sessionId: string, runId: string | undefined) => Promise<void>;
}

/** A request for the endpoints: `chat` (`POST .../chat`) or `stream` (`GET .../chat/:chatId/stream`). */
export type UIMessageStreamRoute = { endpoint: 'chat' } | { endpoint: 'stream'; chatId: string };

const CHAT = /^\/chat\/?$/;
const STREAM = /^\/chat\/([^/]+)\/stream\/?$/;

const STREAM_HEADERS = {
  'content-type': 'text/event-stream',
  'cache-control': 'no-cache',
  connection: 'keep-alive',
  'x-vercel-ai-ui-message-stream': 'v1',
  'x-accel-buffering': 'no',
};

/** The first run of the chain `run` ends: the run a user message started, whose id is the assistant message's. */
function rootOf(state: AgentState, run: AgentRunState): AgentRunState {
  let root = run;
  const seen = new Set<string>([run.id]);
  for (;;) {
    const previous = root.continuesRunId === undefined ? undefined : state.runs[root.continuesRunId];
    if (previous === undefined || seen.has(previous.id)) return root;
    seen.add(previous.id);
    root = previous;
  }
}

/** The runs from the chain's first to `run`, in order. */
function chainOf(state: AgentState, run: AgentRunState): string[] {
  const chain = [run.id];
  let current = run;
  for (;;) {
    const previous = current.continuesRunId === undefined ? undefined : state.runs[current.continuesRunId];
    if (previous === undefined || chain.includes(previous.id)) return chain.reverse();
    chain.push(previous.id);
    current = previous;
  }
}

const newestOf = (runs: Iterable<AgentRunState>): AgentRunState | undefined => {
  let newest: AgentRunState | undefined;
  for (const run of runs) if (newest === undefined || run.startedAt >= newest.startedAt) newest = run;
  return newest;
};

/**
 * The AI SDK's chat wire on the host, so a `useChat` app (`DefaultChatTransport`) talks to
 * it unchanged: the chat id is the session id. A POST whose last message is the user's starts
 * a run of the configured provider and answers with its UI message stream. One whose last
 * message is the assistant's, carrying tool parts in `approval-responded` or with a client
 * tool's `output-available` / `output-error`, answers what the session waits for through
 * the host's commands (each answer's key derived from its approval or tool call, so a
 * request sent again applies nothing twice), and streams the run that continues the waiting
 * one. The stream-resume GET replays the running run's message from its chain's first run
 * (the protocol's resume replays; the client replaces the message), or answers `204`.
 */
export class UIMessageStreamEndpoint {
  constructor(private readonly options: UIMessageStreamEndpointOptions) {}

  /** The endpoint a request is for, or `undefined` when it is for none of these. */
  routeOf(request: Request): UIMessageStreamRoute | undefined {
    const { basePath } = this.options;
    const { pathname } = new URL(request.url);
    if (basePath !== '' && !pathname.startsWith(`${basePath}/`)) return undefined;
    const path = pathname.slice(basePath.length);
    if (CHAT.test(path)) {
      if (request.method !== 'POST') {
        throw new AgentHostError('method_not_allowed', `chat takes POST, not ${request.method}`, { allow: 'POST' });
      }
      return { endpoint: 'chat' };
    }
    const match = STREAM.exec(path);
    if (match === null) return undefined;
    if (request.method !== 'GET') {
      throw new AgentHostError('method_not_allowed', `stream takes GET, not ${request.method}`, { allow: 'GET' });
    }
    let chatId: string;
    try {
      chatId = decodeURIComponent(match[1] as string);
    } catch {
      throw new AgentHostError('invalid_request', 'The chat id in the path is not valid percent-encoding');
    }
    if (!isSessionId(chatId)) throw new AgentHostError('invalid_request', 'The chat id is not a valid id');
    return { endpoint: 'stream', chatId };
  }

  handle(request: Request, route: UIMessageStreamRoute): Promise<Response> {
    return route.endpoint === 'chat' ? this.chat(request) : this.resume(request, route.chatId);
  }

  private async chat(request: Request): Promise<Response> {
    const { options } = this;
    const chat = parseChatRequest(await readJsonBody(request, options.maxBodyBytes));
    const sessionId = chat.id;
    const clientId = await options.authorize(request, { sessionId, action: 'run' });
    const last = chat.messages[chat.messages.length - 1] as AISDKUIMessage;
    if (last.role === 'assistant') return this.answer(request, sessionId, last);
    if (last.role !== 'user') {
      throw new AgentHostError(
        'invalid_request',
        "Invalid chat request: the last message must be the user's or the assistant's",
      );
    }
    const prompt = promptOf(last);
    let input: unknown = { prompt };
    if (options.toInput !== undefined) {
      try {
        input = options.toInput({ prompt, messages: chat.messages, body: chat.body });
      } catch (error) {
        const reason = error instanceof Error ? error.message : 'refused';
        throw new AgentHostError('invalid_input', `Invalid input for "${options.provider}": ${reason}`);
      }
    }
    const run = parseRunRequest(
      input === undefined ? { provider: options.provider } : { provider: options.provider, input },
    );
    const { runId, cursor } = await options.startRun(sessionId, run, { clientId });
    return this.stream(request, sessionId, runId, cursor ?? undefined, { runIds: [runId] });
  }

  /** Applies the answers in the last assistant message and streams the run they continue. */
  private async answer(request: Request, sessionId: string, message: AISDKUIMessage): Promise<Response> {
    const { options } = this;
    const before = await options.sessions.sync(sessionId);
    const answers = await chatAnswersOf(before.state, sessionId, message);
    if (answers.runIds.length === 0) {
      throw new AgentHostError(
        'invalid_request',
        "Invalid chat request: the last message is the assistant's and answers nothing this chat waits for (send a user message, or tool parts in approval-responded, output-available or output-error)",
      );
    }
    for (const command of answers.commands) {
      const parsed = parseHostCommand(command);
      if (!parsed.success) throw new AgentHostError('invalid_request', parsed.message);
      const outcome = await options.executeCommand(parsed.value);
      if (outcome.status === 'failed') throw commandOutcomeError(outcome.error);
    }
    const answered = answers.commands.length > 0 ? answers.commands.map((command) => command.runId) : answers.runIds;
    const { state } = await options.sessions.sync(sessionId);
    const run = newestOf(answered.flatMap((runId) => state.runs[runId] ?? []));
    if (run === undefined) throw new AgentHostError('unknown_run', 'The runs the answers are about are gone');
    const messageId = rootOf(state, run).id;
    const after = before.cursor;
    // A run that waits for its answers while it runs goes on: the rest of it.
    if (run.status === 'running') return this.stream(request, sessionId, messageId, after, { runIds: [run.id] });
    const continuation = continuationOf(state, run.id);
    if (continuation !== undefined) {
      // Continued before this request (it was sent before): its events are older than the cursor.
      const known = before.state.runs[continuation.id] !== undefined;
      return this.stream(request, sessionId, messageId, known ? undefined : after, { runIds: [continuation.id] });
    }
    if (missingInput(state, run).length > 0) {
      // Answered in part: the run waits for the rest, as the message shows.
      return this.stream(request, sessionId, messageId, after, { runIds: [] }, true);
    }
    return this.stream(request, sessionId, messageId, after, { continuing: [run.id] });
  }

  private async resume(request: Request, chatId: string): Promise<Response> {
    const { options } = this;
    await options.authorize(request, { sessionId: chatId, action: 'read' });
    const { state } = await options.sessions.sync(chatId);
    const active = newestOf(Object.values(state.runs).filter((run) => run.status === 'running'));
    if (active === undefined) return new Response(null, { status: 204 });
    const chain = chainOf(state, active);
    return this.stream(request, chatId, chain[0] as string, undefined, { runIds: chain });
  }

  private stream(
    request: Request,
    sessionId: string,
    messageId: string,
    after: string | undefined,
    runs: UIMessageStreamRuns,
    waiting = false,
  ): Response {
    const { log, pageSize, heartbeatMs, onIdle } = this.options;
    const body = createUIMessageStreamBody({
      log,
      sessionId,
      after,
      runs,
      encoder: new UIMessageChunkEncoder(messageId),
      ...(waiting ? { leading: [{ type: 'finish', finishReason: 'tool-calls' }], empty: true } : {}),
      pageSize,
      heartbeatMs,
      onIdle: (runId) => onIdle(sessionId, runId),
      signal: request.signal,
    });
    return new Response(body, { status: 200, headers: STREAM_HEADERS });
  }
}
