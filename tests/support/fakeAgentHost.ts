import type { ServerResponse } from 'node:http';
import type { AgentCommand } from '../../protocol/commandSchemas';
import { type AgentEventFactory, createAgentEventFactory } from '../../protocol/createAgentEventFactory';
import type { AgentEvent } from '../../protocol/eventSchemas';
import { SSE_HEADERS } from './eventLogServer';
import { type RecordedRequest, startHttpServer } from './httpServer';

/** Where the fake host is mounted on its server: the provider's `baseURL` is `<server>/api/agent`. */
export const FAKE_HOST_MOUNT = '/api/agent';

/** The body of a `POST /runs` the fake host accepted. */
export interface FakeRunStart {
  provider: string;
  input: unknown;
  runId: string;
  continuation?: unknown;
}

/**
 * A scripted answer, used once, in place of the documented behaviour of one route:
 * - `refuse`: the host's JSON error with that status;
 * - `json`: that status and body;
 * - `lose` (runs only): the run starts, but the socket is destroyed before the answer;
 * - `hang`: no answer at all;
 * - `cut` (events only): the first `frames` frames of what the route would stream, then, by `ending`, the
 *   stream ends cleanly (`end`), the host drops the reader (`dropped`: a last frame
 *   `event: dropped`), the socket is destroyed (`destroy`), or nothing more comes (`stall`);
 * - `raw` (events only): these SSE frames as they are, then the stream ends.
 */
export type FakeAnswer =
  | { type: 'refuse'; status: number; code: string; message?: string }
  | { type: 'json'; status: number; body: unknown }
  | { type: 'lose' }
  | { type: 'hang' }
  | { type: 'cut'; frames: number; ending: 'end' | 'dropped' | 'destroy' | 'stall' }
  | { type: 'raw'; frames: readonly string[] };

export type FakeRoute = 'POST /runs' | 'GET /events' | 'POST /commands';

export interface FakeAgentHostOptions {
  /** The only session the host knows. Default `s1`. */
  sessionId?: string;
  /** The events a started run writes to the log, all at once. Default `answerRunScript`. */
  runScript?: (events: AgentEventFactory, run: FakeRunStart) => AgentEvent[];
  /** The events a command is answered with (also written to the log). Default none. */
  commandScript?: (events: AgentEventFactory, command: AgentCommand) => AgentEvent[];
}

export interface FakeAgentHost {
  /** The provider's `baseURL`. */
  baseURL: string;
  /** Every request, in arrival order (paths relative to the server, with the mount). */
  requests: RecordedRequest[];
  /** The session's log. */
  log: Array<{ cursor: string; event: AgentEvent }>;
  /** Queues a one-time answer for a route; answers of one route are used in order. */
  answerNext(route: FakeRoute, answer: FakeAnswer): void;
  /** The requests of one route. */
  requestsOf(route: FakeRoute): RecordedRequest[];
  /** Resolves when the client closed the connection of request `index`. */
  closed(index: number): Promise<void>;
  close(): Promise<void>;
}

/** `run.started`, the user's prompt, an assistant answer in three deltas, `run.completed`: 8 events. */
export function answerRunScript(events: AgentEventFactory, run: FakeRunStart): AgentEvent[] {
  const { prompt } = (run.input ?? {}) as { prompt?: string };
  const continuesRunId = (run.continuation as { runId?: string } | undefined)?.runId;
  return [
    events.create('run.started', continuesRunId === undefined ? { input: run.input } : { continuesRunId }),
    events.create('message.started', { messageId: `${run.runId}-prompt`, role: 'user', content: prompt ?? '' }),
    events.create('message.completed', { messageId: `${run.runId}-prompt` }),
    events.create('message.started', { messageId: `${run.runId}-answer`, role: 'assistant' }),
    ...['Three ', 'errors', '.'].map((delta) =>
      events.create('message.delta', { messageId: `${run.runId}-answer`, delta }),
    ),
    events.create('message.completed', { messageId: `${run.runId}-answer` }),
    events.create('run.completed', {}),
  ];
}

const TERMINALS = new Set(['run.completed', 'run.failed', 'run.cancelled']);
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function json(response: ServerResponse, status: number, body: unknown): void {
  response.writeHead(status, { 'content-type': 'application/json' });
  response.end(JSON.stringify(body));
}

function refuse(response: ServerResponse, status: number, code: string, message = `refused: ${code}`): void {
  json(response, status, { error: { code, message } });
}

/**
 * A small host implementing the HTTP API of `docs/server.md` for one session, on a real
 * loopback server: runs write scripted events to an in-memory log at once (cursors
 * `1700000000000-<n>`, opaque to the client), the events route streams a run's entries after
 * `Last-Event-ID` or `?after=` (a heartbeat comment first), follows the log live, and ends
 * after the run's terminal event; commands answer with scripted events, which go to the log
 * too. `answerNext` scripts failures.
 */
export async function startFakeAgentHost(options: FakeAgentHostOptions = {}): Promise<FakeAgentHost> {
  const sessionId = options.sessionId ?? 's1';
  const runScript = options.runScript ?? answerRunScript;
  const log: FakeAgentHost['log'] = [];
  const factories = new Map<string, AgentEventFactory>();
  const answers = new Map<FakeRoute, FakeAnswer[]>();
  let clock = 1_000;

  const factoryOf = (runId: string): AgentEventFactory => {
    let factory = factories.get(runId);
    if (factory === undefined) {
      factory = createAgentEventFactory({
        sessionId,
        runId,
        now: () => clock++,
        createEventId: (sequence) => `${runId}-e${sequence}`,
      });
      factories.set(runId, factory);
    }
    return factory;
  };
  /** Streams waiting for the log to grow. */
  const appended = new Set<() => void>();
  const append = (events: readonly AgentEvent[]) => {
    for (const event of events) log.push({ cursor: `1700000000000-${log.length + 1}`, event });
    const waiting = [...appended];
    appended.clear();
    for (const resolve of waiting) resolve();
  };

  const routeOf = (method: string, path: string): FakeRoute | undefined => {
    const prefix = `${FAKE_HOST_MOUNT}/sessions/${encodeURIComponent(sessionId)}/`;
    if (!path.startsWith(prefix)) return undefined;
    const route = `${method} /${path.slice(prefix.length)}`;
    return route === 'POST /runs' || route === 'GET /events' || route === 'POST /commands' ? route : undefined;
  };

  /** Starts a run and answers, or refuses it; `lose` starts it and destroys the socket instead of answering. */
  const startRun = (request: RecordedRequest, response: ServerResponse, lose: boolean) => {
    let body: FakeRunStart;
    try {
      body = JSON.parse(request.body) as FakeRunStart;
    } catch {
      refuse(response, 400, 'invalid_request');
      return;
    }
    if (typeof body.provider !== 'string' || typeof body.runId !== 'string') {
      refuse(response, 400, 'invalid_request');
      return;
    }
    if (factories.has(body.runId)) {
      refuse(response, 409, 'run_exists', `The run "${body.runId}" exists`);
      return;
    }
    const cursor = log.at(-1)?.cursor ?? null;
    append(runScript(factoryOf(body.runId), body));
    if (lose) response.socket?.destroy();
    else json(response, 202, { runId: body.runId, cursor });
  };

  const frameOf = (entry: { cursor: string; event: AgentEvent }) =>
    `id: ${entry.cursor}\ndata: ${JSON.stringify(entry.event)}\n\n`;

  /** Ends a stream cut short as the answer says. */
  const endCut = async (response: ServerResponse, ending: 'end' | 'dropped' | 'destroy' | 'stall', cursor: unknown) => {
    if (ending === 'dropped') response.end(`event: dropped\ndata: ${JSON.stringify({ cursor })}\n\n`);
    else if (ending === 'destroy') {
      // Long enough for the frames to reach the client before the socket goes.
      await pause(20);
      response.socket?.destroy();
    } else if (ending === 'end') response.end();
  };

  /** The run's entries after the cursor, then live ones as they are appended, up to its terminal event. */
  const streamEvents = async (request: RecordedRequest, response: ServerResponse, answer?: FakeAnswer) => {
    const url = new URL(request.url, 'http://host');
    const runId = url.searchParams.get('runId') ?? undefined;
    const header = request.headers['last-event-id'];
    const after = (typeof header === 'string' ? header : undefined) ?? url.searchParams.get('after') ?? undefined;
    let position = 0;
    if (after !== undefined) {
      const index = log.findIndex((entry) => entry.cursor === after);
      if (index === -1) {
        refuse(response, 422, 'invalid_cursor', `"${after}" is not a cursor of this session`);
        return;
      }
      position = index + 1;
    }
    response.writeHead(200, SSE_HEADERS);
    response.write(': keep-alive\n\n');
    if (answer?.type === 'raw') {
      for (const frame of answer.frames) response.write(frame);
      response.end();
      return;
    }
    const cut = answer?.type === 'cut' ? answer : undefined;
    let sent = 0;
    let lastCursor: string | undefined = after;
    for (;;) {
      if (cut !== undefined && sent === cut.frames) {
        await endCut(response, cut.ending, lastCursor ?? null);
        return;
      }
      const entry = log[position];
      if (entry === undefined) {
        await new Promise<void>((resolve) => appended.add(resolve));
        if (response.destroyed) return;
        continue;
      }
      position += 1;
      if (runId !== undefined && entry.event.runId !== runId) continue;
      response.write(frameOf(entry));
      sent += 1;
      lastCursor = entry.cursor;
      await pause(1);
      if (TERMINALS.has(entry.event.type)) {
        response.end();
        return;
      }
    }
  };

  const runCommand = (request: RecordedRequest, response: ServerResponse) => {
    let command: AgentCommand;
    try {
      command = JSON.parse(request.body) as AgentCommand;
    } catch {
      refuse(response, 400, 'invalid_command');
      return;
    }
    if (command.sessionId !== sessionId) {
      refuse(response, 403, 'session_mismatch', `The command names session "${command.sessionId}"`);
      return;
    }
    const factory = factories.get(command.runId);
    if (factory === undefined) {
      refuse(response, 404, 'unknown_run', `No run "${command.runId}"`);
      return;
    }
    const events = options.commandScript?.(factory, command) ?? [];
    append(events);
    json(response, 200, { status: 'accepted', events });
  };

  const server = await startHttpServer(async (request, response) => {
    const path = new URL(request.url, 'http://host').pathname;
    const route = routeOf(request.method, path);
    if (route === undefined) {
      refuse(response, 404, 'not_found');
      return;
    }
    const answer = answers.get(route)?.shift();
    if (answer?.type === 'hang') return;
    if (answer?.type === 'refuse') refuse(response, answer.status, answer.code, answer.message);
    else if (answer?.type === 'json') json(response, answer.status, answer.body);
    else if (route === 'POST /runs') startRun(request, response, answer?.type === 'lose');
    else if (route === 'GET /events') await streamEvents(request, response, answer);
    else runCommand(request, response);
  });

  return {
    baseURL: `${server.url}${FAKE_HOST_MOUNT}`,
    requests: server.requests,
    log,
    answerNext(route, answer) {
      const queue = answers.get(route) ?? [];
      queue.push(answer);
      answers.set(route, queue);
    },
    requestsOf: (route) =>
      server.requests.filter(
        (request) => routeOf(request.method, new URL(request.url, 'http://host').pathname) === route,
      ),
    closed: (index) => server.closed(index),
    close: () => server.close(),
  };
}
