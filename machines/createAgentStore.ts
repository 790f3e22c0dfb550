import { type AnyActorRef, createActor, type InspectionEvent } from 'xstate';
import type { AgentCommand } from '../protocol/commandSchemas';
import { AgentError, AgentProtocolError } from '../protocol/errors';
import type { AgentEvent, AgentEventOf } from '../protocol/eventSchemas';
import { getAgentEntityKey } from '../protocol/getAgentEntityKey';
import { checkAgentEvent, checkStreamedDelta, isAgentCommand } from '../protocol/parseAgentEvent';
import type { AgentProtocolIssue, AgentProtocolIssueCode } from '../protocol/protocolIssue';
import {
  AGENT_ENTITY_CONTAINERS,
  type AgentEntityKind,
  type AgentEntityState,
  type AgentExtensionRecord,
  type AgentRunState,
  type AgentState,
  createEmptyAgentState,
} from './agentState';
import { AgentStateProjection } from './agentStateProjection';
import { parseAgentState } from './agentStateSchema';
import { applyStatePatch, type StatePatchLimits } from './applyStatePatch';
import {
  createEntityRecord,
  ENTITY_EVENT_ROUTES,
  type EntityStartEvent,
  getEventEntityId,
  isFinalEntityStatus,
} from './entityEvents';
import { withDefined } from './entityUpdates';
import { isPendingEntity, isWaitingForInput } from './pendingInput';
import type { EntitySpawn } from './runMachine';
import { SeenEvents } from './SeenEvents';
import { sessionMachine } from './sessionMachine';
import { commandTarget, commandTargetKey, submitCommand } from './storeCommands';
import {
  ABSORBED,
  belongsTo,
  describeInvalidEvent,
  type EntityHandle,
  emptyEntityMaps,
  hasIdentity,
  type Outcome,
  type RunHandle,
  type RunRef,
  runActorId,
  stateName,
} from './storeHandles';

export type AgentProtocolMode = 'record' | 'strict';

export interface AgentStoreOptions {
  /** `record` (default) keeps going and lists issues in `AgentState.issues`; `strict` throws `AgentProtocolError`. */
  protocolMode?: AgentProtocolMode;
  /** The clock commands are checked against (approval expiry). Default `Date.now`. */
  now?: () => number;
  /** Passed to XState: the Stately inspector, or any observer, sees the whole actor system. */
  inspect?: (event: InspectionEvent) => void;
  /** Bounds on what one `state.delta` or `activity.delta` may do; a patch past them is `invalid_patch`. */
  statePatchLimits?: StatePatchLimits;
}

export interface AgentStore {
  /** The current AgentState; the same object until something changes. */
  getSnapshot(): AgentState;
  dispatch(event: unknown): void;
  /** Applies events in order and notifies once. In strict mode it is atomic. */
  batch(events: readonly unknown[]): void;
  /** Rebuilds the store from an AgentState (a checkpoint's), or empties it. */
  reset(state?: AgentState): void;
  subscribe(listener: () => void): () => void;
  /** Whether the machines would accept this command now. A command never changes AgentState. */
  can(command: AgentCommand): boolean;
  /** Marks a command as submitting, when the machines accept it; a second one for the same target is refused. */
  submit(command: AgentCommand): boolean;
  /** Ends the submission of a command (the runtime answered, or sending it failed). */
  settle(command: AgentCommand): void;
  destroy(): void;
}

/**
 * The headless store: a session actor that owns one actor per running run, which owns
 * one actor per live entity. Events are validated and routed straight to their entity's
 * actor; consecutive streamed deltas of one entity are checked at once and handed to
 * the machine as one event before anything else reads or touches that entity.
 *
 * @example
 * const store = createAgentStore();
 * const events = createAgentEventFactory({ sessionId: 's1', runId: 'r1' });
 * store.batch([
 *   events.create('run.started', {}),
 *   events.create('message.started', { messageId: 'm1', role: 'assistant' }),
 *   events.create('message.delta', { messageId: 'm1', delta: 'Hello' }),
 * ]);
 * store.getSnapshot().messages[getAgentEntityKey('r1', 'm1')].content; // 'Hello'
 */
export function createAgentStore(options: AgentStoreOptions = {}): AgentStore {
  const strict = options.protocolMode === 'strict';
  const now = options.now ?? Date.now;
  const listeners = new Set<() => void>();
  let destroyed = false;
  let session = createActor(sessionMachine, options.inspect ? { inspect: options.inspect } : {});
  session.start();
  let projection = new AgentStateProjection(createEmptyAgentState());
  let runs = new Map<string, RunHandle>();
  let pending: EntityHandle[] = [];
  let sequenceChanges: RunHandle[] = [];
  /** Commands being submitted, so a rolled-back strict batch can restore them. */
  const submitting = new Map<string, AgentCommand>();
  /** Ids added during the current strict batch, removed again if it fails. */
  let batchSeen: Array<[RunHandle, string]> | undefined;

  function assertAlive(): void {
    if (destroyed) throw new AgentError('store_destroyed', 'The agent store was destroyed');
  }

  function issue(
    code: AgentProtocolIssueCode,
    message: string,
    event: unknown,
    extra: Partial<AgentProtocolIssue> = {},
  ) {
    const result: AgentProtocolIssue = { code, message, event };
    if (hasIdentity(event)) result.runId = event.runId;
    if (extra.runId !== undefined) result.runId = extra.runId;
    if (extra.entityId !== undefined) result.entityId = extra.entityId;
    if (extra.state !== undefined) result.state = extra.state;
    return result;
  }

  function createRunHandle(runId: string): RunHandle {
    const handle: RunHandle = {
      runId,
      sessionId: '',
      status: 'unknown',
      ref: undefined,
      entities: emptyEntityMaps(),
      live: new Set(),
      seen: new SeenEvents(),
      lastSequence: -1,
      sequenceDirty: false,
      restoredSequence: -1,
    };
    runs.set(runId, handle);
    return handle;
  }

  function markSeen(run: RunHandle, event: AgentEvent, advance: boolean): void {
    run.seen.add(event.eventId);
    batchSeen?.push([run, event.eventId]);
    if (advance) advanceSequence(run, event.sequence);
  }

  function advanceSequence(run: RunHandle, sequence: number): void {
    run.lastSequence = sequence;
    // The projection learns the sequence at the next read, not once per event.
    if (!run.sequenceDirty) {
      run.sequenceDirty = true;
      sequenceChanges.push(run);
    }
  }

  function record(handle: EntityHandle): void {
    const ref = handle.ref;
    if (ref === undefined) return;
    const snapshot = ref.getSnapshot();
    projection.setEntity(handle.kind, snapshot.context.entity as AgentEntityState);
    // A waiting run keeps only what it waits on: an entity that is no longer pending (a
    // tool that failed, retryable or not) is done with, as a restore would find it.
    if (snapshot.status === 'done' || (handle.run.status === 'waiting' && !snapshot.hasTag('settleable'))) {
      finish(handle);
    }
  }

  /** A final entity's actor is stopped; its record stays in AgentState as plain data. */
  function finish(handle: EntityHandle): void {
    const run = handle.run;
    handle.ref = undefined;
    run.live.delete(handle);
    run.ref?.send({ type: 'entity.stop', actorId: handle.actorId });
    // A waiting run ends when the last entity it waited on has settled.
    if (run.status === 'waiting' && run.live.size === 0) {
      run.ref?.send({ type: 'store.input_settled' });
      stopRun(run);
    }
  }

  function stopRun(run: RunHandle): void {
    run.status = 'ended';
    run.ref = undefined;
    session.send({ type: 'run.stop', actorId: runActorId(run.runId) });
  }

  function flushEntity(handle: EntityHandle): void {
    const last = handle.pendingEvent;
    if (last === undefined || handle.ref === undefined) return;
    // Joined into one flat string: the machine appends it to the text, and a string built
    // by `+=` from hundreds of pieces made that transition take about twice as long.
    const pieces = handle.pendingDelta;
    const delta = pieces.length === 1 ? (pieces[0] as string) : pieces.join('');
    pieces.length = 0;
    handle.pendingEvent = undefined;
    handle.ref.send({ ...last, payload: { ...last.payload, delta } });
    record(handle);
  }

  /** Brings the machines and the projection up to date before anything reads them. */
  function flush(): void {
    if (pending.length > 0) {
      const handles = pending;
      pending = [];
      for (const handle of handles) flushEntity(handle);
    }
    if (sequenceChanges.length > 0) {
      for (const run of sequenceChanges) {
        run.sequenceDirty = false;
        projection.setSequence(run.runId, run.lastSequence);
      }
      sequenceChanges = [];
    }
  }

  function spawnEntities(run: RunHandle, spawns: EntitySpawn[]): void {
    run.ref?.send({ type: 'entities.spawn', entities: spawns });
    const children = run.ref?.getSnapshot().children as Record<string, AnyActorRef> | undefined;
    for (const spawn of spawns) {
      const handle = run.entities[spawn.kind].get(spawn.entity.id);
      if (handle === undefined) continue;
      handle.ref = children?.[spawn.actorId];
      run.live.add(handle);
    }
  }

  function addEntityHandle(run: RunHandle, kind: AgentEntityKind, id: string, key: string): EntityHandle {
    const handle: EntityHandle = {
      kind,
      id,
      key,
      actorId: `${kind}:${id}`,
      run,
      ref: undefined,
      pendingDelta: [],
      pendingEvent: undefined,
    };
    run.entities[kind].set(id, handle);
    return handle;
  }

  function startRun(event: AgentEventOf<'run.started'>, existing: RunHandle | undefined): Outcome {
    if (existing !== undefined && existing.status !== 'unknown') {
      if (!strict) markSeen(existing, event, true);
      return issue('duplicate_entity', `Run "${event.runId}" has already started`, event);
    }
    const run = existing ?? createRunHandle(event.runId);
    markSeen(run, event, true);
    run.status = 'running';
    run.sessionId = event.sessionId;
    const time = event.timestamp;
    const record: AgentRunState = {
      id: event.runId,
      sessionId: event.sessionId,
      status: 'running',
      startedAt: time,
      updatedAt: time,
    };
    if (event.payload.input !== undefined) record.input = event.payload.input;
    if (event.payload.title !== undefined) record.title = event.payload.title;
    if (event.meta !== undefined) record.meta = event.meta;
    touchSession(event, undefined);
    session.send({ type: 'runs.spawn', runs: [{ actorId: runActorId(event.runId), run: record }] });
    run.ref = session.getSnapshot().children[runActorId(event.runId)] as RunRef | undefined;
    projection.setRun(record);
    return undefined;
  }

  function touchSession(event: AgentEvent, fields: { title?: string | undefined; data?: unknown } | undefined): void {
    const current = projection.getSession(event.sessionId);
    const time = event.timestamp;
    const next = current ? { ...current, updatedAt: time } : { id: event.sessionId, createdAt: time, updatedAt: time };
    if (fields?.title !== undefined) next.title = fields.title;
    if (fields?.data !== undefined) next.data = fields.data;
    projection.setSession(next);
  }

  function endRun(run: RunHandle, event: AgentEventOf<'run.completed' | 'run.failed' | 'run.cancelled'>): Outcome {
    const runRef = run.ref as RunRef;
    for (const handle of run.live) flushEntity(handle);
    // Entities the run may end with, left to the application: tool calls to execute, approvals to answer.
    const pending: Partial<Record<AgentEntityKind, ReadonlySet<string>>> =
      event.type === 'run.completed'
        ? { toolCall: new Set(event.payload.pendingToolCallIds), approval: new Set(event.payload.pendingApprovalIds) }
        : {};
    const problems: AgentProtocolIssue[] = [];
    for (const kind of ['toolCall', 'approval'] as const) {
      for (const entityId of pending[kind] ?? []) {
        const handle = run.entities[kind].get(entityId);
        const snapshot = handle?.ref?.getSnapshot();
        if (snapshot?.hasTag('settleable') || snapshot?.hasTag('acceptsDelta')) continue;
        const state = handle === undefined ? undefined : projection.getEntity(kind, handle.key)?.status;
        problems.push(
          handle === undefined
            ? issue('missing_entity', `Run "${run.runId}" lists unknown ${kind} "${entityId}" as pending`, event, {
                entityId,
              })
            : issue('invalid_transition', `${kind} "${entityId}" is ${state} and cannot be left pending`, event, {
                entityId,
                state,
              }),
        );
      }
    }
    const settle: EntityHandle[] = [];
    const terminate: EntityHandle[] = [];
    for (const handle of run.live) {
      const snapshot = (handle.ref as AnyActorRef).getSnapshot();
      if (!snapshot.hasTag('active')) continue;
      if (pending[handle.kind]?.has(handle.id)) {
        settle.push(handle);
        continue;
      }
      terminate.push(handle);
      problems.push(
        issue(
          'active_entities_at_terminal',
          `${event.type} arrived while ${handle.kind} "${handle.id}" was ${stateName(snapshot)}; it was cancelled`,
          event,
          {
            entityId: handle.id,
            state: stateName(snapshot),
          },
        ),
      );
    }
    if (strict && problems[0] !== undefined) return problems[0];
    markSeen(run, event, true);
    for (const problem of problems) projection.addIssue(problem);
    for (const handle of settle) {
      if (handle.ref?.getSnapshot().hasTag('acceptsDelta'))
        handle.ref.send({ type: 'run.settle_pending', timestamp: event.timestamp });
    }
    for (const handle of terminate) handle.ref?.send({ type: 'run.terminated', timestamp: event.timestamp });
    runRef.send(event);
    projection.setRun(runRef.getSnapshot().context.run);
    // Everything but the entities the run waits on is stopped; those stay live, so the
    // application's tool results and decisions can still settle them.
    const waiting = runRef.getSnapshot().hasTag('waiting');
    for (const handle of [...run.live]) {
      const settling = waiting && settle.includes(handle) && handle.ref?.getSnapshot().status === 'active';
      if (settling) {
        record(handle);
        continue;
      }
      const ref = handle.ref;
      if (ref !== undefined) projection.setEntity(handle.kind, ref.getSnapshot().context.entity as AgentEntityState);
      handle.ref = undefined;
      run.live.delete(handle);
      if (waiting) runRef.send({ type: 'entity.stop', actorId: handle.actorId });
    }
    if (waiting && run.live.size > 0) {
      run.status = 'waiting';
      return undefined;
    }
    if (waiting) runRef.send({ type: 'store.input_settled' });
    stopRun(run);
    return undefined;
  }

  function applyShared(run: RunHandle, event: AgentEventOf<'state.snapshot' | 'state.delta'>): Outcome {
    if (event.type === 'state.snapshot') {
      markSeen(run, event, true);
      projection.setShared(event.sessionId, event.payload.snapshot);
      return undefined;
    }
    const result = applyStatePatch(
      projection.getShared(event.sessionId),
      event.payload.patch,
      options.statePatchLimits,
    );
    if (!result.success) {
      const problem = issue('invalid_patch', `state.delta was not applied: ${result.reason}`, event);
      if (!strict) markSeen(run, event, true);
      return problem;
    }
    markSeen(run, event, true);
    projection.setShared(event.sessionId, result.state);
    return undefined;
  }

  function applyEntityEvent(run: RunHandle, event: AgentEvent): Outcome {
    const route = ENTITY_EVENT_ROUTES.get(event.type);
    if (route === undefined) return undefined;
    const entityId = getEventEntityId(event, route);
    const existing = run.entities[route.kind].get(entityId);
    if (route.role === 'start') {
      if (existing !== undefined) {
        if (!strict) markSeen(run, event, true);
        return issue('duplicate_entity', `${route.kind} "${entityId}" already exists in run "${run.runId}"`, event, {
          entityId,
        });
      }
      markSeen(run, event, true);
      const key = getAgentEntityKey(run.runId, entityId);
      const handle = addEntityHandle(run, route.kind, entityId, key);
      const entity = createEntityRecord(event as EntityStartEvent, key);
      projection.addEntity(route.kind, entity);
      spawnEntities(run, [{ kind: route.kind, actorId: handle.actorId, entity }]);
      return undefined;
    }
    if (existing === undefined) {
      if (!strict) markSeen(run, event, true);
      return issue(
        'missing_entity',
        `${event.type} names ${route.kind} "${entityId}", which run "${run.runId}" never started`,
        event,
        { entityId },
      );
    }
    const ref = existing.ref;
    if (ref === undefined) {
      if (!strict) markSeen(run, event, true);
      const status = projection.getEntity(route.kind, existing.key)?.status;
      return issue(
        'invalid_transition',
        `${event.type} refused: ${route.kind} "${entityId}" is ${status} and accepts no more events`,
        event,
        {
          entityId,
          state: status,
        },
      );
    }
    flushEntity(existing);
    const before = ref.getSnapshot();
    ref.send(event);
    if (ref.getSnapshot() === before) {
      if (!strict) markSeen(run, event, true);
      const state = stateName(before);
      return issue(
        'invalid_transition',
        `${event.type} refused by ${route.kind} "${entityId}" in state ${state}`,
        event,
        { entityId, state },
      );
    }
    markSeen(run, event, true);
    record(existing);
    return undefined;
  }

  /**
   * The path most events take: a valid delta for a live entity that accepts deltas, in
   * order, in a running run. It is appended to the entity's pending text; the machine gets
   * the coalesced delta before anything reads or touches that entity. Anything else
   * returns false and takes the general path, which reports what is wrong.
   */
  function applyStreamedDelta(input: unknown): boolean {
    const field = checkStreamedDelta(input);
    if (field === undefined) return false;
    const event = input as AgentEvent & { payload: Record<string, string> };
    const run = runs.get(event.runId);
    if (run?.status !== 'running' || event.sequence <= run.lastSequence || run.sessionId !== event.sessionId) {
      return false;
    }
    const kind = field === 'messageId' ? 'message' : field === 'reasoningId' ? 'reasoning' : 'toolCall';
    const handle = run.entities[kind].get(event.payload[field] as string);
    if (handle?.ref === undefined) return false;
    if (handle.pendingEvent === undefined && !handle.ref.getSnapshot().hasTag('acceptsDelta')) return false;
    // Last, because it records the id: a repeat returns false and the general path absorbs it.
    if (!run.seen.tryAdd(event.eventId)) return false;
    if (handle.pendingEvent === undefined) pending.push(handle);
    handle.pendingDelta.push(event.payload.delta as string);
    handle.pendingEvent = event;
    batchSeen?.push([run, event.eventId]);
    advanceSequence(run, event.sequence);
    return true;
  }

  function apply(input: unknown): Outcome {
    if (applyStreamedDelta(input)) return undefined;
    const failure = checkAgentEvent(input);
    const run = hasIdentity(input) ? runs.get(input.runId) : undefined;
    if (run?.seen.has((input as AgentEvent).eventId)) return ABSORBED;
    if (failure !== undefined) {
      // Remembered by id (under a run not known yet, if need be), so a redelivery is absorbed.
      if (!strict && hasIdentity(input)) (run ?? createRunHandle(input.runId)).seen.add(input.eventId);
      return issue('invalid_event', `Invalid event: ${failure.message}`, describeInvalidEvent(input));
    }
    const event = input as AgentEvent;
    if (run !== undefined && event.sequence <= run.lastSequence) {
      if (event.sequence <= run.restoredSequence) return ABSORBED;
      if (!strict) markSeen(run, event, false);
      return issue(
        'invalid_sequence',
        `Sequence ${event.sequence} of run "${event.runId}" is not greater than ${run.lastSequence}`,
        event,
      );
    }
    if (run !== undefined && !belongsTo(run, event.sessionId)) {
      // Remembered without moving the run's sequence: the event is not the run's.
      if (!strict) markSeen(run, event, false);
      return issue(
        'session_mismatch',
        `Run "${event.runId}" belongs to session "${run.sessionId}", not "${event.sessionId}"`,
        event,
      );
    }
    if (event.type === 'run.started') return startRun(event, run);
    if (event.type === 'session.started') {
      markSeen(run ?? createRunHandle(event.runId), event, true);
      touchSession(event, event.payload);
      return undefined;
    }
    if (run === undefined || run.status === 'unknown') {
      if (!strict) markSeen(run ?? createRunHandle(event.runId), event, false);
      return issue('missing_run', `${event.type} belongs to run "${event.runId}", which has not started`, event);
    }
    if (run.status === 'waiting' && isPendingInput(run, event)) return applyEntityEvent(run, event);
    if (run.status !== 'running') {
      if (!strict) markSeen(run, event, true);
      const status = projection.getRun(run.runId)?.status;
      const waiting = run.status === 'waiting' ? ', waiting only for the tool calls and approvals it listed' : '';
      return issue('terminal_run', `${event.type} arrived after run "${event.runId}" ${status}${waiting}`, event, {
        state: run.status === 'waiting' ? 'waiting_for_input' : status,
      });
    }
    switch (event.type) {
      case 'run.completed':
      case 'run.failed':
      case 'run.cancelled':
        return endRun(run, event);
      case 'state.snapshot':
      case 'state.delta':
        return applyShared(run, event);
      case 'extension.emitted':
        markSeen(run, event, true);
        projection.addExtension(
          run.runId,
          withDefined<AgentExtensionRecord>(
            { eventId: event.eventId, name: event.payload.name, timestamp: event.timestamp },
            { data: event.payload.data },
          ),
        );
        return undefined;
      case 'activity.snapshot':
      case 'activity.delta':
        return applyActivity(run, event);
      default:
        return applyEntityEvent(run, event);
    }
  }

  /** Whether an event of a waiting run addresses one of the entities it waits on. */
  function isPendingInput(run: RunHandle, event: AgentEvent): boolean {
    const route = ENTITY_EVENT_ROUTES.get(event.type);
    if (route === undefined || route.role === 'start') return false;
    const handle = run.entities[route.kind].get(getEventEntityId(event, route));
    return handle !== undefined && run.live.has(handle);
  }

  function applyActivity(run: RunHandle, event: AgentEventOf<'activity.snapshot' | 'activity.delta'>): Outcome {
    const { activityId } = event.payload;
    const key = getAgentEntityKey(run.runId, activityId);
    const existing = projection.getActivity(key);
    if (event.type === 'activity.snapshot') {
      markSeen(run, event, true);
      // AG-UI: a snapshot with `replace: false` does not overwrite an activity that exists.
      if (existing !== undefined && event.payload.replace === false) return undefined;
      projection.setActivity({
        id: activityId,
        key,
        runId: run.runId,
        sessionId: run.sessionId,
        activityType: event.payload.activityType,
        content: event.payload.content,
        createdAt: existing?.createdAt ?? event.timestamp,
        updatedAt: event.timestamp,
      });
      return undefined;
    }
    if (existing === undefined) {
      if (!strict) markSeen(run, event, true);
      return issue(
        'missing_entity',
        `activity.delta names activity "${activityId}", which run "${run.runId}" never sent`,
        event,
        { entityId: activityId },
      );
    }
    const result = applyStatePatch(existing.content, event.payload.patch, options.statePatchLimits);
    if (!result.success) {
      if (!strict) markSeen(run, event, true);
      return issue('invalid_patch', `activity.delta was not applied: ${result.reason}`, event, {
        entityId: activityId,
      });
    }
    markSeen(run, event, true);
    projection.setActivity({
      ...existing,
      activityType: event.payload.activityType ?? existing.activityType,
      content: result.state,
      updatedAt: event.timestamp,
    });
    return undefined;
  }

  function applyOne(input: unknown): boolean {
    const outcome = apply(input);
    if (outcome === ABSORBED || outcome === undefined) return outcome === undefined;
    if (strict) throw new AgentProtocolError(outcome);
    projection.addIssue(outcome);
    return true;
  }

  function notify(): void {
    if (listeners.size === 0) return;
    for (const listener of [...listeners]) listener();
  }

  function rebuild(state: AgentState, seenByRun?: ReadonlyMap<string, SeenEvents>): void {
    session.stop();
    session = createActor(sessionMachine, options.inspect ? { inspect: options.inspect } : {});
    session.start();
    projection = new AgentStateProjection(state);
    runs = new Map();
    pending = [];
    sequenceChanges = [];
    const live: Array<{ actorId: string; run: AgentRunState }> = [];
    for (const run of Object.values(state.runs)) {
      const handle = createRunHandle(run.id);
      handle.sessionId = run.sessionId;
      handle.status = run.status === 'running' ? 'running' : isWaitingForInput(state, run) ? 'waiting' : 'ended';
      if (handle.status !== 'ended') live.push({ actorId: runActorId(run.id), run });
    }
    for (const [runId, sequence] of Object.entries(state.lastSequenceByRun)) {
      const handle = runs.get(runId) ?? createRunHandle(runId);
      handle.lastSequence = sequence;
      handle.restoredSequence = sequence;
    }
    for (const [runId, handle] of runs) handle.seen = seenByRun?.get(runId) ?? handle.seen;
    // Events refused without moving a sequence are remembered through their issues, so a
    // redelivery after a restore is absorbed as it is in a full replay.
    for (const { event } of state.issues) {
      if (!hasIdentity(event)) continue;
      (runs.get(event.runId) ?? createRunHandle(event.runId)).seen.add(event.eventId);
    }
    if (live.length > 0) session.send({ type: 'runs.spawn', runs: live });
    const children = session.getSnapshot().children as Record<string, RunRef>;
    for (const run of runs.values()) if (run.status !== 'ended') run.ref = children[runActorId(run.runId)];
    const spawnsByRun = new Map<RunHandle, EntitySpawn[]>();
    // In arrival order, so live entities are closed in the order a full replay closes them.
    for (const { kind, key } of state.order) {
      const entity = (state[AGENT_ENTITY_CONTAINERS[kind]] as Record<string, AgentEntityState>)[
        key
      ] as AgentEntityState;
      const run = runs.get(entity.runId) as RunHandle;
      const handle = addEntityHandle(run, kind, entity.id, entity.key);
      if (run.ref === undefined || isFinalEntityStatus(kind, entity)) continue;
      if (run.status === 'waiting' && !isPendingEntity(state.runs[run.runId] as AgentRunState, kind, entity)) continue;
      let spawns = spawnsByRun.get(run);
      if (spawns === undefined) {
        spawns = [];
        spawnsByRun.set(run, spawns);
      }
      spawns.push({ kind, actorId: handle.actorId, entity } as EntitySpawn);
    }
    for (const [run, spawns] of spawnsByRun) spawnEntities(run, spawns);
  }

  return {
    getSnapshot() {
      flush();
      return projection.read();
    },

    dispatch(event) {
      assertAlive();
      if (applyOne(event)) notify();
    },

    batch(events) {
      assertAlive();
      if (!strict) {
        let changed = false;
        for (const event of events) changed = applyOne(event) || changed;
        if (changed) notify();
        return;
      }
      flush();
      const base = projection.read();
      const seenByRun = new Map<string, SeenEvents>();
      for (const [runId, run] of runs) seenByRun.set(runId, run.seen);
      const restoredSequences = new Map<string, number>();
      for (const [runId, run] of runs) restoredSequences.set(runId, run.restoredSequence);
      batchSeen = [];
      let changed = false;
      try {
        for (const event of events) changed = applyOne(event) || changed;
      } catch (error) {
        for (const [run, eventId] of batchSeen) run.seen.delete(eventId);
        rebuild(base, seenByRun);
        for (const [runId, run] of runs) run.restoredSequence = restoredSequences.get(runId) ?? -1;
        for (const command of submitting.values()) submitCommand(runs, command, now());
        throw error;
      } finally {
        batchSeen = undefined;
      }
      if (changed) notify();
    },

    reset(state) {
      assertAlive();
      const next = state === undefined ? createEmptyAgentState() : parseAgentState(state);
      submitting.clear();
      rebuild(next);
      notify();
    },

    subscribe(listener) {
      listeners.add(listener);
      return () => {
        listeners.delete(listener);
      };
    },

    can(command) {
      if (destroyed || !isAgentCommand(command)) return false;
      flush();
      const target = commandTarget(runs, command);
      return target?.ref.getSnapshot().can({ type: command.type, command, now: now() }) ?? false;
    },

    submit(command) {
      if (destroyed || !isAgentCommand(command)) return false;
      flush();
      if (!submitCommand(runs, command, now())) return false;
      submitting.set(commandTargetKey(command), command);
      return true;
    },

    settle(command) {
      if (destroyed || !isAgentCommand(command)) return;
      const key = commandTargetKey(command);
      if (submitting.get(key)?.commandId !== command.commandId) return;
      submitting.delete(key);
      commandTarget(runs, command)?.ref.send({ type: 'command.settled' });
    },

    destroy() {
      if (destroyed) return;
      destroyed = true;
      listeners.clear();
      session.stop();
      runs.clear();
      pending = [];
    },
  };
}
