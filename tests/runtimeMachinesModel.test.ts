import { getShortestPaths, getSimplePaths } from '@xstate/graph';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  type ActorRefLike,
  type AnyActorRef,
  createActor,
  type EventObject,
  fromPromise,
  getInitialSnapshot,
  getNextSnapshot,
  type InspectionEvent,
  type SnapshotFrom,
} from 'xstate';
import {
  AGENT_CHECKPOINT_SCHEMA_VERSION,
  type AgentCheckpoint,
  type AgentCheckpointStorage,
} from '../checkpoint/AgentCheckpoint';
import { createAgentStore } from '../machines/createAgentStore';
import type { AgentCommand } from '../protocol/commandSchemas';
import { AGENT_COMMAND_PROTOCOL_VERSION, AGENT_EVENT_PROTOCOL_VERSION } from '../protocol/constants';
import type { AgentEvent } from '../protocol/eventSchemas';
import { getAgentEntityKey } from '../protocol/getAgentEntityKey';
import { AgentCommandError } from '../providers/AgentCommandError';
import type { AgentCommandOptions } from '../providers/AgentProvider';
import { createLocalAgentProvider } from '../providers/local/createLocalAgentProvider';
import type { LocalAgentScript } from '../providers/local/localAgentChunks';
import type { AgentRunResult } from '../providers/runAgentProvider';
import { type CommandLaneEvent, commandLaneMachine } from '../runtime/commandLaneMachine';
import {
  type AgentConnectionState,
  type ConnectionContext,
  type ConnectionMachineEvent,
  connectionMachine,
} from '../runtime/connectionMachine';
import { createXChatRuntime, type XChatRuntime } from '../runtime/createXChatRuntime';
import { AgentTransportError } from '../transports/AgentTransportError';
import { answerRun } from './support/eventLogServer';
import { createScriptedEventLog, type ScriptedConnection } from './support/scriptedEventLog';

/*
 * Model-based tests over the runtime's own machines, not a hand model of them: @xstate/graph
 * walks the connection machine and the command-lane machine (shortest paths to every state,
 * simple paths through the retries and the terminal states); each path is replayed into a
 * real actor of the machine, checked step by step against the graph and against what the
 * machines' documentation promises; then the paths one conversation can live through are
 * played on a real `createXChatRuntime`, whose own connection and lane actors must go through
 * the path's states, event by event, while its view says the same.
 */

/** Lets the promises, streams and actors of the runtime run, without a timer. */
const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

/** Waits, turn by turn, until `condition` holds; a path whose step never happens fails, naming it. */
async function settle(condition: () => boolean, what: string): Promise<void> {
  for (let count = 0; count < 200; count += 1) {
    if (condition()) return;
    await turn();
  }
  throw new Error(`never happened: ${what}`);
}

const describeSteps = (steps: ReadonlyArray<{ event: EventObject }>) =>
  steps
    .slice(1)
    .map(({ event }) => JSON.stringify(event))
    .join(' → ') || '(initial)';

/** What an actor's inspection says of one snapshot it took: the event it took, and its state after. */
interface Recorded {
  actorRef: ActorRefLike;
  event: EventObject;
  value: unknown;
  context: unknown;
}

/** Records every snapshot of every actor an inspector sees. */
function snapshotRecorder() {
  const records: Recorded[] = [];
  const inspect = (inspection: InspectionEvent) => {
    if (inspection.type !== '@xstate.snapshot') return;
    const snapshot = inspection.snapshot as { value?: unknown; context?: unknown };
    records.push({
      actorRef: inspection.actorRef,
      event: inspection.event,
      value: snapshot.value,
      context: snapshot.context,
    });
  };
  return { records, inspect };
}

// --- The connection machine ---------------------------------------------------------------

const CONNECTION_STATES: AgentConnectionState[] = [
  'idle',
  'restoring',
  'connecting',
  'connected',
  'reconnecting',
  'unrecoverable',
  'failed',
];

/** The errors the model's events carry: one per cause, so a step that keeps or clears one shows. */
const CHECKPOINT_UNREADABLE = 'the checkpoint could not be read';
const STREAM_DROPPED = 'the connection dropped';
const CANNOT_GO_ON = 'the stream cannot go on';
const GAVE_UP = 'the stream gave up';

/** The states in which a stream is open or opening. */
const STREAMING: AgentConnectionState[] = ['connecting', 'connected', 'reconnecting'];

const RESTORE_OUTCOMES = [
  { resuming: 0, stranded: 0 },
  { resuming: 1, stranded: 0 },
  { resuming: 0, stranded: 1 },
  { resuming: 1, stranded: 1 },
] as const;

type ConnectionSnapshot = SnapshotFrom<typeof connectionMachine>;

/** Every event the machine knows, a stream opening only while fewer than `maxStreams` are open: the graph stays finite. */
function connectionEvents(maxStreams: number) {
  return (snapshot: ConnectionSnapshot): ConnectionMachineEvent[] => [
    { type: 'restore.started' },
    ...RESTORE_OUTCOMES.map((outcome) => ({ type: 'restore.done' as const, ...outcome })),
    { type: 'restore.failed', error: CHECKPOINT_UNREADABLE },
    ...(snapshot.context.streams < maxStreams
      ? [
          { type: 'stream.connecting' as const, resume: false },
          { type: 'stream.connecting' as const, resume: true },
        ]
      : []),
    { type: 'stream.connected' },
    { type: 'stream.reconnecting', attempt: 1, error: STREAM_DROPPED },
    { type: 'stream.unrecoverable', error: CANNOT_GO_ON },
    { type: 'stream.failed', error: GAVE_UP },
    { type: 'stream.closed' },
  ];
}

const serializeConnection = (snapshot: ConnectionSnapshot) =>
  JSON.stringify([snapshot.value, snapshot.context.streams, snapshot.context.error ?? null]);

/** A path as `@xstate/graph` gives it: its first step is the initial state (`xstate.init`). */
type ConnectionPath = {
  state: ConnectionSnapshot;
  steps: Array<{ event: ConnectionMachineEvent | { type: 'xstate.init' }; state: ConnectionSnapshot }>;
};

/** Shortest paths to every state, with two streams at once: the states one stream cannot reach too. */
const connectionShortest = getShortestPaths(connectionMachine, {
  events: connectionEvents(2),
  serializeState: serializeConnection,
}) as unknown as ConnectionPath[];
/** Every simple path of one stream at a time: through the restore, the reconnects and the terminal states. */
const connectionSimple = getSimplePaths(connectionMachine, {
  events: connectionEvents(1),
  serializeState: serializeConnection,
}) as unknown as ConnectionPath[];

/**
 * Steps the machine through `events` as the graph does, without an actor. A vertex is never
 * visited twice on a simple path: a stream that recovers and then breaks again, ends or fails
 * needs its recovery as a prefix.
 */
function walk(events: ConnectionMachineEvent[]) {
  let snapshot = getInitialSnapshot(connectionMachine);
  const steps: ConnectionPath['steps'] = [{ event: { type: 'xstate.init' }, state: snapshot }];
  for (const event of events) {
    snapshot = getNextSnapshot(connectionMachine, snapshot, event);
    steps.push({ event, state: snapshot });
  }
  return { steps, snapshot };
}

const drop = { type: 'stream.reconnecting', attempt: 1, error: STREAM_DROPPED } as const;
/** Streams that reconnected and recovered, after a request and after a restore. */
const RETRIED: ConnectionMachineEvent[][] = [
  [{ type: 'stream.connecting', resume: false }, { type: 'stream.connected' }, drop, { type: 'stream.connected' }],
  [
    { type: 'restore.started' },
    { type: 'restore.done', resuming: 1, stranded: 0 },
    { type: 'stream.connecting', resume: true },
    { type: 'stream.connected' },
    drop,
    { type: 'stream.connected' },
  ],
];
/** Every simple path on from a stream that recovered: it breaks again, ends, fails, or cannot go on. */
const connectionRetried: ConnectionPath[] = RETRIED.flatMap((events) => {
  const prefix = walk(events);
  return (
    getSimplePaths(connectionMachine, {
      events: connectionEvents(1),
      serializeState: serializeConnection,
      fromState: prefix.snapshot,
    }) as unknown as ConnectionPath[]
  ).map((path) => ({ ...path, steps: [...prefix.steps, ...path.steps.slice(1)] }));
});

/** What the machine's documentation promises, one test each. */
const CONNECTION_PROMISES = {
  counts: 'counts every stream that opens and every stream that ends, in every state',
  idle: 'is idle only when no stream is open',
  error: 'keeps the error of the last stream that failed or could not go on, until a stream opens',
  connects: 'connects again when a stream opens, from any state but restoring',
} as const;

/**
 * What the machine's documentation promises of one event, written apart from the machine:
 * `streams` counts the streams opened and not ended; it is `idle` only when every stream has
 * closed; it keeps the error of the last stream that failed or could not go on (or of a
 * checkpoint that could not be read) until a stream opens again, which clears it; a new
 * stream from any state but `restoring` connects again (`reconnecting` for a resume). An end
 * of a stream when none is open, and a `restore.*` event out of `restoring`, say nothing.
 * Returns each promise the step broke, with what the machine did instead.
 */
function connectionPromises(before: ConnectionSnapshot, event: ConnectionMachineEvent, after: ConnectionSnapshot) {
  let streams = before.context.streams;
  let error = before.context.error;
  // A stream is open when one is counted, or when the state says one is (a resume about to open).
  const open = streams > 0 || STREAMING.includes(before.value as AgentConnectionState);
  switch (event.type) {
    case 'stream.connecting':
      streams += 1;
      error = undefined;
      break;
    case 'stream.failed':
    case 'stream.unrecoverable':
      if (open) {
        streams = Math.max(0, streams - 1);
        error = event.error;
      }
      break;
    case 'stream.closed':
      if (open) streams = Math.max(0, streams - 1);
      break;
    case 'restore.failed':
      if (before.value === 'restoring') error = event.error;
      break;
  }
  const broken: Array<[string, string]> = [];
  if (after.context.streams !== streams) {
    broken.push([CONNECTION_PROMISES.counts, `${after.context.streams} open instead of ${streams}`]);
  }
  if (after.value === 'idle' && after.context.streams !== 0) {
    broken.push([CONNECTION_PROMISES.idle, `${after.context.streams} open`]);
  }
  if (after.context.error !== error) {
    broken.push([CONNECTION_PROMISES.error, `"${String(after.context.error)}" instead of "${String(error)}"`]);
  }
  if (event.type === 'stream.connecting' && before.value !== 'restoring') {
    const expected = event.resume ? 'reconnecting' : 'connecting';
    if (after.value !== expected)
      broken.push([CONNECTION_PROMISES.connects, `${String(after.value)}, not ${expected}`]);
  }
  return broken;
}

/**
 * Takes every event from the end of every shortest path (each vertex once) and checks what
 * the machine promises of it: each broken promise once per state and event, with the path
 * that shows it.
 */
function checkConnectionEdges() {
  const broken = new Map<string, Map<string, string>>();
  let edges = 0;
  for (const path of connectionShortest) {
    const from = path.state;
    for (const event of connectionEvents(3)(from)) {
      const after = getNextSnapshot(connectionMachine, from, event);
      edges += 1;
      for (const [promise, detail] of connectionPromises(from, event, after)) {
        const byEdge = broken.get(promise) ?? new Map<string, string>();
        broken.set(promise, byEdge);
        const key = `${JSON.stringify(from.value)} with ${from.context.streams} open --${event.type}--> ${JSON.stringify(after.value)}`;
        if (!byEdge.has(key))
          byEdge.set(key, `${key}: ${detail}, after ${describeSteps(path.steps)} → ${JSON.stringify(event)}`);
      }
    }
  }
  return { edges, broken };
}

describe('model-based: the connection machine', () => {
  it('has shortest paths to every state and simple paths through the retries and the terminal states', () => {
    console.log(
      `runtime machines, connection: ${connectionShortest.length} shortest paths, ${connectionSimple.length} simple paths, ${connectionRetried.length} simple paths on from a stream that recovered`,
    );
    const reached = (paths: ConnectionPath[]) => new Set(paths.map((path) => path.state.value));
    expect(reached(connectionShortest)).toEqual(new Set(CONNECTION_STATES));
    expect(reached(connectionSimple)).toEqual(new Set(CONNECTION_STATES));
    // Each vertex once: value × open streams (0-2) × the error kept.
    expect(connectionShortest.length).toBeGreaterThanOrEqual(24);
    expect(connectionSimple.length).toBeGreaterThanOrEqual(595);
    const through = (state: AgentConnectionState) =>
      connectionSimple.filter((path) => path.steps.some((step) => step.state.value === state)).length;
    // Paths that reconnect and then end for good, one way or the other.
    const reconnectingThenEnded = [...connectionSimple, ...connectionRetried].filter(
      (path) =>
        path.steps.some((step) => step.event.type === 'stream.reconnecting') &&
        (path.state.value === 'failed' || path.state.value === 'unrecoverable'),
    );
    console.log(
      `runtime machines, connection: ${through('reconnecting')} simple paths reconnect, ${reconnectingThenEnded.length} of them end failed or unrecoverable`,
    );
    expect(reconnectingThenEnded.length).toBeGreaterThanOrEqual(28);
    expect(connectionRetried.length).toBeGreaterThanOrEqual(100);
  });

  it('replays every path into an actor of the machine, which takes each step to the state the graph gives', () => {
    for (const path of [...connectionShortest, ...connectionSimple, ...connectionRetried]) {
      const actor = createActor(connectionMachine).start();
      for (const step of path.steps.slice(1)) {
        actor.send(step.event as ConnectionMachineEvent);
        const snapshot = actor.getSnapshot();
        expect(
          { value: snapshot.value, context: snapshot.context },
          `${describeSteps(path.steps)}: ${step.event.type}`,
        ).toEqual({ value: step.state.value, context: step.state.context });
      }
      actor.stop();
    }
  });

  // Every vertex ends one shortest path: from each, every event is one edge.
  const { edges, broken } = checkConnectionEdges();

  it('is checked against its documentation on every edge of the graph', () => {
    console.log(`runtime machines, connection: ${edges} edges checked against the documentation`);
    expect(edges).toBeGreaterThanOrEqual(24 * 13);
  });

  for (const promise of Object.values(CONNECTION_PROMISES)) {
    it(promise, () => {
      expect([...(broken.get(promise)?.values() ?? [])]).toEqual([]);
    });
  }
});

// --- The connection machine, lived through by a real runtime -------------------------------

/** The session of `answerRun`'s events, which the scripted log streams for every run. */
const SESSION_ID = 's1';
const RUN_LENGTH = answerRun('any').length;
const RECONNECT = { maxAttempts: 3, initialDelay: 1_000, maxDelay: 1_000 };
/** A run of the saved conversation that was streaming: its first events applied, its cursor the last of them. */
const RESTORED_RUN = 'restored';
const RESTORED_EVENTS = 4;
/** A run of the saved conversation that was streaming with no cursor saved: it cannot be resumed. */
const STRANDED_RUN = 'stranded';
const PROMPT = { prompt: 'Summarize the log' };

/** The conversation a page saved: a run to resume (`resuming`) and one that cannot be (`stranded`). */
function savedConversation({ resuming, stranded }: { resuming: number; stranded: number }): AgentCheckpoint {
  const store = createAgentStore();
  const cursorByRun: Record<string, string> = {};
  const inputByRun: Record<string, unknown> = {};
  if (resuming > 0) {
    store.batch(answerRun(RESTORED_RUN).slice(0, RESTORED_EVENTS));
    cursorByRun[RESTORED_RUN] = String(RESTORED_EVENTS);
    inputByRun[RESTORED_RUN] = PROMPT;
  }
  if (stranded > 0) store.batch(answerRun(STRANDED_RUN).slice(0, 3));
  const state = store.getSnapshot();
  store.destroy();
  return {
    schemaVersion: AGENT_CHECKPOINT_SCHEMA_VERSION,
    eventProtocolVersion: AGENT_EVENT_PROTOCOL_VERSION,
    commandProtocolVersion: AGENT_COMMAND_PROTOCOL_VERSION,
    sessionId: SESSION_ID,
    state,
    inputByRun,
    cursorByRun,
    pendingCommands: [],
    savedAt: 1_000,
  };
}

/** A storage holding `saved`, whose `load` answers only when released: the runtime stays `restoring` until then. */
function heldStorage(saved: unknown) {
  let release = () => {};
  const held = new Promise<void>((resolve) => {
    release = resolve;
  });
  const storage: AgentCheckpointStorage = {
    load: async () => {
      await held;
      return saved === undefined ? undefined : JSON.parse(JSON.stringify(saved));
    },
    save: async () => undefined,
    remove: async () => undefined,
  };
  return { storage, release };
}

const range = (from: number, to: number) => Array.from({ length: Math.max(0, to - from + 1) }, (_, n) => from + n);
const dropped = () => new AgentTransportError('network_error', 'The connection to the log dropped');
const refused = () => new AgentTransportError('http_error', 'The log answered 400', { status: 400 });
const forgotten = () =>
  new AgentTransportError('invalid_cursor', 'The log no longer knows the cursor', { status: 410 });
const garbled = () => new AgentTransportError('invalid_frame', 'The log sent a frame that is not JSON');

/**
 * One conversation on a real runtime over the scripted log, made to live through one path of
 * the connection machine: each event of the path is what the runtime's runner says when the
 * test makes the log (or the storage, or the user) do something.
 */
class ConnectionPlayer {
  readonly log = createScriptedEventLog();
  readonly runtime: XChatRuntime<{ prompt: string }>;
  private readonly recorder = snapshotRecorder();
  private readonly release: (() => void) | undefined;
  /** How each request settled: a stream that cannot go on rejects it. */
  private readonly requests: Array<Promise<AgentRunResult | { rejected: unknown }>> = [];
  /** The connection the runner reads, while one is open. */
  private connection: ScriptedConnection | undefined;
  /** The runner waits out its backoff before it reconnects. */
  private backingOff = false;
  /** The last sequence of the streaming run the client has. */
  private delivered = 0;

  /** `restore`: the conversation is restored from a storage holding this (nothing: no storage). */
  constructor(restore: { saved: unknown } | undefined) {
    const held = restore === undefined ? undefined : heldStorage(restore.saved);
    this.release = held?.release;
    this.runtime = createXChatRuntime({
      provider: this.log.provider,
      sessionId: SESSION_ID,
      reconnect: RECONNECT,
      inspect: this.recorder.inspect,
      ...(held === undefined ? {} : { checkpointStorage: held.storage }),
    });
  }

  /** What the runtime's own connection actor took, snapshot by snapshot. */
  records(): Recorded[] {
    const connection = this.runtime.actor.system.get('connection');
    return this.recorder.records.filter((record) => record.actorRef === connection);
  }

  /** The connection the runner opens after its backoff, or the one it has open. */
  private async current(): Promise<ScriptedConnection> {
    if (this.backingOff) {
      this.backingOff = false;
      await vi.advanceTimersByTimeAsync(RECONNECT.maxDelay);
      this.connection = await this.log.nextConnection();
    }
    if (this.connection === undefined) throw new Error('no connection is open');
    return this.connection;
  }

  /**
   * Makes the runtime take `event` in state `from` (`next`: the path's next event); returns how
   * many steps of the path that did: a restore with a run to resume also opens its stream.
   */
  async take(event: ConnectionMachineEvent, from: unknown, next: EventObject | undefined): Promise<number> {
    switch (event.type) {
      case 'restore.started':
        return 1;
      case 'restore.done':
      case 'restore.failed':
        this.release?.();
        if (event.type === 'restore.failed' || event.resuming === 0) return 1;
        this.connection = await this.log.nextConnection();
        this.delivered = RESTORED_EVENTS;
        return 2;
      case 'stream.connecting':
        this.requests.push(this.runtime.request(PROMPT).catch((reason: unknown) => ({ rejected: reason })));
        this.connection = await this.log.nextConnection();
        this.delivered = 0;
        return 1;
      case 'stream.connected': {
        const connection = await this.current();
        if (connection.from === undefined) {
          // The first event; sent without its cursor when the stream is to be lost with nothing to resume from.
          connection.send([1], { cursor: next?.type !== 'stream.unrecoverable' });
          this.delivered = 1;
        } else {
          // A resumed stream starts with the last event the client has: not news, but the connection works.
          connection.send([this.delivered]);
        }
        return 1;
      }
      case 'stream.reconnecting':
        (await this.current()).fail(dropped());
        this.backingOff = true;
        return 1;
      case 'stream.unrecoverable': {
        const connection = await this.current();
        if (from === 'reconnecting') connection.fail(forgotten());
        // Dropped mid-answer before any cursor: nothing to resume from.
        else if (connection.from === undefined) connection.fail(dropped());
        // The resumed stream's first new event skips two: the events between are lost.
        else connection.send([this.delivered + 3]);
        return 1;
      }
      case 'stream.failed':
        (await this.current()).fail(from === 'connected' ? garbled() : refused());
        return 1;
      case 'stream.closed':
        if (from === 'connected') {
          const connection = await this.current();
          connection.send(range(this.delivered + 1, RUN_LENGTH));
          connection.end();
        } else {
          // The user stops before anything arrived, or while the runner waits to reconnect.
          this.runtime.abort();
          this.backingOff = false;
        }
        return 1;
    }
  }

  async finish(): Promise<void> {
    this.runtime.destroy();
    this.release?.();
    await Promise.all(this.requests);
    await vi.advanceTimersByTimeAsync(0);
  }
}

/**
 * Whether one conversation can live through the path: one stream at a time; a checkpoint is
 * read once, when the runtime is made; a restored run to resume opens its stream at once
 * (the only resume that opens a stream); a request waits for the restore; a stream cannot be
 * lost for good before it connected (a first connection that breaks is opened again).
 */
function playable(path: ConnectionPath): boolean {
  const { steps } = path;
  for (let index = 1; index < steps.length; index += 1) {
    const { event, state } = steps[index] as ConnectionPath['steps'][number];
    const from = (steps[index - 1] as ConnectionPath['steps'][number]).state.value;
    const previous = (steps[index - 1] as ConnectionPath['steps'][number]).event;
    if (state.context.streams > 1) return false;
    switch (event.type) {
      case 'restore.started':
        if (index !== 1) return false;
        break;
      case 'restore.done': {
        const after = steps[index + 1]?.event;
        if (event.resuming > 0 && !(after?.type === 'stream.connecting' && after.resume)) return false;
        break;
      }
      case 'stream.connecting': {
        const resumesRestored = previous.type === 'restore.done' && previous.resuming > 0;
        if (from === 'restoring' || event.resume !== resumesRestored) return false;
        break;
      }
      case 'stream.unrecoverable':
        if (from === 'connecting') return false;
        break;
      default:
        break;
    }
  }
  return true;
}

/** The path's restore, as the storage must hold it. */
function restoreOf(path: ConnectionPath): { saved: unknown } | undefined {
  const outcome = path.steps[2]?.event;
  if (path.steps[1]?.event.type !== 'restore.started') return undefined;
  if (outcome?.type === 'restore.failed') return { saved: { schemaVersion: 1, sessionId: SESSION_ID, state: 'lost' } };
  if (outcome?.type === 'restore.done') {
    const { resuming, stranded } = outcome;
    return { saved: resuming + stranded === 0 ? undefined : savedConversation({ resuming, stranded }) };
  }
  return { saved: undefined };
}

const eventFields = (event: EventObject) => {
  const { type, resume, resuming, stranded } = event as Record<string, unknown>;
  return { type, resume, resuming, stranded };
};

/** Plays one path on a fresh runtime, checking its connection actor and its view at every step. */
async function playConnectionPath(path: ConnectionPath): Promise<void> {
  const label = describeSteps(path.steps);
  const player = new ConnectionPlayer(restoreOf(path));
  try {
    const expectStep = (index: number, record: Recorded | undefined) => {
      const step = path.steps[index] as ConnectionPath['steps'][number];
      const context = record?.context as ConnectionContext | undefined;
      expect(
        {
          event: record && eventFields(record.event),
          value: record?.value,
          streams: context?.streams,
          error: context?.error !== undefined,
        },
        `${label}, step ${index}`,
      ).toEqual({
        event: eventFields(step.event),
        value: step.state.value,
        streams: step.state.context.streams,
        error: step.state.context.error !== undefined,
      });
    };
    expectStep(0, player.records()[0]);
    let index = 1;
    if (path.steps[1]?.event.type === 'restore.started') index = 2;
    for (let done = 1; done < index; done += 1) expectStep(done, player.records()[done]);
    while (index < path.steps.length) {
      const step = path.steps[index] as ConnectionPath['steps'][number];
      const from = (path.steps[index - 1] as ConnectionPath['steps'][number]).state.value;
      const covered = await player.take(step.event as ConnectionMachineEvent, from, path.steps[index + 1]?.event);
      const last = index + covered - 1;
      await settle(() => player.records().length > last, `${label}, step ${last}`);
      for (let done = index; done <= last; done += 1) expectStep(done, player.records()[done]);
      // The view says what the connection actor holds: its state, and the error it keeps.
      const view = player.runtime.getSnapshot();
      const connection = player.records()[last]?.context as ConnectionContext;
      expect(view.connectionState, `${label}, view at step ${last}`).toBe(path.steps[last]?.state.value);
      expect(view.error, `${label}, view error at step ${last}`).toBe(connection.error);
      index = last + 1;
    }
    // Nothing more happens by itself: the runtime took the path's events, and only those.
    for (let count = 0; count < 5; count += 1) await turn();
    expect(
      player.records().map((record) => record.event.type),
      label,
    ).toEqual(path.steps.map((step) => step.event.type));
  } finally {
    await player.finish();
  }
}

/** The paths one conversation can live through: every simple path of one stream that is, each once. */
const playedConnection = [
  ...new Map(
    [...connectionShortest, ...connectionSimple, ...connectionRetried]
      .filter(playable)
      .map((path) => [JSON.stringify(path.steps.map((step) => step.event)), path] as const),
  ).values(),
];

describe('model-based: a real runtime lives through the connection machine paths', () => {
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('plays a path to every state one conversation can reach, and the simple paths of one stream at a time', async () => {
    const through = (type: string) =>
      playedConnection.filter((path) => path.steps.some((step) => step.event.type === type)).length;
    console.log(
      `runtime machines, connection on createXChatRuntime: ${playedConnection.length} paths played, ${through('stream.reconnecting')} reconnect, ${through('restore.started')} restore`,
    );
    expect(new Set(playedConnection.map((path) => path.state.value))).toEqual(new Set(CONNECTION_STATES));
    expect(playedConnection.length).toBeGreaterThanOrEqual(60);
    expect(through('stream.reconnecting')).toBeGreaterThanOrEqual(20);
    for (const path of playedConnection) await playConnectionPath(path);
  });

  // Two runs streaming at once, beyond the paths above (one stream at a time). The connection
  // machine's edges from `failed` with two streams open drop the second failure, and its close:
  // `stream.connecting` ×2 → `stream.failed` (failed, 1 open) → `stream.failed` (still 1) →
  // `stream.connecting` (2) → `stream.connected` → `stream.closed` (1 open: still connected).
  it('is idle again once a run completes after two runs streaming at once have both failed', async () => {
    const log = createScriptedEventLog();
    const runtime = createXChatRuntime({ provider: log.provider, sessionId: SESSION_ID, reconnect: RECONNECT });
    try {
      const settled = (request: Promise<AgentRunResult>) => request.catch((reason: unknown) => ({ rejected: reason }));
      const first = settled(runtime.request(PROMPT));
      const firstStream = await log.nextConnection();
      const second = settled(runtime.request(PROMPT));
      const secondStream = await log.nextConnection();
      firstStream.send([1]);
      secondStream.send([1]);
      await settle(() => runtime.getSnapshot().connectionState === 'connected', 'both streams to connect');
      firstStream.fail(garbled());
      secondStream.fail(garbled());
      expect(await first).toMatchObject({ status: 'failed' });
      expect(await second).toMatchObject({ status: 'failed' });
      expect(runtime.getSnapshot()).toMatchObject({ connectionState: 'failed', isRequesting: false });

      const third = runtime.request(PROMPT);
      const thirdStream = await log.nextConnection();
      thirdStream.send(range(1, RUN_LENGTH));
      thirdStream.end();
      expect(await third).toMatchObject({ status: 'completed' });
      // No stream is open: the connection must say so.
      expect(runtime.getSnapshot()).toMatchObject({ connectionState: 'idle', isRequesting: false });
    } finally {
      runtime.destroy();
    }
  });
});

// --- The command-lane machine --------------------------------------------------------------

type LaneSnapshot = SnapshotFrom<typeof commandLaneMachine>;
type LaneValue = LaneSnapshot['value'];
type LaneContext = LaneSnapshot['context'];
/** A path as `@xstate/graph` gives it: its first step is the initial state (`xstate.init`). */
type LanePath = {
  state: LaneSnapshot;
  steps: Array<{ event: CommandLaneEvent | { type: 'xstate.init' }; state: LaneSnapshot }>;
};

const LANE_RUN = 'r1';
/** The model's command ids: a queue of two at most keeps the graph finite. */
const MODEL_COMMANDS = ['c1', 'c2', 'c3'];
const MAX_QUEUE = 2;
const EXECUTE_FAILED = 'execute rejected';
const DONE = 'xstate.done.actor.';
const ERROR = 'xstate.error.actor.';
const LANE_STATES: LaneValue[] = [
  { admission: 'accepting', execution: 'idle' },
  { admission: 'accepting', execution: 'executing' },
  { admission: 'cancelling', execution: 'idle' },
  { admission: 'cancelling', execution: 'executing' },
];

/**
 * What the command being carried out comes to: its invoked `execute` actor (`id`) is done, or
 * rejects. The machine's own events, though not among those it declares.
 */
const executed = (outcome: typeof DONE | typeof ERROR, id: string) =>
  (outcome === DONE
    ? { type: `${DONE}${id}` }
    : { type: `${ERROR}${id}`, error: EXECUTE_FAILED }) as unknown as CommandLaneEvent;

/** A command enqueued (a cancel or not), a cancel settled, and what the command being carried out comes to. */
function laneEvents(snapshot: LaneSnapshot): CommandLaneEvent[] {
  const events: CommandLaneEvent[] = [{ type: 'lane.cancel_settled' }];
  const free = MODEL_COMMANDS.find((id) => !snapshot.context.queue.includes(id));
  if (snapshot.context.queue.length < MAX_QUEUE && free !== undefined) {
    events.push({ type: 'lane.enqueue', commandId: free, cancels: false });
    events.push({ type: 'lane.enqueue', commandId: free, cancels: true });
  }
  for (const id of Object.keys(snapshot.children)) events.push(executed(DONE, id), executed(ERROR, id));
  return events;
}

/** The whole state, queue included: the graph gives each step the state of its vertex, which must be the path's own. */
const serializeLane = (snapshot: LaneSnapshot) => JSON.stringify([snapshot.value, snapshot.context.queue]);
const laneGraph = { input: { runId: LANE_RUN }, events: laneEvents, serializeState: serializeLane };

/** Steps the machine through `events` without running an actor, as the graph does. */
function walkLane(events: Array<CommandLaneEvent | typeof DONE | typeof ERROR>) {
  let snapshot = getInitialSnapshot(commandLaneMachine, { runId: LANE_RUN });
  const steps: LanePath['steps'] = [{ event: { type: 'xstate.init' }, state: snapshot }];
  for (const step of events) {
    const event = typeof step === 'string' ? executed(step, Object.keys(snapshot.children)[0] ?? '') : step;
    snapshot = getNextSnapshot(commandLaneMachine, snapshot, event);
    steps.push({ event, state: snapshot });
  }
  return { steps, snapshot };
}

const enqueue = (commandId: string, cancels = false): CommandLaneEvent => ({
  type: 'lane.enqueue',
  commandId,
  cancels,
});
const settled: CommandLaneEvent = { type: 'lane.cancel_settled' };
/** Lanes open again after a failure: a command that failed, a cancel that failed (then settled). */
const LANE_RETRIED = [
  [enqueue('c1'), ERROR],
  [enqueue('c1', true), settled, DONE],
  [enqueue('c1'), enqueue('c2', true), DONE, settled, DONE],
] as const;

const laneShortest = getShortestPaths(commandLaneMachine, laneGraph) as unknown as LanePath[];
const laneSimple = getSimplePaths(commandLaneMachine, laneGraph) as unknown as LanePath[];
const laneRetried: LanePath[] = LANE_RETRIED.flatMap((events) => {
  const prefix = walkLane([...events]);
  return (
    getSimplePaths(commandLaneMachine, { ...laneGraph, fromState: prefix.snapshot }) as unknown as LanePath[]
  ).map((path) => ({ ...path, steps: [...prefix.steps, ...path.steps.slice(1)] }));
});

/**
 * What the lane's documentation promises, written apart from the machine: commands are
 * carried out one at a time in the order they came (the queue, its head executing); a
 * `run.cancel` in the lane refuses every later command until it has settled, and a settled
 * (failed) cancel opens the lane again; what a command comes to, done or failed, is the same
 * to the lane: the next one goes.
 */
function lanePromises(before: LaneSnapshot, event: CommandLaneEvent, after: LaneSnapshot): string[] {
  let queue = before.context.queue;
  let cancelling = before.value.admission === 'cancelling';
  if (event.type === 'lane.enqueue' && !cancelling) {
    const { commandId, cancels } = event;
    queue = [...queue, commandId];
    cancelling = cancels;
  }
  if (event.type === 'lane.cancel_settled') cancelling = false;
  if ((event.type.startsWith(DONE) || event.type.startsWith(ERROR)) && before.value.execution === 'executing') {
    queue = queue.slice(1);
  }
  const expected = {
    value: { admission: cancelling ? 'cancelling' : 'accepting', execution: queue.length > 0 ? 'executing' : 'idle' },
    queue,
  };
  const actual = { value: after.value, queue: after.context.queue };
  return JSON.stringify(actual) === JSON.stringify(expected)
    ? []
    : [`${JSON.stringify(actual)} instead of ${JSON.stringify(expected)}`];
}

/** A lane actor whose `execute` waits for the test: each command is done or rejects when the path says. */
function laneActor() {
  const executing = new Map<string, { resolve: () => void; reject: (error: unknown) => void }>();
  const execute = fromPromise<void, { commandId: string }>(
    ({ input }) =>
      new Promise<void>((resolve, reject) => {
        executing.set(input.commandId, { resolve, reject });
      }),
  );
  const actor = createActor(commandLaneMachine.provide({ actors: { execute } }), { input: { runId: LANE_RUN } });
  return { actor: actor.start(), executing };
}

describe('model-based: the command-lane machine', () => {
  it('has shortest paths to every state and simple paths through submits, settles, refusals and retries', () => {
    console.log(
      `runtime machines, command lane: ${laneShortest.length} shortest paths, ${laneSimple.length} simple paths, ${laneRetried.length} simple paths on from a failed command or cancel`,
    );
    const reached = (paths: LanePath[]) => new Set(paths.map((path) => JSON.stringify(path.state.value)));
    const all = new Set(LANE_STATES.map((value) => JSON.stringify(value)));
    expect(reached(laneShortest)).toEqual(all);
    expect(reached(laneSimple)).toEqual(all);
    expect(laneShortest.length).toBeGreaterThanOrEqual(10);
    expect(laneSimple.length).toBeGreaterThanOrEqual(108);
    expect(laneRetried.length).toBeGreaterThanOrEqual(300);
    const taken = new Set(
      [...laneSimple, ...laneRetried].flatMap((path) =>
        path.steps.map((step) => step.event.type.replace(/^(xstate\.(done|error)\.actor\.).*$/, '$1')),
      ),
    );
    expect(taken).toEqual(new Set(['xstate.init', 'lane.enqueue', 'lane.cancel_settled', DONE, ERROR]));
  });

  it('replays every path into an actor whose commands settle as the path says, and it agrees at every step', async () => {
    for (const path of [...laneShortest, ...laneSimple, ...laneRetried]) {
      const { actor, executing } = laneActor();
      for (const step of path.steps.slice(1)) {
        const label = `${describeSteps(path.steps)}: ${step.event.type}`;
        const head = actor.getSnapshot().context.queue[0] ?? '';
        if (step.event.type.startsWith(DONE) || step.event.type.startsWith(ERROR)) {
          const command = executing.get(head);
          if (step.event.type.startsWith(DONE)) command?.resolve();
          else command?.reject(new Error(EXECUTE_FAILED));
          // The promise actor tells the lane in a later microtask.
          await turn();
        } else actor.send(step.event as CommandLaneEvent);
        const snapshot = actor.getSnapshot();
        expect({ value: snapshot.value, context: snapshot.context }, label).toEqual({
          value: step.state.value,
          context: step.state.context,
        });
      }
      actor.stop();
    }
  });

  it('keeps what its documentation promises on every edge of the graph', () => {
    const broken: string[] = [];
    let edges = 0;
    for (const path of laneShortest) {
      const from = path.state;
      for (const event of laneEvents(from)) {
        const after = getNextSnapshot(commandLaneMachine, from, event);
        edges += 1;
        for (const failure of lanePromises(from, event, after)) {
          broken.push(`${describeSteps(path.steps)} → ${JSON.stringify(event)}: ${failure}`);
        }
      }
    }
    console.log(`runtime machines, command lane: ${edges} edges checked against the documentation`);
    expect(edges).toBeGreaterThanOrEqual(38);
    expect(broken).toEqual([]);
  });
});

// --- The command lane, lived through by a real runtime's commands -------------------------

const CANCEL_TIMEOUT_MS = 5_000;
const RETRYABLE = { message: 'upstream timeout', code: 'timeout', retryable: true };
/**
 * Two tools that failed retryably, then an approval the run waits for, still running, then a
 * stall: the run keeps taking commands (the retries, the approval, a cancel) as long as a
 * path needs it to.
 */
const LANE_SCRIPT: LocalAgentScript = {
  steps: [
    { type: 'tool', name: 'search', argumentDeltas: ['{"q":"paris"}'], error: RETRYABLE, retryResult: { hits: 3 } },
    { type: 'tool', name: 'weather', argumentDeltas: ['{"city":"Paris"}'], error: RETRYABLE, retryResult: { c: 14 } },
    { type: 'approval', description: 'Book the flight?', waitFor: 'command' },
    { type: 'stall' },
  ],
};

const isEnqueue = (event: EventObject): event is Extract<CommandLaneEvent, { type: 'lane.enqueue' }> =>
  event.type === 'lane.enqueue';

/** What the command endpoint does with a command the lane carries out: the test says, when the path does. */
type CommandFate = 'carried out' | 'refused' | 'unconfirmed';

/** Holds each command the runtime sends until the test says what becomes of it. */
class CommandGate {
  private readonly waiting = new Map<string, (fate: CommandFate) => void>();
  private readonly decided = new Map<string, CommandFate>();

  wrap<
    Provider extends {
      executeCommand?: (command: AgentCommand, options: AgentCommandOptions) => AsyncIterable<AgentEvent>;
    },
  >(provider: Provider): Provider {
    const execute = provider.executeCommand?.bind(provider);
    if (execute === undefined) throw new Error('the provider carries out no command');
    const gate = this;
    return {
      ...provider,
      async *executeCommand(command: AgentCommand, options: AgentCommandOptions) {
        const fate = await gate.fateOf(command.commandId);
        // The command endpoint answered 503: the command failed, the run is as it was.
        if (fate === 'refused') throw new Error('The command endpoint answered 503');
        // The endpoint took the cancel, but the run never confirms it.
        if (fate === 'unconfirmed') return;
        yield* execute(command, options);
      },
    };
  }

  decide(commandId: string, fate: CommandFate): void {
    const waiting = this.waiting.get(commandId);
    this.waiting.delete(commandId);
    if (waiting === undefined) this.decided.set(commandId, fate);
    else waiting(fate);
  }

  private fateOf(commandId: string): Promise<CommandFate> {
    const decided = this.decided.get(commandId);
    this.decided.delete(commandId);
    if (decided !== undefined) return Promise.resolve(decided);
    return new Promise((resolve) => this.waiting.set(commandId, resolve));
  }
}

type ExpectedCommand = { status: 'submitting' | 'succeeded' } | { status: 'failed'; code: string };

const isLaneContext = (context: unknown, runId: string): context is LaneContext =>
  typeof context === 'object' &&
  context !== null &&
  (context as LaneContext).runId === runId &&
  Array.isArray((context as LaneContext).queue);

/**
 * One run on a real runtime over the local provider, its commands held by a gate: each step
 * of a lane path is a user action (approve, retry a failed tool, cancel) or what becomes of
 * the command the lane carries out (carried out, refused by the endpoint, a cancel never
 * confirmed).
 */
class LanePlayer {
  readonly gate = new CommandGate();
  readonly runtime: XChatRuntime<{ prompt: string }>;
  private readonly recorder = snapshotRecorder();
  private request: Promise<unknown> = Promise.resolve();
  runId = '';
  /** The runtime's command of each model command id; whether it is a cancel. */
  private readonly commands = new Map<string, { commandId: string; cancels: boolean }>();
  /** What the runtime must report of each command so far. */
  readonly expected = new Map<string, ExpectedCommand>();
  private plainTaken = 0;
  refusalsChecked = 0;

  constructor() {
    this.runtime = createXChatRuntime({
      provider: this.gate.wrap(createLocalAgentProvider({ script: LANE_SCRIPT })),
      sessionId: 'lanes',
      cancelTimeoutMs: CANCEL_TIMEOUT_MS,
      inspect: this.recorder.inspect,
    });
  }

  async start(): Promise<void> {
    this.request = this.runtime.request(PROMPT).catch((reason: unknown) => ({ rejected: reason }));
    await settle(() => Object.keys(this.runtime.getSnapshot().agentState.runs).length === 1, 'the run to start');
    this.runId = Object.keys(this.runtime.getSnapshot().agentState.runs)[0] as string;
    await settle(
      () =>
        this.runtime.getSnapshot().agentState.approvals[getAgentEntityKey(this.runId, 'approval-2')]?.status ===
        'waiting',
      'the run to wait for the approval',
    );
  }

  /** The user actions that make a command other than a cancel, each once, in this order. */
  private plainAction(index: number): (() => Promise<unknown>) | undefined {
    const { agentActions } = this.runtime;
    const runId = this.runId;
    return [
      () => agentActions.resolveApproval({ runId, approvalId: 'approval-2', decision: 'approved' }),
      () => agentActions.retryTool({ runId, toolCallId: 'tool-0' }),
      () => agentActions.retryTool({ runId, toolCallId: 'tool-1' }),
    ][index];
  }

  private cancel = () => this.runtime.agentActions.cancelRun({ runId: this.runId });

  /** What the runtime's own lane of the run took, snapshot by snapshot. */
  records(): Recorded[] {
    return this.recorder.records.filter((record) => isLaneContext(record.context, this.runId));
  }

  laneAlive(): boolean {
    const children = Object.values(this.runtime.actor.getSnapshot().children) as Array<AnyActorRef | undefined>;
    return children.some((child) => isLaneContext(child?.getSnapshot().context, this.runId));
  }

  /** Takes a user action the lane accepts: it makes one command, submitting. */
  private act(attempt: () => Promise<unknown>): string {
    const before = this.runtime.getSnapshot().commandStates;
    attempt().catch(() => undefined);
    const after = this.runtime.getSnapshot().commandStates;
    const made = Object.keys(after).filter((id) => after[id] !== before[id] && after[id]?.status === 'submitting');
    expect(made, 'the action makes one submitting command').toHaveLength(1);
    return made[0] as string;
  }

  /** A user action the lane must refuse while a cancel is in it: rejected at once, no command made, the lane as it was. */
  async expectRefused(label: string): Promise<void> {
    const attempts = [this.plainAction(this.plainTaken), this.cancel].filter((attempt) => attempt !== undefined);
    for (const attempt of attempts) {
      const before = this.runtime.getSnapshot();
      const records = this.records().length;
      const error = await attempt().then(
        () => undefined,
        (reason: unknown) => reason,
      );
      expect(AgentCommandError.isInstance(error), label).toBe(true);
      expect((error as AgentCommandError).code, label).toBe('invalid_command');
      expect((error as AgentCommandError).message, label).toMatch(/being cancelled/);
      expect(this.runtime.getSnapshot().commandStates, label).toBe(before.commandStates);
      expect(this.records().length, label).toBe(records);
      this.refusalsChecked += 1;
    }
  }

  /** Makes the runtime take `event`, the lane being in `from`; returns how many steps of the path that did. */
  async take(event: EventObject, from: LaneSnapshot): Promise<number> {
    if (isEnqueue(event)) {
      const { commandId: modelId, cancels } = event;
      const attempt = cancels ? this.cancel : this.plainAction(this.plainTaken);
      if (attempt === undefined) throw new Error('the path takes more commands than the run offers');
      if (!cancels) this.plainTaken += 1;
      const commandId = this.act(attempt);
      this.commands.set(modelId, { commandId, cancels });
      this.expected.set(commandId, { status: 'submitting' });
      return 1;
    }
    const head = this.commands.get(from.context.queue[0] ?? '');
    if (head === undefined) throw new Error(`no command is carried out in ${JSON.stringify(from)}`);
    if (event.type === 'lane.cancel_settled') {
      // A cancel the run never confirms fails after the timeout: its lane opens again, then it is done.
      const before = this.records().length;
      this.gate.decide(head.commandId, 'unconfirmed');
      this.expected.set(head.commandId, { status: 'failed', code: 'interrupted' });
      for (let count = 0; count < 20 && this.records().length < before + 2; count += 1) {
        await turn();
        await vi.advanceTimersByTimeAsync(CANCEL_TIMEOUT_MS);
      }
      return 2;
    }
    if (event.type.startsWith(ERROR)) {
      this.gate.decide(head.commandId, 'refused');
      this.expected.set(head.commandId, { status: 'failed', code: 'provider_error' });
      return 1;
    }
    this.gate.decide(head.commandId, 'carried out');
    // A confirmed cancel ends the run: the runtime forgets its commands.
    if (head.cancels) this.expected.clear();
    else this.expected.set(head.commandId, { status: 'succeeded' });
    return 1;
  }

  /** The lane's queue as the runtime holds it, for the model's queue. */
  queueOf(modelQueue: readonly string[]): string[] {
    return modelQueue.map((id) => this.commands.get(id)?.commandId ?? `unknown ${id}`);
  }

  expectCommands(label: string): void {
    const { commandStates } = this.runtime.getSnapshot();
    for (const [commandId, expected] of this.expected) {
      const state = commandStates[commandId];
      expect({ status: state?.status, code: state?.error?.code }, `${label}: command ${commandId}`).toEqual({
        status: expected.status,
        code: 'code' in expected ? expected.code : undefined,
      });
    }
  }

  async finish(): Promise<void> {
    this.runtime.destroy();
    await this.request;
    await vi.advanceTimersByTimeAsync(0);
  }
}

/**
 * Whether one run's commands can live through the path on the runtime: it offers three
 * commands besides cancels; the lane's `execute` never rejects (a command's failure is its
 * command state), so a step the machine takes on a rejection is, on the runtime, a command
 * the endpoint refused; the runtime settles a cancel only when it failed, right before the
 * lane is done with it; a confirmed cancel ends the run, and the path with it.
 */
function lanePlayable(path: LanePath): boolean {
  const { steps } = path;
  const cancelAtHead = cancelsAtHead(path);
  let plain = 0;
  for (let index = 1; index < steps.length; index += 1) {
    const { event } = steps[index] as LanePath['steps'][number];
    const from = (steps[index - 1] as LanePath['steps'][number]).state;
    const previous = (steps[index - 1] as LanePath['steps'][number]).event.type;
    if (event.type === 'lane.enqueue') {
      if (!event.cancels) plain += 1;
      if (plain > 3) return false;
    } else if (event.type === 'lane.cancel_settled') {
      const next = steps[index + 1]?.event.type ?? '';
      if (from.value.execution !== 'executing' || !cancelAtHead[index]) return false;
      if (!next.startsWith(DONE) && !next.startsWith(ERROR)) return false;
    } else if (cancelAtHead[index] && previous !== 'lane.cancel_settled') {
      if (event.type.startsWith(ERROR) || index !== steps.length - 1) return false;
    }
  }
  return true;
}

/** For each step of the path, whether the command the lane carries out before it is a cancel. */
function cancelsAtHead(path: LanePath): boolean[] {
  const cancels = new Map<string, boolean>();
  return path.steps.map((step, index) => {
    const head = path.steps[index - 1]?.state.context.queue[0];
    const atHead = head !== undefined && cancels.get(head) === true;
    if (step.event.type === 'lane.enqueue') {
      cancels.set(step.event.commandId, step.event.cancels);
    }
    return atHead;
  });
}

/** The path ends with its cancel carried out: the runtime's run is cancelled. */
function endsCancelled(path: LanePath): boolean {
  const last = path.steps.length - 1;
  const { type } = path.steps[last]?.event ?? { type: '' };
  return (
    type.startsWith(DONE) &&
    cancelsAtHead(path)[last] === true &&
    path.steps[last - 1]?.event.type !== 'lane.cancel_settled'
  );
}

const playedLane = [
  ...new Map(
    [...laneShortest, ...laneSimple, ...laneRetried]
      .filter(lanePlayable)
      .map((path) => [JSON.stringify(path.steps.map((step) => step.event)), path] as const),
  ).values(),
];

async function playLanePath(path: LanePath): Promise<number> {
  const label = describeSteps(path.steps);
  const player = new LanePlayer();
  try {
    await player.start();
    let index = 1;
    while (index < path.steps.length) {
      const step = path.steps[index] as LanePath['steps'][number];
      const from = (path.steps[index - 1] as LanePath['steps'][number]).state;
      const covered = await player.take(step.event, from);
      const last = index + covered - 1;
      // The lane's first record is its start (`xstate.init`), when the run's first command spawns it.
      await settle(() => player.records().length > last, `${label}, step ${last}`);
      for (let done = index; done <= last; done += 1) {
        const expected = path.steps[done] as LanePath['steps'][number];
        const record = player.records()[done];
        // A command that failed is done for the lane, as one carried out: `execute` never rejects.
        const type = expected.event.type.startsWith(ERROR)
          ? expected.event.type.replace(ERROR, DONE)
          : expected.event.type;
        expect(
          { event: record?.event.type, value: record?.value, context: record?.context },
          `${label}, step ${done}`,
        ).toEqual({
          event: type,
          value: expected.state.value,
          context: { runId: player.runId, queue: player.queueOf(expected.state.context.queue) },
        });
      }
      player.expectCommands(`${label}, step ${last}`);
      const state = (path.steps[last] as LanePath['steps'][number]).state;
      const ended = player.runtime.getSnapshot().agentState.runs[player.runId]?.status !== 'running';
      if (state.value.admission === 'cancelling' && !ended) await player.expectRefused(`${label}, step ${last}`);
      index = last + 1;
    }
    const run = player.runtime.getSnapshot().agentState.runs[player.runId];
    if (endsCancelled(path)) {
      // The confirmed cancel ended the run: its lane is stopped, its commands forgotten.
      expect(run?.status, label).toBe('cancelled');
      await settle(() => !player.laneAlive(), `${label}: the lane to stop`);
      expect(player.runtime.getSnapshot().commandStates, label).toEqual({});
    } else {
      for (let count = 0; count < 5; count += 1) await turn();
      expect(run?.status, label).toBe('running');
      // Spawned by the run's first command, the lane took the path's events and only those.
      const commanded = path.steps.length > 1;
      expect(player.laneAlive(), label).toBe(commanded);
      expect(player.records().length, label).toBe(commanded ? path.steps.length : 0);
    }
    return player.refusalsChecked;
  } finally {
    await player.finish();
  }
}

describe('model-based: a real runtime carries out its commands as the command-lane paths say', () => {
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('plays the lane paths one run can live through with approvals, tool retries and cancels', async () => {
    const taking = (predicate: (path: LanePath) => boolean) => playedLane.filter(predicate).length;
    const taken = (type: string) => taking((path) => path.steps.some((step) => step.event.type.startsWith(type)));
    const cancelled = taking(endsCancelled);
    console.log(
      `runtime machines, command lane on createXChatRuntime: ${playedLane.length} paths played, ${taken(ERROR)} with a command the endpoint refused, ${taken('lane.cancel_settled')} with a cancel never confirmed, ${cancelled} ending in a confirmed cancel`,
    );
    expect(taken(ERROR)).toBeGreaterThanOrEqual(10);
    expect(taken('lane.cancel_settled')).toBeGreaterThanOrEqual(10);
    expect(cancelled).toBeGreaterThanOrEqual(10);
    expect(new Set(playedLane.map((path) => JSON.stringify(path.state.value)))).toEqual(
      new Set(LANE_STATES.map((value) => JSON.stringify(value))),
    );
    expect(playedLane.length).toBeGreaterThanOrEqual(50);
    let refusals = 0;
    for (const path of playedLane) refusals += await playLanePath(path);
    console.log(`runtime machines, command lane on createXChatRuntime: ${refusals} refusals behind a cancel checked`);
    expect(refusals).toBeGreaterThan(0);
  });
});
