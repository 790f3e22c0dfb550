import type { AgentProtocolIssue } from '../protocol/protocolIssue';
import {
  AGENT_ENTITY_CONTAINERS,
  type AgentActivityState,
  type AgentEntityKind,
  type AgentEntityRef,
  type AgentEntityState,
  type AgentExtensionRecord,
  type AgentRunState,
  type AgentSessionState,
  type AgentState,
} from './agentState';

/** Sets an own property, even one named `__proto__`, without touching the prototype. */
export function setOwn(record: Record<string, unknown>, key: string, value: unknown): void {
  if (key === '__proto__') {
    Object.defineProperty(record, key, { value, enumerable: true, writable: true, configurable: true });
  } else {
    record[key] = value;
  }
}

export function getOwn<Value>(record: Record<string, Value>, key: string): Value | undefined {
  return Object.hasOwn(record, key) ? record[key] : undefined;
}

/**
 * A copy of `base` with `changes` set. A container of thousands of entities is a
 * dictionary-mode object; copying it key by key takes about half the time of a spread,
 * and this copy is the one cost of a read that grows with the number of entities.
 */
function merged<Value>(base: Record<string, Value>, changes: ReadonlyMap<string, Value>): Record<string, Value> {
  const next: Record<string, Value> = {};
  const keys = Object.keys(base);
  for (let index = 0; index < keys.length; index += 1) {
    const key = keys[index] as string;
    if (key === '__proto__') setOwn(next, key, base[key]);
    else next[key] = base[key] as Value;
  }
  for (const [key, value] of changes) setOwn(next, key, value);
  return next;
}

/**
 * The AgentState that readers see, built lazily from what changed since the last read:
 * a read copies only the containers that changed, and every record that did not change
 * keeps its identity. Writes between reads cost O(1).
 */
export class AgentStateProjection {
  private committed: AgentState;
  private readonly entities = new Map<AgentEntityKind, Map<string, AgentEntityState>>();
  private readonly runs = new Map<string, AgentRunState>();
  private readonly sessions = new Map<string, AgentSessionState>();
  private readonly shared = new Map<string, unknown>();
  private readonly sequences = new Map<string, number>();
  private readonly activities = new Map<string, AgentActivityState>();
  private readonly extensions = new Map<string, AgentExtensionRecord[]>();
  private order: AgentEntityRef[] = [];
  private issues: AgentProtocolIssue[] = [];
  private changed = false;

  constructor(state: AgentState) {
    this.committed = state;
  }

  setEntity(kind: AgentEntityKind, entity: AgentEntityState): void {
    let changes = this.entities.get(kind);
    if (changes === undefined) {
      changes = new Map();
      this.entities.set(kind, changes);
    }
    changes.set(entity.key, entity);
    this.changed = true;
  }

  getEntity(kind: AgentEntityKind, key: string): AgentEntityState | undefined {
    const container = this.committed[AGENT_ENTITY_CONTAINERS[kind]] as Record<string, AgentEntityState>;
    return this.entities.get(kind)?.get(key) ?? getOwn(container, key);
  }

  addEntity(kind: AgentEntityKind, entity: AgentEntityState): void {
    this.setEntity(kind, entity);
    this.order.push({ kind, key: entity.key });
  }

  getRun(runId: string): AgentRunState | undefined {
    return this.runs.get(runId) ?? getOwn(this.committed.runs, runId);
  }

  setRun(run: AgentRunState): void {
    this.runs.set(run.id, run);
    this.changed = true;
  }

  getSession(sessionId: string): AgentSessionState | undefined {
    return this.sessions.get(sessionId) ?? getOwn(this.committed.sessions, sessionId);
  }

  setSession(session: AgentSessionState): void {
    this.sessions.set(session.id, session);
    this.changed = true;
  }

  getShared(sessionId: string): unknown {
    return this.shared.has(sessionId) ? this.shared.get(sessionId) : getOwn(this.committed.state, sessionId);
  }

  setShared(sessionId: string, value: unknown): void {
    this.shared.set(sessionId, value);
    this.changed = true;
  }

  setSequence(runId: string, sequence: number): void {
    this.sequences.set(runId, sequence);
    this.changed = true;
  }

  getActivity(key: string): AgentActivityState | undefined {
    return this.activities.get(key) ?? getOwn(this.committed.activities, key);
  }

  setActivity(activity: AgentActivityState): void {
    this.activities.set(activity.key, activity);
    this.changed = true;
  }

  addExtension(runId: string, record: AgentExtensionRecord): void {
    let added = this.extensions.get(runId);
    if (added === undefined) {
      added = [];
      this.extensions.set(runId, added);
    }
    added.push(record);
    this.changed = true;
  }

  addIssue(issue: AgentProtocolIssue): void {
    this.issues.push(issue);
    this.changed = true;
  }

  /** The current AgentState; the same object as last time when nothing changed. */
  read(): AgentState {
    if (!this.changed) return this.committed;
    const previous = this.committed;
    const next: AgentState = { ...previous };
    for (const [kind, changes] of this.entities) {
      const container = AGENT_ENTITY_CONTAINERS[kind];
      (next as unknown as Record<string, unknown>)[container] = merged(
        previous[container] as Record<string, AgentEntityState>,
        changes,
      );
    }
    if (this.runs.size > 0) next.runs = merged(previous.runs, this.runs);
    if (this.sessions.size > 0) next.sessions = merged(previous.sessions, this.sessions);
    if (this.shared.size > 0) next.state = merged(previous.state, this.shared);
    if (this.sequences.size > 0) next.lastSequenceByRun = merged(previous.lastSequenceByRun, this.sequences);
    if (this.activities.size > 0) next.activities = merged(previous.activities, this.activities);
    if (this.extensions.size > 0) {
      const appended = new Map<string, AgentExtensionRecord[]>();
      for (const [runId, added] of this.extensions) {
        appended.set(runId, (getOwn(previous.extensions, runId) ?? []).concat(added));
      }
      next.extensions = merged(previous.extensions, appended);
    }
    if (this.order.length > 0) next.order = previous.order.concat(this.order);
    if (this.issues.length > 0) next.issues = previous.issues.concat(this.issues);
    this.committed = next;
    this.entities.clear();
    this.runs.clear();
    this.sessions.clear();
    this.shared.clear();
    this.sequences.clear();
    this.activities.clear();
    this.extensions.clear();
    this.order = [];
    this.issues = [];
    this.changed = false;
    return next;
  }
}
