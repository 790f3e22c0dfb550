import { getShortestPaths, getSimplePaths, type StatePath } from '@xstate/graph';
import { describe, expect, it } from 'vitest';
import { type Actor, createActor, fromTransition, type TransitionSnapshot } from 'xstate';
import {
  AGENT_ENTITY_CONTAINERS,
  type AgentEntityState,
  type AgentRunState,
  type AgentState,
} from '../machines/agentState';
import { createAgentStore } from '../machines/createAgentStore';
import { isWaitingForInput } from '../machines/pendingInput';
import { agentRunMachine, entityActorId, readAgentRunEntities } from '../machines/runMachine';
import type { AgentCommand } from '../protocol/commandSchemas';
import { createAgentCommandFactory } from '../protocol/createAgentCommandFactory';
import type { AgentEvent } from '../protocol/eventSchemas';
import type { AgentProtocolIssue } from '../protocol/protocolIssue';
import { runEvents } from './support/events';

/**
 * The run machine with its children, as a graph. `@xstate/graph` traverses a machine purely
 * (its actor scope executes no action), so a run that forwards events to real children cannot
 * be traversed directly. The model's state is the list of events applied so far; each
 * transition replays that list into a real run actor and reads what it holds: the run's state,
 * each live child's state, each finished child's status.
 */

const events = runEvents('r1');
const modelEvents = {
  runStarted: events.create('run.started', {}),
  messageStarted: events.create('message.started', { messageId: 'm1', role: 'assistant' }),
  messageDelta: events.create('message.delta', { messageId: 'm1', delta: 'Hi' }),
  messageCompleted: events.create('message.completed', { messageId: 'm1' }),
  toolRequested: events.create('tool.requested', { toolCallId: 't1', name: 'lookup' }),
  toolArgumentsCompleted: events.create('tool.arguments_completed', { toolCallId: 't1', arguments: '{"q":1}' }),
  toolCompleted: events.create('tool.completed', { toolCallId: 't1', result: { found: true } }),
  toolFailed: events.create('tool.failed', { toolCallId: 't1', error: { message: 'busy', retryable: true } }),
  approvalRequested: events.create('approval.requested', { approvalId: 'a1' }),
  approvalResolved: events.create('approval.resolved', { approvalId: 'a1', decision: 'approved' }),
  runCompleted: events.create('run.completed', { output: 'done' }),
  runCompletedPendingTool: events.create('run.completed', { pendingToolCallIds: ['t1'] }),
  runCompletedPendingApproval: events.create('run.completed', { pendingApprovalIds: ['a1'] }),
  runFailed: events.create('run.failed', { error: { message: 'crash' } }),
  runCancelled: events.create('run.cancelled', { reason: 'user' }),
};
const alphabet: AgentEvent[] = Object.values(modelEvents);

/** What one run actor holds after a list of events, with the issues the last event raised. */
interface Replayed {
  actor: Actor<typeof agentRunMachine>;
  issues: AgentProtocolIssue[];
}

function replay(list: readonly AgentEvent[]): Replayed {
  let issues: AgentProtocolIssue[] = [];
  const actor = createActor(agentRunMachine, { input: { sessionId: 's1', runId: 'r1' } });
  actor.on('issue', ({ issue }) => issues.push(issue));
  actor.start();
  for (const event of list) {
    issues = [];
    // An ended run takes no event (XState warns of a send to a stopped actor).
    if (actor.getSnapshot().status === 'active') actor.send(event);
  }
  return { actor, issues };
}

const sorted = <Value>(entries: Array<[string, Value]>) =>
  Object.fromEntries(entries.sort(([a], [b]) => (a < b ? -1 : 1)));

/** The run's state, each live child's state (and whether text streamed in), each finished child's status. */
function viewOf(actor: Actor<typeof agentRunMachine>): string {
  const { value, context } = actor.getSnapshot();
  const live = Object.entries(context.live).map(([actorId, child]): [string, unknown] => {
    const { value: childValue, context: childContext } = child.getSnapshot();
    const content = (childContext.entity as { content?: unknown }).content;
    return [actorId, typeof content === 'string' && content !== '' ? [childValue, 'streamed'] : childValue];
  });
  const finished = Object.entries(context.finished).map(([actorId, record]): [string, string] => [
    actorId,
    record.status,
  ]);
  return JSON.stringify({ run: value, live: sorted(live), finished: sorted(finished) });
}

interface ModelContext {
  events: AgentEvent[];
  /** The run's state, its live children's states, its finished children's statuses: the graph's vertex. */
  view: string;
  /** What the run actor did with the last event: its issues. */
  issues: AgentProtocolIssue[];
  /** What the run actor holds: its record, its entities' records, and whether it has ended. */
  run: AgentRunState | undefined;
  entities: Record<string, AgentEntityState>;
  waiting: boolean;
  ended: boolean;
}

/** Each list of events is replayed once: the graph asks again for every path through a state. */
const replayed = new Map<string, ModelContext>();

function modelContext(list: AgentEvent[]): ModelContext {
  const key = list.map((event) => event.eventId).join(',');
  const known = replayed.get(key);
  if (known !== undefined) return known;
  const { actor, issues } = replay(list);
  const snapshot = actor.getSnapshot();
  const context: ModelContext = {
    events: list,
    view: viewOf(actor),
    issues,
    run: snapshot.context.run,
    entities: readAgentRunEntities(snapshot),
    waiting: snapshot.matches('waiting_for_input'),
    ended: snapshot.status === 'done',
  };
  actor.stop();
  replayed.set(key, context);
  return context;
}

const runModel = fromTransition(
  (context: ModelContext, event: AgentEvent) => modelContext([...context.events, event]),
  modelContext([]),
);

type ModelSnapshot = TransitionSnapshot<ModelContext>;
type ModelPath = StatePath<ModelSnapshot, AgentEvent>;
const serializeState = (snapshot: ModelSnapshot) => snapshot.context.view;
const runValueOf = (snapshot: ModelSnapshot) => (JSON.parse(snapshot.context.view) as { run: unknown }).run;

/** The store's records of run r1's entities, by the actor id the run actor uses. */
function storeEntities(state: AgentState): Record<string, AgentEntityState> {
  const entities: Record<string, AgentEntityState> = {};
  for (const { kind, key } of state.order) {
    const entity = (state[AGENT_ENTITY_CONTAINERS[kind]] as Record<string, AgentEntityState>)[key] as AgentEntityState;
    entities[entityActorId(kind, entity.id)] = entity;
  }
  return entities;
}

/** What two issues must share: everything but the event's id and sequence, which the store's copy renumbers. */
function comparable(issue: AgentProtocolIssue) {
  const { code, message, runId, entityId, state } = issue;
  return { code, message, runId, entityId, state, event: (issue.event as AgentEvent).type };
}

/** A store fed the model's events, each a copy with a fresh id and sequence (as modelBased does). */
class StoreDriver {
  readonly store = createAgentStore();
  private sequence = 0;

  constructor(list: readonly AgentEvent[] = []) {
    this.store.batch(list.map((event) => this.renumbered(event)));
  }

  private renumbered(event: AgentEvent): AgentEvent {
    this.sequence += 1;
    return { ...event, eventId: `store-${this.sequence}`, sequence: this.sequence };
  }

  /** Dispatches one event; returns the issues it added. */
  dispatch(event: AgentEvent): AgentProtocolIssue[] {
    const before = this.store.getSnapshot().issues.length;
    this.store.dispatch(this.renumbered(event));
    return this.store.getSnapshot().issues.slice(before);
  }

  /** Submits a command, as `agentActions` does: whether the machines took it. */
  submit(command: AgentCommand): boolean {
    return this.store.submit(command);
  }
}

/** The store holds what the run actor holds: the run record, the entities, whether the run waits for input. */
function expectAgreement(store: AgentState, context: ModelContext, where: string): void {
  expect(store.runs.r1, `${where}: run record`).toEqual(context.run);
  expect(storeEntities(store), `${where}: entities`).toEqual(context.entities);
  const run = store.runs.r1;
  expect(run !== undefined && isWaitingForInput(store, run), `${where}: waiting for input`).toBe(context.waiting);
}

/**
 * The events of a path's own steps. The graph merges states by their view, so the snapshot a
 * path ends in may hold another list of events that leads to the same view.
 */
const eventsOf = (path: ModelPath): AgentEvent[] => path.steps.slice(1).map((step) => step.event);

const describePath = (list: readonly AgentEvent[]) =>
  list.map((event) => event.type + JSON.stringify(event.payload)).join(' -> ');

/**
 * Replays a path into a real run actor and a real store side by side: at every step the actor
 * is where the graph said it is, and the store holds the same records and raises the same issues.
 */
function checkPath(path: ModelPath): StoreDriver {
  const issues: AgentProtocolIssue[] = [];
  const oracle = createActor(agentRunMachine, { input: { sessionId: 's1', runId: 'r1' } });
  oracle.on('issue', ({ issue }) => issues.push(issue));
  oracle.start();
  const driver = new StoreDriver();
  const where = describePath(eventsOf(path));
  // The first step is the graph's `xstate.init`: the actor's initial state.
  for (const step of path.steps.slice(1)) {
    issues.length = 0;
    oracle.send(step.event);
    const storeIssues = driver.dispatch(step.event);
    expect(viewOf(oracle), where).toBe(serializeState(step.state));
    expect(storeIssues.map(comparable), `${where}: issues at ${step.event.type}`).toEqual(issues.map(comparable));
    const snapshot = oracle.getSnapshot();
    expectAgreement(
      driver.store.getSnapshot(),
      {
        ...step.state.context,
        run: snapshot.context.run,
        entities: readAgentRunEntities(snapshot),
        waiting: snapshot.matches('waiting_for_input'),
      },
      `${where} (${step.event.type})`,
    );
  }
  oracle.stop();
  return driver;
}

/**
 * In the state a path ends in, every event of the alphabet: the store raises the same issues
 * as the run actor, so what the actor refuses the store refuses (and keeps its records), and
 * what it takes the store takes. A run actor that has ended takes nothing: the store refuses
 * everything. `store` has taken the path; a refused event changes nothing, so the next one goes
 * to the same store. Returns how many events were refused.
 */
function checkRefusals(path: ModelPath, store: StoreDriver): number {
  const context = modelContext(eventsOf(path));
  expect(context.view).toBe(path.state.context.view);
  let refused = 0;
  let driver: StoreDriver | undefined = store;
  for (const candidate of alphabet) {
    driver ??= new StoreDriver(context.events);
    const before = driver.store.getSnapshot();
    const storeIssues = driver.dispatch(candidate);
    const after = driver.store.getSnapshot();
    const where = `${describePath(context.events)} + ${candidate.type}${JSON.stringify(candidate.payload)}`;
    // A final run actor takes no event; the store says why.
    const next = context.ended ? { ...context, issues: [] } : modelContext([...context.events, candidate]);
    if (context.ended) {
      expect(
        storeIssues.map((issue) => issue.code),
        where,
      ).toEqual([candidate.type === 'run.started' ? 'duplicate_entity' : 'terminal_run']);
    } else {
      expect(storeIssues.map(comparable), where).toEqual(next.issues.map(comparable));
    }
    expectAgreement(after, next, where);
    if (storeIssues.length > 0 && next.view === context.view) {
      expect(storeEntities(after), where).toEqual(storeEntities(before));
      expect(after.runs.r1, where).toEqual(before.runs.r1);
      refused += 1;
    } else {
      driver = undefined;
    }
  }
  return refused;
}

/** The graph's events: all of the alphabet, but none once the run has ended (it takes no more). */
const eventsIn = (alphabetOf: readonly AgentEvent[]) => (snapshot: ModelSnapshot) =>
  snapshot.context.ended ? [] : alphabetOf;

function runStates(paths: ModelPath[]): Set<string> {
  const states = new Set<string>();
  for (const path of paths) for (const step of path.steps) states.add(JSON.stringify(runValueOf(step.state)));
  return states;
}

/** The steps that leave `waiting_for_input`, with the live children of the state they leave. */
function stepsLeavingWaiting(path: ModelPath) {
  const leaving: Array<{ event: AgentEvent; live: string[]; to: unknown }> = [];
  path.steps.forEach((step, index) => {
    const previous = path.steps[index - 1];
    if (previous === undefined || runValueOf(previous.state) !== 'waiting_for_input') return;
    const to = runValueOf(step.state);
    if (to === 'waiting_for_input') return;
    const live = Object.keys((JSON.parse(previous.state.context.view) as { live: object }).live);
    leaving.push({ event: step.event, live, to });
  });
  return leaving;
}

const addressedActorId = (event: AgentEvent) => {
  const payload = event.payload as { messageId?: string; toolCallId?: string; approvalId?: string };
  if (payload.toolCallId !== undefined) return entityActorId('toolCall', payload.toolCallId);
  if (payload.approvalId !== undefined) return entityActorId('approval', payload.approvalId);
  if (payload.messageId !== undefined) return entityActorId('message', payload.messageId);
  return undefined;
};

/** Every path through the waiting state: left only by an event of an entity it waits on, always to `completed`. */
function checkWaiting(paths: ModelPath[]): number {
  let settled = 0;
  for (const path of paths) {
    const leaving = stepsLeavingWaiting(path);
    for (const { event, live, to } of leaving) {
      expect(to, describePath(eventsOf(path))).toBe('completed');
      expect(live, describePath(eventsOf(path))).toContain(addressedActorId(event));
      settled += 1;
    }
    if (leaving.length > 0) expect(runValueOf(path.state)).toBe('completed');
  }
  return settled;
}

describe('model-based: the run machine with its children, against the store', () => {
  it('shortest paths reach every run state; the store agrees at each step and refuses what the run refuses', () => {
    const paths = getShortestPaths(runModel, { events: eventsIn(alphabet), serializeState });
    console.log(`run machine model: ${paths.length} shortest paths (one per state)`);
    expect(paths.length).toBeGreaterThanOrEqual(180);

    const reached = runStates(paths);
    for (const value of ['pending', { running: 'idle' }, 'waiting_for_input', 'completed', 'failed', 'cancelled']) {
      expect(reached, `run state ${JSON.stringify(value)} is unreachable`).toContain(JSON.stringify(value));
    }

    let refusals = 0;
    for (const path of paths) refusals += checkRefusals(path, checkPath(path));
    console.log(`run machine model: ${refusals} refusals checked against the store`);
    expect(refusals).toBeGreaterThanOrEqual(2000);

    // The waiting state: in it, every event but those of the entities it waits on is refused.
    const waiting = paths.filter((path) => runValueOf(path.state) === 'waiting_for_input');
    expect(waiting.length).toBeGreaterThanOrEqual(8);
    for (const path of waiting) {
      const live = Object.keys((JSON.parse(path.state.context.view) as { live: object }).live);
      expect(live.length).toBeGreaterThan(0);
      for (const candidate of alphabet) {
        const addressed = addressedActorId(candidate);
        if (addressed !== undefined && live.includes(addressed) && !candidate.type.endsWith('.requested')) continue;
        const next = modelContext([...eventsOf(path), candidate]);
        const where = `${describePath(eventsOf(path))} + ${candidate.type}`;
        expect(next.view, where).toBe(path.state.context.view);
        expect(next.issues.length, `${where}: the waiting run took it silently`).toBeGreaterThan(0);
      }
    }
  });

  it('simple paths through the waiting state are settled only by its pending input, and end completed', () => {
    // Bounded by the event set: one tool call and one approval, the terminals that wait on them.
    const waitingAlphabet = [
      modelEvents.runStarted,
      modelEvents.toolRequested,
      modelEvents.toolArgumentsCompleted,
      modelEvents.toolCompleted,
      modelEvents.toolFailed,
      modelEvents.approvalRequested,
      modelEvents.approvalResolved,
      modelEvents.runCompletedPendingTool,
      modelEvents.runCompletedPendingApproval,
      modelEvents.runFailed,
    ];
    const paths = getSimplePaths(runModel, { events: eventsIn(waitingAlphabet), serializeState });
    console.log(`run machine model: ${paths.length} simple paths`);
    expect(paths.length).toBeGreaterThanOrEqual(300);

    const throughWaiting = paths.filter((path) =>
      path.steps.some((step) => runValueOf(step.state) === 'waiting_for_input'),
    );
    const settled = checkWaiting(throughWaiting);
    console.log(`run machine model: ${throughWaiting.length} paths through waiting_for_input, ${settled} settle it`);
    expect(throughWaiting.length).toBeGreaterThanOrEqual(80);
    expect(settled).toBeGreaterThanOrEqual(40);
    const settledBy = new Set(
      throughWaiting.flatMap((path) => stepsLeavingWaiting(path).map(({ event }) => event.type)),
    );
    // Each way a pending entity settles leaves the waiting state on some path.
    expect([...settledBy].sort()).toEqual(['approval.resolved', 'tool.completed', 'tool.failed']);

    for (const path of throughWaiting) checkPath(path);
  });
});

/**
 * The run machine with its commands. The same replay as above, with steps that are commands
 * as the run takes them (`{ type, command, now }`) and the settlement of a command it took
 * (`{ type: 'store.command_settled', command }`, offered only while that command is in flight,
 * as the store settles only the command it submitted). Each path runs against a store that
 * submits and settles the same commands: at every step it takes what the run takes.
 */
const commandFactory = createAgentCommandFactory({ sessionId: 's1', runId: 'r1', now: () => 0 });
const modelCommands = {
  toolRetry: commandFactory.create('tool.retry', { toolCallId: 't1' }),
  toolSubmitResult: commandFactory.create('tool.submit_result', { toolCallId: 't1', result: { found: true } }),
  runCancel: commandFactory.create('run.cancel', {}),
};
const retryRequested = events.create('tool.requested', { toolCallId: 't2', name: 'lookup', retryOf: 't1', attempt: 2 });

interface CommandStep {
  type: AgentCommand['type'];
  command: AgentCommand;
  now: number;
}
interface SettlementStep {
  type: 'store.command_settled';
  command: AgentCommand;
}
type Step = AgentEvent | CommandStep | SettlementStep;

const commandStep = (command: AgentCommand): CommandStep => ({ type: command.type, command, now: 0 });
const settlementStep = (command: AgentCommand): SettlementStep => ({ type: 'store.command_settled', command });
const isCommandStep = (step: Step): step is CommandStep | SettlementStep => 'command' in step;
const stepKey = (step: Step) =>
  isCommandStep(step)
    ? `${step.type === 'store.command_settled' ? 'settled' : 'command'}:${step.command.commandId}`
    : step.eventId;
const describeStep = (step: Step) =>
  isCommandStep(step) ? `${step.type}(${step.command.type})` : step.type + JSON.stringify(step.payload);

const commandEvents: AgentEvent[] = [
  modelEvents.runStarted,
  modelEvents.toolRequested,
  modelEvents.toolArgumentsCompleted,
  modelEvents.toolFailed,
  modelEvents.toolCompleted,
  retryRequested,
  modelEvents.runCompletedPendingTool,
  modelEvents.runCancelled,
];
const commandAlphabet: CommandStep[] = Object.values(modelCommands).map(commandStep);

interface CommandModelContext {
  steps: Step[];
  view: string;
  /** The commands the run took and that are not settled yet, by id. */
  inFlight: AgentCommand[];
  ended: boolean;
}

const commandContexts = new Map<string, CommandModelContext>();

function commandModelContext(steps: Step[]): CommandModelContext {
  const key = steps.map(stepKey).join(',');
  const known = commandContexts.get(key);
  if (known !== undefined) return known;
  const actor = createActor(agentRunMachine, { input: { sessionId: 's1', runId: 'r1' } }).start();
  let inFlight: AgentCommand[] = [];
  for (const step of steps) {
    if (actor.getSnapshot().status !== 'active') break;
    if (step.type === 'store.command_settled') {
      inFlight = inFlight.filter((command) => command !== step.command);
    } else if (isCommandStep(step) && actor.getSnapshot().can(step)) {
      inFlight = [...inFlight, step.command];
    }
    actor.send(step as never);
  }
  const context: CommandModelContext = {
    steps,
    view: viewOf(actor),
    inFlight,
    ended: actor.getSnapshot().status === 'done',
  };
  actor.stop();
  commandContexts.set(key, context);
  return context;
}

const commandModel = fromTransition(
  (context: CommandModelContext, step: Step) => commandModelContext([...context.steps, step]),
  commandModelContext([]),
);
type CommandModelSnapshot = TransitionSnapshot<CommandModelContext>;
type CommandModelPath = StatePath<CommandModelSnapshot, Step>;
const serializeCommandState = (snapshot: CommandModelSnapshot) =>
  `${snapshot.context.view} in flight: ${snapshot.context.inFlight.map((command) => command.type).join(',')}`;
const commandRunValue = (snapshot: CommandModelSnapshot) => (JSON.parse(snapshot.context.view) as { run: unknown }).run;

/**
 * Replays a path into a real run actor and a real store: each command the run takes (its
 * `can`) the store's `can` and `submit` take, each settlement goes to both, events give the
 * same issues, and both hold the same records. At the end, the store answers every command
 * as the run does. Returns how many commands both refused along the way and at the end.
 */
function checkCommandPath(path: CommandModelPath): number {
  const issues: AgentProtocolIssue[] = [];
  const oracle = createActor(agentRunMachine, { input: { sessionId: 's1', runId: 'r1' } });
  oracle.on('issue', ({ issue }) => issues.push(issue));
  oracle.start();
  const driver = new StoreDriver();
  const steps = path.steps.slice(1).map((step) => step.event);
  const where = steps.map(describeStep).join(' -> ');
  let refused = 0;
  for (const step of path.steps.slice(1)) {
    issues.length = 0;
    const event = step.event;
    if (event.type === 'store.command_settled') {
      driver.store.settle(event.command);
      oracle.send(event);
    } else if (isCommandStep(event)) {
      const can = oracle.getSnapshot().can(event);
      expect(driver.store.can(event.command), `${where}: can ${event.command.type}`).toBe(can);
      expect(driver.submit(event.command), `${where}: submit ${event.command.type}`).toBe(can);
      if (!can) refused += 1;
      oracle.send(event);
      expect(issues, `${where}: a command raises no issue`).toEqual([]);
    } else {
      const storeIssues = driver.dispatch(event);
      oracle.send(event);
      expect(storeIssues.map(comparable), `${where}: issues at ${event.type}`).toEqual(issues.map(comparable));
    }
    expect(viewOf(oracle), where).toBe(step.state.context.view);
    const snapshot = oracle.getSnapshot();
    expectAgreement(
      driver.store.getSnapshot(),
      {
        ...modelContext([]),
        run: snapshot.context.run,
        entities: readAgentRunEntities(snapshot),
        waiting: snapshot.matches('waiting_for_input'),
      },
      `${where} (${event.type})`,
    );
  }
  const last = oracle.getSnapshot();
  for (const candidate of commandAlphabet) {
    const can = last.status === 'active' && last.can(candidate);
    expect(driver.store.can(candidate.command), `${where} + ${candidate.type}`).toBe(can);
    if (!can) refused += 1;
  }
  oracle.stop();
  return refused;
}

describe('model-based: the run machine with its commands, against the store', () => {
  it('shortest paths reach every command state; the store takes and refuses the commands the run does', () => {
    const paths = getShortestPaths(commandModel, {
      events: (snapshot) =>
        snapshot.context.ended
          ? []
          : [...commandEvents, ...commandAlphabet, ...snapshot.context.inFlight.map(settlementStep)],
      serializeState: serializeCommandState,
    });
    console.log(`run machine command model: ${paths.length} shortest paths (one per state)`);
    expect(paths.length).toBeGreaterThanOrEqual(190);

    const views = paths.map(
      (path) =>
        JSON.parse(path.state.context.view) as {
          run: unknown;
          live: Record<string, unknown>;
          finished: Record<string, string>;
        },
    );
    const reached = (predicate: (view: (typeof views)[number]) => boolean) => views.some(predicate);
    // The run's own command, and each entity command in flight.
    expect(reached((view) => JSON.stringify(view.run) === JSON.stringify({ running: 'cancelling' }))).toBe(true);
    expect(
      reached((view) => JSON.stringify(view.live['toolCall:t1']) === JSON.stringify({ retryable: 'submitting' })),
    ).toBe(true);
    // A run waiting for input takes the result of the tool it waits on.
    const takenWhileWaiting = paths.filter((path) => {
      const [previous, last] = path.steps.slice(-2);
      return (
        previous !== undefined &&
        last?.event.type === 'tool.submit_result' &&
        commandRunValue(previous.state) === 'waiting_for_input' &&
        last.state.context.inFlight.length > previous.state.context.inFlight.length
      );
    });
    expect(takenWhileWaiting.length).toBeGreaterThan(0);
    for (const path of takenWhileWaiting) {
      const view = JSON.parse(path.state.context.view) as { run: unknown; live: Record<string, unknown> };
      expect(view.run).toBe('waiting_for_input');
      expect(view.live['toolCall:t1']).toEqual({ open: { awaiting_execution: 'submitting' } });
    }
    // The retry arrived: the call it retries failed for good.
    expect(reached((view) => view.finished['toolCall:t1'] === 'failed' && 'toolCall:t2' in view.live)).toBe(true);
    expect(new Set(paths.map((path) => JSON.stringify(commandRunValue(path.state))))).toContain(
      JSON.stringify('cancelled'),
    );

    let refused = 0;
    for (const path of paths) refused += checkCommandPath(path);
    console.log(`run machine command model: ${refused} command refusals checked against the store`);
    expect(refused).toBeGreaterThanOrEqual(500);
  });

  it('simple paths through a tool retry: taken once, settled, then the retry closes the failed call', () => {
    const retryAlphabet: Step[] = [
      modelEvents.runStarted,
      modelEvents.toolRequested,
      modelEvents.toolFailed,
      retryRequested,
      commandStep(modelCommands.toolRetry),
      commandStep(modelCommands.runCancel),
      modelEvents.runCancelled,
    ];
    const paths = getSimplePaths(commandModel, {
      events: (snapshot) =>
        snapshot.context.ended ? [] : [...retryAlphabet, ...snapshot.context.inFlight.map(settlementStep)],
      serializeState: serializeCommandState,
    });
    console.log(`run machine command model: ${paths.length} simple paths with a retry`);
    expect(paths.length).toBeGreaterThanOrEqual(700);
    // On every path the retry is taken only while t1 failed retryable and nothing is in flight;
    // once the retry arrives for a call that failed retryable (in flight or not), that call has failed for good.
    let taken = 0;
    for (const path of paths) {
      path.steps.forEach((step, index) => {
        const previous = path.steps[index - 1];
        if (previous === undefined) return;
        const before = JSON.parse(previous.state.context.view) as { live: Record<string, unknown> };
        const after = JSON.parse(step.state.context.view) as {
          live: Record<string, unknown>;
          finished: Record<string, string>;
        };
        const where = path.steps
          .slice(1, index + 1)
          .map((each) => describeStep(each.event))
          .join(' -> ');
        if (
          step.event.type === 'tool.retry' &&
          step.state.context.inFlight.length > previous.state.context.inFlight.length
        ) {
          expect(before.live['toolCall:t1'], where).toEqual({ retryable: 'idle' });
          expect(after.live['toolCall:t1'], where).toEqual({ retryable: 'submitting' });
          taken += 1;
        }
        const t1 = before.live['toolCall:t1'];
        if (step.event === retryRequested && typeof t1 === 'object' && t1 !== null && 'retryable' in t1) {
          expect(after.live['toolCall:t1'], where).toBeUndefined();
          expect(after.finished['toolCall:t1'], where).toBe('failed');
        }
      });
    }
    console.log(`run machine command model: ${taken} retries taken on those paths`);
    expect(taken).toBeGreaterThanOrEqual(600);
    for (const path of paths) checkCommandPath(path);
  });
});
