import { createActor, type InspectionEvent, type Observer } from 'xstate';
import { AGENT_EVENT_ADMITTED, type AgentEventAdmission } from '../protocol/admittedEvents';
import type { AgentCommand } from '../protocol/commandSchemas';
import { AgentError, AgentProtocolError } from '../protocol/errors';
import type { AgentEvent } from '../protocol/eventSchemas';
import { isAgentCommand } from '../protocol/parseAgentEvent';
import type { AgentProtocolIssue } from '../protocol/protocolIssue';
import { type AgentState, createEmptyAgentState } from './agentState';
import { isParsedAgentState, parseAgentState } from './agentStateSchema';
import type { StatePatchLimits } from './applyStatePatch';
import { sessionMachine } from './sessionMachine';
import { acceptStreamedDelta } from './store/acceptStreamedDelta';
import { admitEvent } from './store/admitEvent';
import { applyEntityEvent } from './store/applyEntityEvent';
import { applyActivity, applyExtension, applySharedState } from './store/applySessionRecords';
import { DeltaCoalescer } from './store/DeltaCoalescer';
import { recordEntity } from './store/entityActors';
import type { RunHandle } from './store/handles';
import type { RegistryRestorePoint } from './store/RunRegistry';
import { restoreStore } from './store/restoreStore';
import { endRun, startRun, startSession } from './store/runLifecycle';
import { commandTarget, commandTargetKey, submitCommand } from './store/storeCommands';
import type { EventOutcome, SessionRef, StoreCore } from './store/storeCore';

export type AgentProtocolMode = 'record' | 'strict';

/** What XState's `inspect` option takes: an observer of inspection events, or a function. */
export type AgentInspect = Observer<InspectionEvent> | ((event: InspectionEvent) => void);

export interface AgentStoreOptions {
  /** `record` (default) keeps going and lists issues in `AgentState.issues`; `strict` throws `AgentProtocolError`. */
  protocolMode?: AgentProtocolMode;
  /** The clock commands are checked against (approval expiry). Default `Date.now`. */
  now?: () => number;
  /**
   * Passed to XState: the Stately inspector (`createBrowserInspector().inspect` as it is), or
   * any observer or function, sees the whole actor system.
   */
  inspect?: AgentInspect;
  /** Bounds on what one `state.delta` or `activity.delta` may do; a patch past them is `invalid_patch`. */
  statePatchLimits?: StatePatchLimits;
}

export interface AgentStore {
  /** The current AgentState; the same object until something changes. */
  getSnapshot(): AgentState;
  /**
   * Applies one event. `admission` is `runAgentProvider`'s token that it has validated the
   * event (`onEvent: store.dispatch` passes it); without it the event is checked in full.
   * Returns the issue recorded when the store refused the event (record mode), so that
   * `runAgentProvider` can say what of its run was refused; undefined otherwise.
   */
  // biome-ignore lint/suspicious/noConfusingVoidType: a wrapper whose dispatch returns nothing still fits
  dispatch(event: unknown, admission?: AgentEventAdmission): AgentProtocolIssue | void;
  /** Applies events in order and notifies once. In strict mode it is atomic. */
  batch(events: readonly unknown[]): void;
  /**
   * Rebuilds the store from an AgentState (a checkpoint's), or empties it. The state is
   * validated and copied; one that `parseAgentState` (or `loadAgentCheckpoint`) returned is
   * taken as it is, without doing that twice: do not change it afterwards.
   */
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
  const session = createActor(sessionMachine, {
    id: 'session',
    systemId: 'session',
    ...(options.inspect === undefined ? {} : { inspect: options.inspect }),
  });
  session.start();
  return createAgentStoreOn(session, options, true);
}

/**
 * The store on a session actor it is given: one spawned by the actor of the conversation it
 * belongs to (`createXChatRuntime`), so that the conversation is one actor system. `owns`:
 * the store stops the session actor when destroyed; otherwise its owner does.
 */
export function createAgentStoreOn(
  session: SessionRef,
  options: Omit<AgentStoreOptions, 'inspect'>,
  owns: boolean,
): AgentStore {
  const now = options.now ?? Date.now;
  const listeners = new Set<() => void>();
  /** The listeners as an array, made again only when one comes or goes: notify runs per event. */
  let listenerList: ReadonlyArray<() => void> = [];
  /** Commands being submitted, so a rolled-back strict batch can mark them again. */
  const submitting = new Map<string, AgentCommand>();
  /** The issue of the event `applyOne` refused last, for `dispatch` to return. */
  let refusal: AgentProtocolIssue | undefined;
  let destroyed = false;
  const strict = options.protocolMode === 'strict';
  const raised: AgentProtocolIssue[] = [];
  const core: StoreCore = {
    strict,
    patchLimits: options.statePatchLimits,
    session,
    ...restoreStore(session, createEmptyAgentState(), { raised, strict }),
    deltas: new DeltaCoalescer((handle) => recordEntity(core, handle)),
    raised,
  };

  function assertAlive(): void {
    if (destroyed) throw new AgentError('store_destroyed', 'The agent store was destroyed');
  }

  /** Brings the machines and the projection up to date; every read goes through here. */
  function upToDate(): StoreCore {
    core.deltas.flush();
    core.runs.flushSequences(core.projection);
    return core;
  }

  function rebuild(state: AgentState, previous?: RegistryRestorePoint): void {
    core.deltas.clear();
    Object.assign(core, restoreStore(core.session, state, { raised, strict, previous }));
  }

  /** Sends an admitted event to what handles its type. */
  function route(event: AgentEvent, run: RunHandle | undefined): EventOutcome {
    switch (event.type) {
      case 'run.started':
        return startRun(core, event, run);
      case 'session.started':
        return startSession(core, event);
      case 'run.completed':
      case 'run.failed':
      case 'run.cancelled':
        return endRun(core, run as RunHandle, event);
      case 'state.snapshot':
      case 'state.delta':
        return applySharedState(core, event);
      case 'extension.emitted':
        return applyExtension(core, run as RunHandle, event);
      case 'activity.snapshot':
      case 'activity.delta':
        return applyActivity(core, run as RunHandle, event);
      default:
        return applyEntityEvent(core, run as RunHandle, event);
    }
  }

  /**
   * Applies one event; says whether anything changed. Record and strict mode differ here
   * and only here: a refusal throws in strict mode, and in record mode becomes an issue,
   * its event id remembered (and the run's sequence moved, when the refusal says so).
   */
  function applyOne(input: unknown, admitted = false): boolean {
    if (acceptStreamedDelta(core, input, admitted)) return true;
    const admission = admitEvent(core, input, admitted);
    const outcome = admission.kind === 'admitted' ? route(admission.event, admission.run) : admission;
    if (outcome.kind === 'absorbed') return false;
    if (outcome.kind === 'refused') {
      if (core.strict) throw new AgentProtocolError(outcome.issue);
      const { remember } = outcome;
      if (remember !== undefined) {
        const sequence = remember.advance ? (input as AgentEvent).sequence : undefined;
        core.runs.remember(core.runs.getOrCreate(remember.runId), remember.eventId, sequence);
      }
      core.projection.addIssue(outcome.issue);
      refusal = outcome.issue;
      return true;
    }
    const event = input as AgentEvent;
    core.runs.remember(core.runs.getOrCreate(event.runId), event.eventId, event.sequence);
    for (const issue of outcome.issues ?? []) core.projection.addIssue(issue);
    return true;
  }

  function notify(): void {
    // The array of this moment: a listener that unsubscribes or subscribes another changes the next one.
    for (const listener of listenerList) listener();
  }

  /** A strict batch: all or nothing. On failure the store is rebuilt as it was and the error rethrown. */
  function applyAtomically(events: readonly unknown[]): boolean {
    const base = upToDate().projection.read();
    core.runs.beginJournal();
    let changed = false;
    try {
      for (const event of events) changed = applyOne(event) || changed;
    } catch (error) {
      rebuild(base, core.runs.rollBack());
      for (const command of submitting.values()) submitCommand(core.runs, command, now());
      throw error;
    }
    core.runs.endJournal();
    return changed;
  }

  return {
    getSnapshot() {
      return upToDate().projection.read();
    },

    dispatch(event, admission) {
      assertAlive();
      refusal = undefined;
      const changed = applyOne(event, admission === AGENT_EVENT_ADMITTED);
      // Read before listeners run: one may dispatch again.
      const refused = refusal;
      refusal = undefined;
      if (changed) notify();
      return refused;
    },

    batch(events) {
      assertAlive();
      let changed = false;
      if (core.strict) changed = applyAtomically(events);
      else for (const event of events) changed = applyOne(event) || changed;
      if (changed) notify();
    },

    reset(state) {
      assertAlive();
      // A state straight from `parseAgentState` (a loaded checkpoint's) is already a clean, valid copy.
      const next =
        state === undefined ? createEmptyAgentState() : isParsedAgentState(state) ? state : parseAgentState(state);
      submitting.clear();
      rebuild(next);
      notify();
    },

    subscribe(listener) {
      listeners.add(listener);
      listenerList = [...listeners];
      return () => {
        listeners.delete(listener);
        listenerList = [...listeners];
      };
    },

    can(command) {
      if (destroyed || !isAgentCommand(command)) return false;
      const run = commandTarget(upToDate().runs, command);
      return run?.getSnapshot().can({ type: command.type, command, now: now() }) ?? false;
    },

    submit(command) {
      if (destroyed || !isAgentCommand(command)) return false;
      if (!submitCommand(upToDate().runs, command, now())) return false;
      submitting.set(commandTargetKey(command), command);
      return true;
    },

    settle(command) {
      if (destroyed || !isAgentCommand(command)) return;
      const key = commandTargetKey(command);
      if (submitting.get(key)?.commandId !== command.commandId) return;
      submitting.delete(key);
      commandTarget(core.runs, command)?.send({ type: 'store.command_settled', command });
    },

    destroy() {
      if (destroyed) return;
      destroyed = true;
      listeners.clear();
      listenerList = [];
      if (owns) core.session.stop();
      else core.session.send({ type: 'store.reset' });
      core.deltas.clear();
    },
  };
}
