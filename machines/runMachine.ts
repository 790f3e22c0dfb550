import { type AnyActorRef, assertEvent, assign, emit, enqueueActions, not, setup } from 'xstate';
import { AGENT_ENTITY_EVENT_ROUTES, type AgentEntityEventRoute } from '../protocol/agentEntityKinds';
import type { AgentCommand } from '../protocol/commandSchemas';
import type { AgentEvent, AgentEventOf } from '../protocol/eventSchemas';
import { getAgentEntityKey } from '../protocol/getAgentEntityKey';
import type { AgentProtocolIssue } from '../protocol/protocolIssue';
import type { AgentEntityKind, AgentEntityState, AgentEntityStateMap, AgentRunState } from './agentState';
import { approvalMachine } from './approvalMachine';
import { artifactMachine } from './artifactMachine';
import type { CommandMachineEvent } from './commandEvents';
import { createEntityRecord, type EntityStartEvent } from './entityEvents';
import type { StoreCommandSettledEvent } from './entityUpdates';
import { messageMachine } from './messageMachine';
import { createIssue } from './protocolIssues';
import { reasoningMachine } from './reasoningMachine';
import { taskMachine } from './taskMachine';
import { toolCallMachine } from './toolCallMachine';

/** One entity actor to spawn: its actor id inside the run, and its record. */
export interface EntitySpawn<Kind extends AgentEntityKind = AgentEntityKind> {
  kind: Kind;
  actorId: string;
  entity: AgentEntityStateMap[Kind];
}

/** Raised by the run after it handed an event to an entity: what the entity did with it. */
interface EntityForwardedEvent {
  type: 'run.entity_forwarded';
  actorId: string;
  event: AgentEvent;
  before: unknown;
}

export type RunTerminalEvent = AgentEventOf<'run.completed' | 'run.failed' | 'run.cancelled'>;

export type RunMachineEvent =
  | AgentEvent
  | EntityForwardedEvent
  | { type: `xstate.done.actor.${string}`; actorId: string; output: unknown }
  | CommandMachineEvent<'run.cancel' | EntityCommandType>
  | StoreCommandSettledEvent;

/** The commands a run hands to the entity they address: its guards answer them. */
type EntityCommandType = 'approval.resolve' | 'tool.retry' | 'tool.submit_result';

/** What a run actor emits: each protocol issue it raises, as it raises it. */
export interface AgentRunIssueEmitted {
  type: 'issue';
  issue: AgentProtocolIssue;
}

export interface AgentRunInput {
  sessionId: string;
  runId: string;
  /** A run record to resume from (a checkpoint's): the run starts in the state its status names. */
  run?: AgentRunState | undefined;
  /** `strict`: a terminal event that would close entities the runtime left open is refused instead. */
  protocolMode?: 'record' | 'strict' | undefined;
  /** With `run`: the entities still open, each spawned again (in the one transition that starts the run). */
  entities?: readonly EntitySpawn[] | undefined;
  /** With `run`: the final records of its other entities, by actor id (a second start of one is refused). */
  finished?: Readonly<Record<string, AgentEntityState>> | undefined;
}

export interface AgentRunContext {
  sessionId: string;
  runId: string;
  /** The run's record; undefined until `run.started`. */
  run: AgentRunState | undefined;
  /**
   * The final records of the entities whose actors have finished, by actor id
   * (`<kind>:<id>`); the records of live entities are their actors'. Written in place, one
   * entry per finished entity, so a run of many entities never copies this table.
   */
  finished: Record<string, AgentEntityState>;
  /** The actors of the entities still open, by actor id (the same as the run's `children`). */
  live: Readonly<Record<string, AnyActorRef>>;
  strict: boolean;
}

/** The machine of each entity kind. */
export const entityMachines = {
  message: messageMachine,
  reasoning: reasoningMachine,
  toolCall: toolCallMachine,
  approval: approvalMachine,
  task: taskMachine,
  artifact: artifactMachine,
} as const;

/** The actor id of an entity inside its run: prefixed, so an id such as `__proto__` is a plain key. */
export function entityActorId(kind: AgentEntityKind, entityId: string): string {
  return `${kind}:${entityId}`;
}

type Children = Readonly<Record<string, AnyActorRef | undefined>>;

/** The actor id of the entity a command addresses inside its run; undefined for the run's own `run.cancel`. */
export function commandActorId(command: AgentCommand): string | undefined {
  switch (command.type) {
    case 'approval.resolve':
      return entityActorId('approval', command.payload.approvalId);
    case 'tool.retry':
    case 'tool.submit_result':
      return entityActorId('toolCall', command.payload.toolCallId);
    case 'run.cancel':
      return undefined;
  }
}

/** The command a command event or a settlement carries, if any. */
function commandOf(event: { type: string }): AgentCommand | undefined {
  return (event as { command?: AgentCommand }).command;
}

function isForRun(context: AgentRunContext, command: AgentCommand): boolean {
  return command.runId === context.runId && command.sessionId === context.sessionId;
}

/** The live entity a command of this run addresses. */
function commandedEntity(context: AgentRunContext, event: { type: string }): AnyActorRef | undefined {
  const command = commandOf(event);
  if (command === undefined || !isForRun(context, command)) return undefined;
  const actorId = commandActorId(command);
  return actorId === undefined ? undefined : context.live[actorId];
}

function routeOf(event: { type: string }): AgentEntityEventRoute {
  return AGENT_ENTITY_EVENT_ROUTES.get(event.type as AgentEvent['type']) as AgentEntityEventRoute;
}

/** The entity an entity event names, as its run knows it. */
function addressed(event: AgentEvent) {
  const route = routeOf(event);
  const entityId = (event.payload as Record<string, string>)[route.idField] as string;
  return { route, entityId, actorId: entityActorId(route.kind, entityId) };
}

/** What ending the run does to its live entities, and what it reports. */
export interface RunEndPlan {
  /** Entities the run ends waiting on: they stay live. */
  settle: string[];
  /** Entities still active that the terminal does not list: closed as `run_terminated`. */
  terminate: string[];
  /** Listed ids that cannot be left pending, and every terminated entity the runtime could have closed itself. */
  problems: AgentProtocolIssue[];
}

/**
 * Whether the runtime had an event to close this entity before its terminal. An approval
 * can only be resolved: no event cancels one, so a run that fails or is cancelled (a Stop
 * included) while an approval waits ends it as the run does, and that is no issue. A run
 * that completes could have resolved it or listed it as pending, so there it is one.
 */
function couldBeClosedBefore(kind: AgentEntityKind, event: RunTerminalEvent): boolean {
  return kind !== 'approval' || event.type === 'run.completed';
}

/**
 * The end-of-run policy, decided before anything changes: a `run.completed` may list tool
 * calls and approvals it leaves to the application (`pendingToolCallIds`,
 * `pendingApprovalIds`); those that can wait (their machine says `settleable`, or a tool
 * still streaming its arguments) are settled, any other listed id is a problem, and every
 * other active entity is terminated and reported (but an approval at a failed or cancelled
 * run: no event could have closed it). Reads the entity actors, changes nothing.
 */
export function planRunEnd(context: AgentRunContext, children: Children, event: RunTerminalEvent): RunEndPlan {
  const pending: Partial<Record<AgentEntityKind, ReadonlySet<string>>> =
    event.type === 'run.completed'
      ? { toolCall: new Set(event.payload.pendingToolCallIds), approval: new Set(event.payload.pendingApprovalIds) }
      : {};
  const problems: AgentProtocolIssue[] = [];
  for (const kind of ['toolCall', 'approval'] as const) {
    for (const entityId of pending[kind] ?? []) {
      const actorId = entityActorId(kind, entityId);
      const snapshot = children[actorId]?.getSnapshot();
      if (snapshot?.hasTag('settleable') || snapshot?.hasTag('acceptsDelta')) continue;
      const record = snapshot?.context.entity ?? context.finished[actorId];
      if (record === undefined) {
        const message = `Run "${context.runId}" lists unknown ${kind} "${entityId}" as pending`;
        problems.push(createIssue('missing_entity', message, event, { entityId }));
        continue;
      }
      const state = (record as AgentEntityState).status;
      const message = `${kind} "${entityId}" is ${state} and cannot be left pending`;
      problems.push(createIssue('invalid_transition', message, event, { entityId, state }));
    }
  }
  const settle: string[] = [];
  const terminate: string[] = [];
  for (const [actorId, child] of Object.entries(children)) {
    const snapshot = child?.getSnapshot();
    if (!snapshot?.hasTag('active')) continue;
    const entity = snapshot.context.entity as AgentEntityState;
    const kind = actorId.slice(0, actorId.indexOf(':')) as AgentEntityKind;
    if (pending[kind]?.has(entity.id)) {
      settle.push(actorId);
      continue;
    }
    terminate.push(actorId);
    if (!couldBeClosedBefore(kind, event)) continue;
    const message = `${event.type} arrived while ${kind} "${entity.id}" was ${entity.status}; it was cancelled`;
    problems.push(
      createIssue('active_entities_at_terminal', message, event, { entityId: entity.id, state: entity.status }),
    );
  }
  return { settle, terminate, problems };
}

/** The record a run's terminal event leaves. */
function endedRun(run: AgentRunState, event: RunTerminalEvent): AgentRunState {
  const time = event.timestamp;
  const next: AgentRunState = { ...run, updatedAt: time, endedAt: time, status: 'completed' };
  switch (event.type) {
    case 'run.completed': {
      const { output, usage, pendingToolCallIds, pendingApprovalIds } = event.payload;
      if (output !== undefined) next.output = output;
      if (usage !== undefined) next.usage = usage;
      if (pendingToolCallIds !== undefined && pendingToolCallIds.length > 0) {
        next.pendingToolCallIds = pendingToolCallIds;
      }
      if (pendingApprovalIds !== undefined && pendingApprovalIds.length > 0) {
        next.pendingApprovalIds = pendingApprovalIds;
      }
      return next;
    }
    case 'run.failed':
      return { ...next, status: 'failed', error: event.payload.error };
    case 'run.cancelled':
      next.status = 'cancelled';
      if (event.payload.reason !== undefined) next.reason = event.payload.reason;
      return next;
  }
}

function startedRun(event: AgentEventOf<'run.started'>): AgentRunState {
  const time = event.timestamp;
  const run: AgentRunState = {
    id: event.runId,
    sessionId: event.sessionId,
    status: 'running',
    startedAt: time,
    updatedAt: time,
  };
  if (event.payload.input !== undefined) run.input = event.payload.input;
  if (event.payload.title !== undefined) run.title = event.payload.title;
  if (event.payload.continuesRunId !== undefined) run.continuesRunId = event.payload.continuesRunId;
  if (event.meta !== undefined) run.meta = event.meta;
  return run;
}

/** Whether an entity waits for the application: a tool call it runs, an approval it decides. */
function waitsForApplication(child: AnyActorRef): boolean {
  const snapshot = child.getSnapshot();
  return snapshot.status === 'active' && snapshot.hasTag('settleable');
}

/** Keeps the record of an entity whose actor is let go. Written in place: see `finished`. */
function finish(context: AgentRunContext, actorId: string): void {
  const child = context.live[actorId];
  if (child !== undefined) context.finished[actorId] = child.getSnapshot().context.entity;
}

function without(live: Readonly<Record<string, AnyActorRef>>, actorIds: readonly string[]) {
  const next = { ...live };
  for (const actorId of actorIds) delete next[actorId];
  return next;
}

/** The entity events a run takes while it runs: a start spawns, anything else is forwarded. */
const ENTITY_EVENTS_WHILE_RUNNING = Object.fromEntries(
  [...AGENT_ENTITY_EVENT_ROUTES].map(([type, route]) => [
    type,
    route.role === 'start'
      ? [{ guard: 'isKnownEntity', actions: 'refuseDuplicate' }, { actions: 'spawnEntity' }]
      : [{ guard: 'isLiveEntity', actions: 'forwardToEntity' }, { actions: 'refuseUnknownOrFinished' }],
  ]),
);

/** While waiting for input, only the entities the run waits on take events. */
const ENTITY_EVENTS_WHILE_WAITING = Object.fromEntries(
  [...AGENT_ENTITY_EVENT_ROUTES].map(([type, route]) => [
    type,
    route.role === 'start'
      ? { actions: 'refuseAfterTerminal' }
      : [{ guard: 'isLiveEntity', actions: 'forwardToEntity' }, { actions: 'refuseAfterTerminal' }],
  ]),
);

/**
 * The entity commands, and their settlements, while the run has live entities: handed to the
 * entity the command addresses when its machine accepts the command now. A command the
 * entity refuses (or for an entity the run does not hold live, or of another run) takes no
 * transition, so `snapshot.can(command)` is false and sending it changes nothing, as the
 * store's `can` and `submit` answer; it is no protocol issue.
 */
const ENTITY_COMMANDS = {
  'approval.resolve': { guard: 'entityAccepts', actions: 'forwardCommand' },
  'tool.retry': { guard: 'entityAccepts', actions: 'forwardCommand' },
  'tool.submit_result': { guard: 'entityAccepts', actions: 'forwardCommand' },
  'store.command_settled': { guard: 'settlesLiveEntity', actions: 'forwardCommand' },
} as const;

/**
 * The lifecycle of one run, and the owner of its entities: `pending -> running -> completed
 * | failed | cancelled`. Fed its run's AgentEvents (validated, in order: `runAgentProvider`'s
 * `onEvent` gives them so), it spawns one child actor per message, reasoning, tool call,
 * approval, task and artifact on the event that starts it, hands every later event of that
 * entity to its actor, and keeps the final record of each entity whose actor finished
 * (`context.finished`) as that actor is stopped. An event it cannot take is a protocol issue,
 * emitted as `{ type: 'issue', issue }` (`actor.on('issue', ...)`), with the codes of the
 * store: `duplicate_entity`, `missing_entity`, `invalid_transition`, `terminal_run`,
 * `missing_run`, `active_entities_at_terminal`.
 *
 * At its terminal event it applies the end-of-run policy (`planRunEnd`): a `run.completed`
 * listing tool calls or approvals it leaves to the application (`pendingToolCallIds`,
 * `pendingApprovalIds`; AG-UI's `interrupt`) keeps those live and sits in
 * `waiting_for_input` (its record says `completed`) until they settle; every other active
 * entity is cancelled (`run_terminated`) and reported. In `strict` mode such a terminal is
 * refused instead.
 *
 * Commands are events sent to the run, as `{ type: command.type, command, now }`: while
 * running it takes `run.cancel` itself, one at a time; `approval.resolve`, `tool.retry` and
 * `tool.submit_result` (running or waiting for input) go to the entity they name, whose guards
 * answer them, so `snapshot.can(event)` says whether the command would be taken now. A
 * command that is refused changes nothing. `{ type: 'store.command_settled', command }` ends
 * a submission, so that the target takes a command again. A command never changes a record:
 * only the runtime's events that answer it do.
 *
 * @example
 * const run = createActor(agentRunMachine, { input: { sessionId: 's1', runId: 'r1' } }).start();
 * run.on('issue', ({ issue }) => console.warn(issue.code, issue.message));
 * for (const event of events) run.send(event); // run.started, message.started, message.delta, ...
 * readAgentRunEntities(run.getSnapshot()); // { 'message:m1': { status: 'completed', content: 'Hello', ... } }
 */
export const agentRunMachine = setup({
  types: {
    context: {} as AgentRunContext,
    input: {} as AgentRunInput,
    events: {} as RunMachineEvent,
    emitted: {} as AgentRunIssueEmitted,
    output: {} as AgentRunState | undefined,
  },
  actors: entityMachines,
  guards: {
    hasStatus: ({ context }, params: { status: AgentRunState['status'] }) => context.run?.status === params.status,
    hasNoRecord: ({ context }) => context.run === undefined,
    listsPendingInput: ({ context }) =>
      context.run?.status === 'completed' &&
      ((context.run.pendingToolCallIds?.length ?? 0) > 0 || (context.run.pendingApprovalIds?.length ?? 0) > 0),
    isKnownEntity: ({ context, event }) => {
      const { actorId } = addressed(event as AgentEvent);
      return context.live[actorId] !== undefined || actorId in context.finished;
    },
    isLiveEntity: ({ context, event }) => context.live[addressed(event as AgentEvent).actorId] !== undefined,
    wasRefused: ({ context, event }) => {
      assertEvent(event, 'run.entity_forwarded');
      return context.live[event.actorId]?.getSnapshot() === event.before;
    },
    /** An entity of a waiting run that no longer waits (a tool call that failed): it is done with. */
    isNoLongerPending: ({ context, event }) => {
      assertEvent(event, 'run.entity_forwarded');
      const snapshot = context.live[event.actorId]?.getSnapshot();
      return snapshot?.status === 'active' && !snapshot.hasTag('settleable');
    },
    endsWithProblems: ({ context, event }) =>
      context.strict && planRunEnd(context, context.live, event as RunTerminalEvent).problems.length > 0,
    /** A command of this run (its `runId` and `sessionId`). */
    isForThisRun: ({ context, event }) => {
      const command = commandOf(event);
      return command !== undefined && isForRun(context, command);
    },
    /** The entity a command names is live, and its machine takes the command now. */
    entityAccepts: ({ context, event }) => commandedEntity(context, event)?.getSnapshot().can(event) ?? false,
    /** A settlement of an entity's command, and the entity is still live. */
    settlesLiveEntity: ({ context, event }) => commandedEntity(context, event) !== undefined,
    /** A settlement of the run's own command: `run.cancel`, or one that names none. */
    settlesRun: ({ event }) => {
      const command = commandOf(event);
      return command === undefined || command.type === 'run.cancel';
    },
    /** Whether an entity the run waits on is still open. */
    waitsForInput: ({ context }) => Object.values(context.live).some(waitsForApplication),
  },
  actions: {
    start: assign({
      run: ({ event }) => {
        assertEvent(event, 'run.started');
        return startedRun(event);
      },
    }),
    spawnEntity: assign({
      live: ({ context, event, spawn }) => {
        const start = event as EntityStartEvent;
        const { route, entityId, actorId } = addressed(start);
        const entity = createEntityRecord(start, getAgentEntityKey(context.runId, entityId));
        return { ...context.live, [actorId]: spawn(route.kind, { id: actorId, input: { entity } as never }) };
      },
    }),
    /** A retry arrived: the failed call it retries records it, and takes no other retry. */
    markRetried: ({ context, event }) => {
      assertEvent(event, 'tool.requested');
      const { retryOf, toolCallId } = event.payload;
      if (retryOf === undefined) return;
      const original = context.live[entityActorId('toolCall', retryOf)];
      original?.send({ type: 'store.retried', toolCallId, timestamp: event.timestamp });
    },
    /** Hands a command (or its settlement) to the entity it names; the guard checked it is live. */
    forwardCommand: ({ context, event }) => {
      commandedEntity(context, event)?.send(event);
    },
    /** Hands the event to its entity, then looks at what the entity did with it. */
    forwardToEntity: enqueueActions(({ context, event, enqueue }) => {
      const { actorId } = addressed(event as AgentEvent);
      const child = context.live[actorId] as AnyActorRef;
      const before = child.getSnapshot();
      enqueue(() => child.send(event));
      enqueue.raise({ type: 'run.entity_forwarded', actorId, event: event as AgentEvent, before });
    }),
    refuseForwarded: emit(({ context, event }) => {
      assertEvent(event, 'run.entity_forwarded');
      const { route, entityId } = addressed(event.event);
      const entity = context.live[event.actorId]?.getSnapshot().context.entity as AgentEntityState;
      const message = `${event.event.type} refused by ${route.kind} "${entityId}" in state ${entity.status}`;
      return {
        type: 'issue' as const,
        issue: createIssue('invalid_transition', message, event.event, { entityId, state: entity.status }),
      };
    }),
    /** A finished entity's actor is stopped; its final record stays in `finished`. */
    keepFinished: enqueueActions(({ context, event, enqueue }) => {
      const { actorId } = event as { actorId: string };
      enqueue(() => finish(context, actorId));
      enqueue.stopChild(actorId);
      enqueue.assign({ live: without(context.live, [actorId]) });
    }),
    /** An entity a waiting run no longer waits on is let go, as a restore would find it. */
    letGo: enqueueActions(({ context, event, enqueue }) => {
      assertEvent(event, 'run.entity_forwarded');
      enqueue(() => finish(context, event.actorId));
      enqueue.stopChild(event.actorId);
      enqueue.assign({ live: without(context.live, [event.actorId]) });
    }),
    /** The last entity the run waited on settled: every record left is final. */
    letGoOfAll: enqueueActions(({ context, enqueue }) => {
      const actorIds = Object.keys(context.live);
      enqueue(() => {
        for (const actorId of actorIds) finish(context, actorId);
      });
      enqueue.assign({ live: {} });
    }),
    refuseDuplicate: emit(({ context, event }) => {
      const { route, entityId } = addressed(event as AgentEvent);
      const message = `${route.kind} "${entityId}" already exists in run "${context.runId}"`;
      return { type: 'issue' as const, issue: createIssue('duplicate_entity', message, event, { entityId }) };
    }),
    refuseUnknownOrFinished: emit(({ context, event }) => {
      const { route, entityId, actorId } = addressed(event as AgentEvent);
      const record = context.finished[actorId];
      if (record === undefined) {
        const message = `${event.type} names ${route.kind} "${entityId}", which run "${context.runId}" never started`;
        return { type: 'issue' as const, issue: createIssue('missing_entity', message, event, { entityId }) };
      }
      const state = record.status;
      const message = `${event.type} refused: ${route.kind} "${entityId}" is ${state} and accepts no more events`;
      return {
        type: 'issue' as const,
        issue: createIssue('invalid_transition', message, event, { entityId, state }),
      };
    }),
    refuseAfterTerminal: emit(({ context, event }) => {
      const message = `${event.type} arrived after run "${context.runId}" completed, waiting only for the tool calls and approvals it listed`;
      return {
        type: 'issue' as const,
        issue: createIssue('terminal_run', message, event, { state: 'waiting_for_input' }),
      };
    }),
    refuseBeforeStart: emit(({ context, event }) => {
      const message = `${event.type} belongs to run "${context.runId}", which has not started`;
      return { type: 'issue' as const, issue: createIssue('missing_run', message, event) };
    }),
    refuseSecondStart: emit(({ context, event }) => {
      const message = `Run "${context.runId}" has already started`;
      return { type: 'issue' as const, issue: createIssue('duplicate_entity', message, event) };
    }),
    /** In strict mode: the terminal that would close entities the runtime left open. */
    refuseTerminal: emit(({ context, event }) => {
      const plan = planRunEnd(context, context.live, event as RunTerminalEvent);
      return { type: 'issue' as const, issue: plan.problems[0] as AgentProtocolIssue };
    }),
    /**
     * The end-of-run policy: entities the run waits on are settled (a tool still streaming its
     * arguments has them completed), the other active ones are closed as `run_terminated` and
     * reported, and the run's record ends.
     */
    end: enqueueActions(({ context, event, enqueue }) => {
      const terminal = event as RunTerminalEvent;
      const live = context.live;
      const plan = planRunEnd(context, live, terminal);
      for (const issue of plan.problems) enqueue.emit({ type: 'issue', issue });
      const done = Object.keys(live).filter((actorId) => !plan.settle.includes(actorId));
      enqueue(() => {
        for (const actorId of plan.settle) {
          const child = live[actorId] as AnyActorRef;
          if (child.getSnapshot().hasTag('acceptsDelta')) {
            child.send({ type: 'store.settle_pending', timestamp: terminal.timestamp });
          }
        }
        for (const actorId of plan.terminate) {
          live[actorId]?.send({ type: 'store.terminate', timestamp: terminal.timestamp });
        }
        // Whatever is not kept for the application is done with: its record is final now.
        for (const actorId of done) finish(context, actorId);
      });
      for (const actorId of done) enqueue.stopChild(actorId);
      enqueue.assign({ run: endedRun(context.run as AgentRunState, terminal), live: without(live, done) });
    }),
  },
}).createMachine({
  id: 'run',
  context: ({ input, spawn }) => {
    const live: Record<string, AnyActorRef> = {};
    for (const { kind, actorId, entity } of input.entities ?? []) {
      live[actorId] = spawn(kind, { id: actorId, input: { entity } as never });
    }
    return {
      sessionId: input.sessionId,
      runId: input.runId,
      run: input.run,
      finished: { ...input.finished },
      live,
      strict: input.protocolMode === 'strict',
    };
  },
  initial: 'restoring',
  output: ({ context }) => context.run,
  states: {
    restoring: {
      always: [
        { guard: 'hasNoRecord', target: 'pending' },
        { guard: 'listsPendingInput', target: 'waiting_for_input' },
        { guard: { type: 'hasStatus', params: { status: 'completed' } }, target: 'completed' },
        { guard: { type: 'hasStatus', params: { status: 'failed' } }, target: 'failed' },
        { guard: { type: 'hasStatus', params: { status: 'cancelled' } }, target: 'cancelled' },
        { target: 'running' },
      ],
    },
    pending: {
      on: {
        'run.started': { target: 'running', actions: 'start' },
        // A command is no protocol event: before the start there is nothing to command (`can` says no).
        'run.cancel': {},
        'approval.resolve': {},
        'tool.retry': {},
        'tool.submit_result': {},
        'store.command_settled': {},
        '*': { actions: 'refuseBeforeStart' },
      },
    },
    running: {
      tags: ['active'],
      initial: 'idle',
      states: {
        idle: { on: { 'run.cancel': { guard: 'isForThisRun', target: 'cancelling' } } },
        cancelling: { on: { 'store.command_settled': { guard: 'settlesRun', target: 'idle' } } },
      },
      on: {
        ...ENTITY_EVENTS_WHILE_RUNNING,
        ...ENTITY_COMMANDS,
        'run.started': { actions: 'refuseSecondStart' },
        'tool.requested': [
          { guard: 'isKnownEntity', actions: 'refuseDuplicate' },
          { actions: ['spawnEntity', 'markRetried'] },
        ],
        'run.entity_forwarded': { guard: 'wasRefused', actions: 'refuseForwarded' },
        'xstate.done.actor.*': { actions: 'keepFinished' },
        'run.completed': [
          { guard: 'endsWithProblems', actions: 'refuseTerminal' },
          { target: 'closing', actions: 'end' },
        ],
        'run.failed': [
          { guard: 'endsWithProblems', actions: 'refuseTerminal' },
          { target: 'closing', actions: 'end' },
        ],
        'run.cancelled': [
          { guard: 'endsWithProblems', actions: 'refuseTerminal' },
          { target: 'closing', actions: 'end' },
        ],
      },
    },
    /** The terminal arrived: the run waits for input while an entity it listed is still open. */
    closing: {
      always: [
        { guard: 'waitsForInput', target: 'waiting_for_input' },
        { guard: { type: 'hasStatus', params: { status: 'completed' } }, target: 'completed' },
        { guard: { type: 'hasStatus', params: { status: 'failed' } }, target: 'failed' },
        { target: 'cancelled' },
      ],
    },
    waiting_for_input: {
      tags: ['waiting'],
      always: { guard: not('waitsForInput'), target: 'completed', actions: 'letGoOfAll' },
      on: {
        ...ENTITY_EVENTS_WHILE_WAITING,
        ...ENTITY_COMMANDS,
        // The run has ended: a second start or terminal is refused, as the store refuses it.
        'run.started': { actions: 'refuseSecondStart' },
        'run.completed': { actions: 'refuseAfterTerminal' },
        'run.failed': { actions: 'refuseAfterTerminal' },
        'run.cancelled': { actions: 'refuseAfterTerminal' },
        'run.entity_forwarded': [
          { guard: 'wasRefused', actions: 'refuseForwarded' },
          { guard: 'isNoLongerPending', actions: 'letGo' },
        ],
        'xstate.done.actor.*': { actions: 'keepFinished' },
      },
    },
    completed: { type: 'final' },
    failed: { type: 'final' },
    cancelled: { type: 'final' },
  },
});

/**
 * The records of a run actor's entities, by actor id (`<kind>:<id>`): the final records it
 * kept and the current record of each live entity.
 *
 * @example
 * readAgentRunEntities(run.getSnapshot())['toolCall:call-1']?.status; // 'awaiting_execution'
 */
export function readAgentRunEntities(snapshot: { context: AgentRunContext }): Record<string, AgentEntityState> {
  const entities: Record<string, AgentEntityState> = { ...snapshot.context.finished };
  for (const [actorId, child] of Object.entries(snapshot.context.live)) {
    entities[actorId] = child.getSnapshot().context.entity;
  }
  return entities;
}
