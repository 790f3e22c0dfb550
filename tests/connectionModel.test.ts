import { getSimplePaths } from '@xstate/graph';
import { beforeAll, describe, expect, it } from 'vitest';
import { assign, type StateValueFrom, setup } from 'xstate';
import type { AgentProviderError } from '../providers/AgentProviderError';
import type { AgentConnectionState } from '../runtime/connectionMachine';
import {
  type ConnectionPlan,
  type PlanOutcome,
  RECONNECT,
  RUN_LENGTH,
  replayed,
  runPlan,
  type ScriptedAnswer,
  withRunId,
} from './support/connectionHarness';
import { requestedRun } from './support/eventLogServer';

/*
 * What a user should see of a conversation's connection while the server misbehaves. Each
 * event of the model is a fault (or a success) the loopback server or the page plays; each
 * state names the `connectionState` the runtime must report. Every simple path to a final
 * state runs against a fresh runtime and a server scripted for that path.
 */

type ModelEvent =
  /** The storage holds no checkpoint: a fresh conversation. */
  | { type: 'checkpoint.empty' }
  | { type: 'user.request' }
  /** The server streams the next events of the run (after a resume, the last one again first). */
  | { type: 'server.sends' }
  /** The server streams the rest of the run and ends the stream. */
  | { type: 'server.ends' }
  /** The server closes the socket mid-stream. */
  | { type: 'server.drops' }
  /** The server keeps the stream open and says nothing for longer than the idle timeout. */
  | { type: 'server.stalls' }
  /** The server answers 503 to a reconnect. */
  | { type: 'server.refuses' }
  /** The server answers 410 to a cursor it no longer knows. */
  | { type: 'server.forgetsCursor' }
  /** The resumed stream's first new event skips two sequences. */
  | { type: 'server.skips' }
  /** The page is closed mid-stream and opened again: a second runtime over the same checkpoint. */
  | { type: 'page.reloads' }
  | { type: 'checkpoint.valid' }
  /** The saved checkpoint was corrupted before the page opened again. */
  | { type: 'checkpoint.invalid' };

const connectionModel = setup({
  types: {
    /**
     * `attempts`: reconnect attempts since a connection last delivered, as the runner counts
     * them. `resumed`: the stream broke or the page reloaded once; it tells a connection after
     * a recovery from the first, so a simple path may recover and go on.
     */
    context: {} as { attempts: number; resumed: boolean },
    events: {} as ModelEvent,
  },
  guards: {
    budgetLeft: ({ context }) => context.attempts < RECONNECT.maxAttempts,
    // A stall is a drop the client must notice by itself (the idle timeout): shown on the
    // first connection, it would only repeat, at 200 ms a path, what drops show after a resume.
    firstConnection: ({ context }) => !context.resumed,
  },
  actions: {
    countBreak: assign({ attempts: 1, resumed: true }),
    countRefusal: assign({ attempts: ({ context }) => context.attempts + 1 }),
    startBudgetOver: assign({ attempts: 0 }),
    reload: assign({ attempts: 0, resumed: true }),
  },
}).createMachine({
  id: 'connectionModel',
  context: { attempts: 0, resumed: false },
  initial: 'opening',
  states: {
    opening: { on: { 'checkpoint.empty': 'idle' } },
    idle: { on: { 'user.request': 'connecting' } },
    connecting: { on: { 'server.sends': 'connected' } },
    connected: {
      on: {
        'server.ends': 'completed',
        'server.drops': { target: 'reconnecting', actions: 'countBreak' },
        'server.stalls': { guard: 'firstConnection', target: 'reconnecting', actions: 'countBreak' },
        'page.reloads': { target: 'restoring', actions: 'reload' },
      },
    },
    restoring: { on: { 'checkpoint.valid': 'reconnecting', 'checkpoint.invalid': 'checkpointRefused' } },
    reconnecting: {
      on: {
        'server.sends': { target: 'connected', actions: 'startBudgetOver' },
        'server.refuses': [
          { guard: 'budgetLeft', target: 'reconnecting', reenter: true, actions: 'countRefusal' },
          { target: 'gaveUp' },
        ],
        'server.forgetsCursor': 'unrecoverable',
        'server.skips': 'unrecoverable',
      },
    },
    completed: { type: 'final' },
    gaveUp: { type: 'final' },
    unrecoverable: { type: 'final' },
    checkpointRefused: { type: 'final' },
  },
});

type ModelState = StateValueFrom<typeof connectionModel>;
type FinalState = Extract<ModelState, 'completed' | 'gaveUp' | 'unrecoverable' | 'checkpointRefused'>;

/** The connection state the runtime reports in each model state. */
const SEEN: Record<ModelState, AgentConnectionState> = {
  opening: 'restoring',
  idle: 'idle',
  connecting: 'connecting',
  connected: 'connected',
  restoring: 'restoring',
  reconnecting: 'reconnecting',
  completed: 'idle',
  gaveUp: 'failed',
  unrecoverable: 'unrecoverable',
  checkpointRefused: 'failed',
};

/** Events of the run one `server.sends` streams. */
const SENT_PER_STEP = 3;
const range = (from: number, to: number) => Array.from({ length: Math.max(0, to - from + 1) }, (_, n) => from + n);

interface ModelPath {
  state: { value: ModelState };
  steps: Array<{ event: ModelEvent | { type: 'xstate.init' }; state: { value: ModelState } }>;
}

/** What a path expects of the runtime, and the plan the server and the pages play for it. */
interface PathExpectation {
  name: string;
  final: FinalState;
  plan: ConnectionPlan;
  /** Each state the subscribers must see, in order (a state held across several steps once). */
  states: AgentConnectionState[];
  /** The events of the run the client had when the stream stopped for good. */
  delivered: number;
  lastEvent: ModelEvent['type'];
}

/** Turns a path into the server's answers, request by request, and what the user must see. */
function expectationOf(path: ModelPath): PathExpectation {
  const answers: ScriptedAnswer[] = [];
  let delivered = 0;
  /** The request the server has yet to answer, and what its answer streams so far. */
  let pending: { lastEventId: string | undefined; sequences: number[] } | undefined;
  let reload: ConnectionPlan['reload'];
  const resumeRequest = () => {
    pending = { lastEventId: String(delivered), sequences: [] };
  };
  const answer = (status: ScriptedAnswer['status'], after: ScriptedAnswer['after'] = 'end') => {
    if (pending === undefined) throw new Error('the model answered a request nobody made');
    answers.push({ status, after, ...pending });
    pending = undefined;
  };
  const steps = path.steps.slice(1) as Array<{ event: ModelEvent; state: { value: ModelState } }>;
  for (const { event, state } of steps) {
    switch (event.type) {
      case 'checkpoint.empty':
        break;
      case 'user.request':
        pending = { lastEventId: undefined, sequences: [] };
        break;
      case 'server.sends':
        if (pending === undefined) throw new Error('nothing to send on');
        // A resumed stream starts with the last event the client has: it must not be applied twice.
        if (pending.lastEventId !== undefined) pending.sequences.push(delivered);
        pending.sequences.push(...range(delivered + 1, delivered + SENT_PER_STEP));
        delivered += SENT_PER_STEP;
        break;
      case 'server.ends':
        pending?.sequences.push(...range(delivered + 1, RUN_LENGTH));
        delivered = RUN_LENGTH;
        answer(200, 'end');
        break;
      case 'server.drops':
        answer(200, 'drop');
        resumeRequest();
        break;
      case 'server.stalls':
        answer(200, 'stall');
        resumeRequest();
        break;
      case 'page.reloads':
        // The first page's stream stays open and silent until the page is left.
        answer(200, 'stall');
        reload = { delivered, checkpoint: 'valid' };
        break;
      case 'checkpoint.valid':
        resumeRequest();
        break;
      case 'checkpoint.invalid':
        if (reload !== undefined) reload.checkpoint = 'invalid';
        break;
      case 'server.refuses':
        answer(503);
        if (state.value !== 'gaveUp') resumeRequest();
        break;
      case 'server.forgetsCursor':
        answer(410);
        break;
      case 'server.skips':
        if (pending !== undefined) pending.sequences = range(delivered + 3, RUN_LENGTH);
        answer(200, 'end');
        break;
    }
  }
  const states: AgentConnectionState[] = [];
  for (const { state } of path.steps) if (SEEN[state.value] !== states.at(-1)) states.push(SEEN[state.value]);
  const last = steps.at(-1)?.event.type ?? 'checkpoint.empty';
  return {
    name: steps.map(({ event }) => event.type).join(' → '),
    final: path.state.value as FinalState,
    plan: reload === undefined ? { answers } : { answers, reload },
    states,
    delivered,
    lastEvent: last,
  };
}

const paths = getSimplePaths(connectionModel, {
  toState: (state) => state.status === 'done',
}) as unknown as ModelPath[];
const expectations = paths.map(expectationOf);

describe('the connection model', () => {
  it('has paths, and they reach every final state', () => {
    const finals = Object.entries(connectionModel.root.states)
      .filter(([, node]) => node.type === 'final')
      .map(([key]) => key);
    expect(paths.length).toBeGreaterThan(0);
    expect(new Set(expectations.map(({ final }) => final))).toEqual(new Set(finals));
  });
});

/** Checks what the server was asked: one request per scripted answer, all for the run, resumes from the cursor. */
function expectRequests(outcome: PlanOutcome, expected: PathExpectation): void {
  expect(outcome.requests).toHaveLength(expected.plan.answers.length);
  expect(outcome.requests.map((request) => request.headers['last-event-id'])).toEqual(
    expected.plan.answers.map(({ lastEventId }) => lastEventId),
  );
  expect(new Set(outcome.requests.map((request) => requestedRun(request).runId))).toEqual(new Set([outcome.runId]));
}

/** Checks that every event the stores were given was new: one per sequence, in order, no id twice. */
function expectAppliedOnce(outcome: PlanOutcome): void {
  const sequences = outcome.applied.map((event) => event.sequence);
  expect(sequences).toEqual(range(1, sequences.length));
  expect(new Set(outcome.applied.map((event) => event.eventId)).size).toBe(outcome.applied.length);
  expect(outcome.snapshot.agentState.issues).toEqual([]);
}

describe('the runtime reports the connection the model predicts, against a server that injects each fault', () => {
  let uninterrupted: unknown;
  beforeAll(async () => {
    const outcome = await runPlan({
      answers: [{ status: 200, sequences: range(1, RUN_LENGTH), after: 'end', lastEventId: undefined }],
    });
    expect(outcome.seen).toEqual(['restoring', 'idle', 'connecting', 'connected', 'idle']);
    expect(outcome.snapshot.agentState.runs[outcome.runId]?.status).toBe('completed');
    uninterrupted = withRunId(outcome.snapshot.agentState, outcome.runId);
  });

  for (const expected of expectations) {
    describe(expected.name, () => {
      let outcome: PlanOutcome;
      beforeAll(async () => {
        outcome = await runPlan(expected.plan);
      });

      // A restored run's stream is one stream, opened as a resume: `reconnecting`, then back to
      // `idle` when it closes (the connection once counted it twice and stayed `connected`).
      it('reports the connection states of the path, in order', () => {
        expect(outcome.seen).toEqual(expected.states);
      });

      it('asks the server once per scripted answer, resuming from the cursor, and applies each event once', () => {
        expectRequests(outcome, expected);
        expectAppliedOnce(outcome);
      });

      it(`leaves the AgentState and the errors of a ${expected.final} path`, () => {
        const { agentState, error, checkpointError } = outcome.snapshot;
        const runFailed = outcome.applied.filter((event) => event.type === 'run.failed');
        switch (expected.final) {
          case 'completed':
            expect(withRunId(agentState, outcome.runId)).toEqual(uninterrupted);
            expect(runFailed).toHaveLength(0);
            if (outcome.result !== undefined) {
              expect(outcome.result).toEqual({
                status: 'fulfilled',
                value: { runId: outcome.runId, status: 'completed' },
              });
            }
            break;
          case 'gaveUp':
            expect(runFailed).toHaveLength(1);
            expect(agentState.runs[outcome.runId]).toMatchObject({ status: 'failed', error: { code: 'http_error' } });
            // The events the client had, then the runner's message.failed and run.failed.
            expect(agentState.lastSequenceByRun[outcome.runId]).toBe(expected.delivered + 2);
            expect(error).toMatchObject({ name: 'AgentTransportError', code: 'http_error', status: 503 });
            break;
          case 'unrecoverable': {
            // The run is as the last event the client had left it: nothing made up, nothing lost.
            expect(agentState).toEqual(replayed(outcome.runId, expected.delivered));
            expect(runFailed).toHaveLength(0);
            const code = expected.lastEvent === 'server.skips' ? 'resume_gap' : 'invalid_cursor';
            expect((error as AgentProviderError | undefined)?.code).toBe(code);
            if (outcome.result !== undefined) {
              expect(outcome.result).toMatchObject({ status: 'rejected', reason: { code } });
            }
            break;
          }
          case 'checkpointRefused':
            expect(checkpointError?.code).toBe('invalid_checkpoint');
            expect(agentState.runs).toEqual({});
            break;
        }
      });
    });
  }
});
