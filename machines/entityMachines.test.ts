import { describe, expect, it } from 'vitest';
import { createActor } from 'xstate';
import { AGENT_ENTITY_KIND_TABLE, AGENT_ENTITY_KINDS } from '../protocol/agentEntityKinds';
import type { AgentEntityKind, AgentEntityState } from './agentState';
import { isActiveEntityStatus, isFinalEntityStatus } from './entityEvents';
import { entityMachines } from './runMachine';

// Every status of each kind, from the entity-kind table: the machines must agree with it.
const statuses = Object.fromEntries(
  AGENT_ENTITY_KINDS.map((kind) => [
    kind,
    [...AGENT_ENTITY_KIND_TABLE[kind].activeStatuses, ...AGENT_ENTITY_KIND_TABLE[kind].finalStatuses],
  ]),
) as Record<AgentEntityKind, string[]>;

describe('entity machines restore from a record', () => {
  for (const [kind, list] of Object.entries(statuses) as Array<[AgentEntityKind, string[]]>) {
    it.each(list)(`${kind} with status %s resumes in the state of that name`, (status) => {
      const entity = {
        id: 'x',
        key: 'r:x',
        runId: 'r',
        sessionId: 's',
        createdAt: 0,
        updatedAt: 0,
        status,
      } as unknown as AgentEntityState;
      const machine = entityMachines[kind] as typeof entityMachines.message;
      const actor = createActor(machine, { input: { entity: entity as never } }).start();
      const snapshot = actor.getSnapshot() as { status: string; matches(value: unknown): boolean };
      // Its own state, at the top or inside the tool call's `open` group of unsettled states.
      expect(snapshot.matches(status) || snapshot.matches({ open: status })).toBe(true);
      expect(isFinalEntityStatus(kind, entity)).toBe(snapshot.status === 'done');
      expect(isActiveEntityStatus(kind, entity)).toBe(
        (actor.getSnapshot() as { hasTag(tag: string): boolean }).hasTag('active'),
      );
      actor.stop();
    });
  }

  it('resumes a retryable failure as retryable, so tool.retry is still accepted', () => {
    const entity = {
      id: 'x',
      key: 'r:x',
      runId: 'r',
      sessionId: 's',
      createdAt: 0,
      updatedAt: 0,
      status: 'failed',
      error: { message: 'x', retryable: true },
    };
    const actor = createActor(entityMachines.toolCall, { input: { entity: entity as never } }).start();
    expect(actor.getSnapshot().value).toEqual({ retryable: 'idle' });
    expect(isFinalEntityStatus('toolCall', entity as never)).toBe(false);
  });
});
