import type { ServerResponse } from 'node:http';
import type { AgentCheckpoint, AgentCheckpointStorage } from '../../checkpoint/AgentCheckpoint';
import { createMemoryAgentCheckpointStorage } from '../../checkpoint/createMemoryAgentCheckpointStorage';
import type { AgentState } from '../../machines/agentState';
import { createAgentStore } from '../../machines/createAgentStore';
import type { AgentEvent } from '../../protocol/eventSchemas';
import type { AgentRunResult } from '../../providers/runAgentProvider';
import type { AgentConnectionState } from '../../runtime/connectionMachine';
import { createXChatRuntime, type XChatRuntime, type XChatSnapshot } from '../../runtime/createXChatRuntime';
import {
  answerRun,
  frame,
  requestedRun,
  runScopedEventLogProvider,
  serveFrames,
  startEventLogServer,
} from './eventLogServer';
import type { RecordedRequest } from './httpServer';
import { until } from './until';

/*
 * Drives the interaction runtime through one path of a connection model: a loopback SSE
 * server answers each request as the path scripted it (frames of one run, a drop, a stall,
 * a 503, a 410), a page may reload mid-run (a second runtime over the same checkpoint), and
 * every connection state the runtime reports to its subscribers is recorded.
 */

/** The session of every conversation under test. */
export const SESSION_ID = 's1';
/** Far above a loaded machine's pauses between the frames of one connection (200 ms was not, at load 20): only a stall outlasts it. */
export const IDLE_TIMEOUT_MS = 1000;
export const RECONNECT = { maxAttempts: 2, initialDelay: 1, maxDelay: 5 } as const;
/** The events of the run the server streams (`answerRun`). */
export const RUN_LENGTH = 10;
/**
 * How long the server thinks before it answers a request: longer than the runtime takes to
 * tell its subscribers (one task), so the state before the answer is one they see.
 */
const ANSWER_DELAY_MS = 10;

/** What the server does with one request. */
export interface ScriptedAnswer {
  /** 200 streams `sequences` of the run; 503 says it is overloaded; 410 no longer knows the cursor. */
  status: 200 | 410 | 503;
  /** The sequences of the run's events it sends, in order. */
  sequences: number[];
  /** After the frames: end the stream, drop the socket, or keep it open and silent. */
  after: 'end' | 'drop' | 'stall';
  /** The `Last-Event-ID` the request must carry: the cursor of the last event the client had. */
  lastEventId: string | undefined;
}

/** One path, as the server and the pages play it. */
export interface ConnectionPlan {
  answers: ScriptedAnswer[];
  /** The page reloads once its runtime applied `delivered` events; the checkpoint it saved is `valid` or made `invalid`. */
  reload?: { delivered: number; checkpoint: 'valid' | 'invalid' };
}

/** What a path left behind. */
export interface PlanOutcome {
  /** Every connection state the pages' subscribers saw, in order, the first page's then the reloaded one's. */
  seen: AgentConnectionState[];
  requests: RecordedRequest[];
  /** The run the runtime started. */
  runId: string;
  /** Every event the pages' stores were given, until the first page was left. */
  applied: AgentEvent[];
  /** The last page's snapshot. */
  snapshot: XChatSnapshot;
  /** How `request` settled, when the page that made it was not left. */
  result: PromiseSettledResult<AgentRunResult> | undefined;
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function serve(answer: ScriptedAnswer) {
  return async (response: ServerResponse, request: RecordedRequest) => {
    await pause(ANSWER_DELAY_MS);
    if (answer.status !== 200) {
      response.writeHead(answer.status, { 'content-type': 'application/json' });
      response.end(JSON.stringify({ error: answer.status === 410 ? 'cursor expired' : 'overloaded' }));
      return;
    }
    const run = answerRun(requestedRun(request).runId);
    await serveFrames(
      response,
      answer.sequences.map((sequence) => frame(run[sequence - 1] as AgentEvent)),
      answer.after,
    );
  };
}

/** A request the plan did not expect: refused, and counted. */
function unexpected(response: ServerResponse) {
  response.writeHead(400, { 'content-type': 'application/json' });
  response.end('{"error":"unexpected request"}');
}

/** A browser tab: a runtime over the checkpoint storage, whose saves stop when the tab is left. */
interface Page {
  runtime: XChatRuntime<{ prompt: string }>;
  seen: AgentConnectionState[];
  applied: AgentEvent[];
  leave(): void;
}

function openPage(storage: AgentCheckpointStorage, url: string, applied: AgentEvent[]): Page {
  let open = true;
  const pageStorage: AgentCheckpointStorage = {
    load: (sessionId) => storage.load(sessionId),
    save: async (checkpoint) => {
      if (open) await storage.save(checkpoint);
    },
    remove: (sessionId) => storage.remove(sessionId),
  };
  const runtime = createXChatRuntime({
    provider: runScopedEventLogProvider(url, { idleTimeoutMs: IDLE_TIMEOUT_MS }),
    sessionId: SESSION_ID,
    checkpointStorage: pageStorage,
    reconnect: RECONNECT,
  });
  const { store } = runtime;
  const dispatch = store.dispatch.bind(store);
  store.dispatch = (event, admission) => {
    if (open) applied.push(event as AgentEvent);
    dispatch(event, admission);
  };
  const seen = [runtime.getSnapshot().connectionState];
  const unsubscribe = runtime.subscribe(() => {
    const state = runtime.getSnapshot().connectionState;
    if (open && state !== seen.at(-1)) seen.push(state);
  });
  return {
    runtime,
    seen,
    applied,
    leave: () => {
      open = false;
      unsubscribe();
    },
  };
}

/** Breaks the saved checkpoint the way a hostile or corrupted storage would: a run status no version knows. */
async function corrupt(storage: AgentCheckpointStorage, runId: string): Promise<void> {
  const saved = JSON.parse(JSON.stringify(await storage.load(SESSION_ID))) as AgentCheckpoint;
  (saved.state.runs[runId] as { status: string }).status = 'exploded';
  await storage.save(saved);
}

/** Waits until the page streams nothing, then one more task for its subscribers to hear the last change. */
async function settle(page: Page): Promise<void> {
  await until(() => !page.runtime.getSnapshot().isRequesting, 'the run to stop streaming');
  await pause(10);
}

/**
 * Plays a plan: a fresh conversation (restored from an empty storage) requests one run; the
 * server answers each request as scripted; on `reload`, once the page applied the given
 * events, it saves its checkpoint and is left, and a second page restores the conversation.
 */
export async function runPlan(plan: ConnectionPlan): Promise<PlanOutcome> {
  const server = await startEventLogServer([...plan.answers.map(serve), unexpected]);
  const storage = createMemoryAgentCheckpointStorage();
  const applied: AgentEvent[] = [];
  try {
    const first = openPage(storage, server.url, applied);
    await until(() => first.seen.at(-1) === 'idle', 'the empty conversation to be restored');
    const request = first.runtime.request({ prompt: 'Summarize the log' });
    const settled = request.then(
      (value): PromiseSettledResult<AgentRunResult> => ({ status: 'fulfilled', value }),
      (reason: unknown): PromiseSettledResult<AgentRunResult> => ({ status: 'rejected', reason }),
    );
    const runIdOf = () => {
      const [made] = server.requests;
      return made === undefined ? '' : requestedRun(made).runId;
    };
    if (plan.reload === undefined) {
      const result = await settled;
      await settle(first);
      first.leave();
      return {
        seen: first.seen,
        requests: server.requests,
        runId: runIdOf(),
        applied,
        snapshot: first.runtime.getSnapshot(),
        result,
      };
    }
    const { delivered, checkpoint } = plan.reload;
    await until(
      () => first.runtime.getSnapshot().agentState.lastSequenceByRun[runIdOf()] === delivered,
      `the first page to apply ${delivered} events`,
    );
    await first.runtime.flushCheckpoint();
    first.leave();
    first.runtime.abort();
    await settled;
    if (checkpoint === 'invalid') await corrupt(storage, runIdOf());
    const second = openPage(storage, server.url, applied);
    await second.runtime.restored;
    await settle(second);
    second.leave();
    return {
      seen: [...first.seen, ...second.seen],
      requests: server.requests,
      runId: runIdOf(),
      applied,
      snapshot: second.runtime.getSnapshot(),
      result: undefined,
    };
  } finally {
    await server.close();
  }
}

/** The AgentState of a store given the run's first `count` events, and nothing else. */
export function replayed(runId: string, count: number): AgentState {
  const store = createAgentStore();
  for (const event of answerRun(runId).slice(0, count)) store.dispatch(event);
  return store.getSnapshot();
}

/** The state with its run id replaced, to compare runs the runtime gave different ids. */
export function withRunId(state: AgentState, runId: string, as = 'run'): unknown {
  return JSON.parse(JSON.stringify(state).replaceAll(runId, as));
}
