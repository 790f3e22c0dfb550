import type { AgentRunState, AgentState } from '../../machines/agentState';
import type { AgentCommand } from '../../protocol/commandSchemas';
import { randomId } from '../../protocol/randomId';
import type { AISDKUIMessage } from '../../providers/ai-sdk/aiSdkMessages';
import type { AgentCommandOutcome } from '../AgentEventLog';
import { AgentEventLogError } from '../AgentEventLogError';
import { AgentHostError } from '../AgentHostError';
import { commandOutcomeError } from '../commandOutcomeError';
import type { AgentHostRunRequest } from '../hostRequests';
import { isSessionId, parseHostCommand, parseRunRequest, readJsonBody } from '../hostRequests';
import type { SessionStates } from '../SessionStates';
import type { StreamRunSelection } from '../StreamRuns';
import { continuationOf, missingInput, startsAfterOf } from '../waitingRuns';
import { chatAnswersOf } from './chatAnswers';
import { parseChatRequest, promptOf } from './parseChatRequest';
import { UIMessageChunkEncoder } from './UIMessageChunkEncoder';
import { UIMessageStreamWire, uiMessageStreamOf } from './UIMessageStreamWire';

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

/** A UI message stream to open: where in the log it starts, the runs it shows, and its wire. */
export interface UIMessageStreamOpening {
  after: string | undefined;
  runs: Exclude<StreamRunSelection, undefined>;
  wire: UIMessageStreamWire;
}

export interface UIMessageStreamEndpointOptions extends AgentHostUIMessageStreamOptions {
  sessions: SessionStates;
  basePath: string;
  maxBodyBytes: number;
  /** The host's `authorize`: whom the request is allowed for, or a throw. */
  authorize: (request: Request, access: { sessionId: string; action: 'run' | 'read' }) => Promise<string | undefined>;
  startRun: (
    sessionId: string,
    request: AgentHostRunRequest,
    options: { clientId?: string | undefined },
  ) => Promise<{ runId: string; cursor: string | null }>;
  executeCommand: (command: AgentCommand) => Promise<AgentCommandOutcome>;
  /**
   * Opens the host's event stream of the session for the request, writing `opening.wire`:
   * authorization asked again as the stream goes, the shared feed, the bounds on readers
   * catching up and on slow readers. Rejects as its first read of the log is refused.
   */
  openStream: (
    request: Request,
    sessionId: string,
    opening: UIMessageStreamOpening,
  ) => Promise<ReadableStream<Uint8Array>>;
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
    // The run's id is chosen here so that its stream opens before it starts: a host with no
    // place for another reader catching up answers 503 with nothing started, and the run's
    // events all come after the session's cursor now.
    const runId = randomId();
    const run = parseRunRequest({ provider: options.provider, runId, ...(input === undefined ? {} : { input }) });
    const { cursor } = await options.sessions.sync(sessionId);
    const body = await this.open(request, sessionId, runId, cursor, { runIds: [runId] });
    try {
      await options.startRun(sessionId, run, { clientId });
    } catch (error) {
      await body.cancel();
      throw error;
    }
    return streamResponse(body);
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
    const root = rootOf(state, run);
    const after = before.cursor;
    // Opened once the answers are applied: a request refused then (503) is sent again, and
    // its answers, keyed by their approvals and tool calls, apply nothing twice.
    let body: ReadableStream<Uint8Array>;
    if (run.status === 'running') {
      // A run that waits for its answers while it runs goes on: the rest of it.
      body = await this.open(request, sessionId, root.id, after, { runIds: [run.id] });
    } else {
      const continuation = continuationOf(state, run.id);
      if (continuation !== undefined) {
        // Continued before this request (it was sent before): its events are older than the
        // cursor, and newer than where the message's first run started.
        const known = before.state.runs[continuation.id] !== undefined;
        const from = known ? startsAfterOf(root) : after;
        body = await this.open(request, sessionId, root.id, from, { runIds: [continuation.id] });
      } else if (missingInput(state, run).length > 0) {
        // Answered in part: the run waits for the rest, as the message shows.
        return streamResponse(uiMessageStreamOf(root.id, [{ type: 'finish', finishReason: 'tool-calls' }]));
      } else {
        body = await this.open(request, sessionId, root.id, after, { continuing: [run.id] });
      }
    }
    return streamResponse(body);
  }

  /** Replays the running run's message from where its chain's first run started in the log. */
  private async resume(request: Request, chatId: string): Promise<Response> {
    const { options } = this;
    await options.authorize(request, { sessionId: chatId, action: 'read' });
    const { state } = await options.sessions.sync(chatId);
    const active = newestOf(Object.values(state.runs).filter((run) => run.status === 'running'));
    if (active === undefined) return new Response(null, { status: 204 });
    const chain = chainOf(state, active);
    const root = state.runs[chain[0] as string] as AgentRunState;
    return streamResponse(await this.open(request, chatId, root.id, startsAfterOf(root), { runIds: chain }));
  }

  /**
   * Opens the UI message stream of `messageId` after `after`; when the log trimmed past that
   * cursor, from the oldest entry it holds (what it still has of the message).
   */
  private async open(
    request: Request,
    sessionId: string,
    messageId: string,
    after: string | undefined,
    runs: UIMessageStreamOpening['runs'],
  ): Promise<ReadableStream<Uint8Array>> {
    const wire = () => new UIMessageStreamWire(new UIMessageChunkEncoder(messageId));
    try {
      return await this.options.openStream(request, sessionId, { after, runs, wire: wire() });
    } catch (error) {
      if (after === undefined || !AgentEventLogError.isInstance(error) || error.code !== 'cursor_expired') throw error;
      return this.options.openStream(request, sessionId, { after: undefined, runs, wire: wire() });
    }
  }
}

function streamResponse(body: ReadableStream<Uint8Array> | string): Response {
  return new Response(body, { status: 200, headers: STREAM_HEADERS });
}
