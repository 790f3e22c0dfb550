import { describe, expect, it } from 'vitest';
import {
  AGENT_ENTITY_EVENT_ROUTES,
  AGENT_ENTITY_KIND_TABLE,
  AGENT_ENTITY_KINDS,
  agentEntityEventTypes,
} from './agentEntityKinds';
import { AGENT_EVENT_TYPES, agentEventPayloadSchemas } from './eventSchemas';

describe('the entity-kind table', () => {
  it('routes every entity event of the protocol, and nothing else', () => {
    const notEntities = AGENT_EVENT_TYPES.filter((type) => !AGENT_ENTITY_EVENT_ROUTES.has(type));
    expect(notEntities).toEqual([
      'session.started',
      'run.started',
      'run.completed',
      'run.failed',
      'run.cancelled',
      'state.snapshot',
      'state.delta',
      'extension.emitted',
      'activity.snapshot',
      'activity.delta',
    ]);
    expect(AGENT_ENTITY_KINDS.flatMap(agentEntityEventTypes)).toHaveLength(AGENT_ENTITY_EVENT_ROUTES.size);
  });

  it("names each entity by a field every one of its events' payloads requires", () => {
    for (const [type, route] of AGENT_ENTITY_EVENT_ROUTES) {
      const shape = (agentEventPayloadSchemas[type] as unknown as { _zod: { def: { shape: Record<string, unknown> } } })
        ._zod.def.shape;
      expect(Object.keys(shape), type).toContain(route.idField);
    }
  });

  it('gives each kind its lifecycle, from start to terminals', () => {
    expect(agentEntityEventTypes('toolCall')).toEqual([
      'tool.requested',
      'tool.arguments_delta',
      'tool.arguments_completed',
      'tool.running',
      'tool.completed',
      'tool.failed',
      'tool.cancelled',
    ]);
    expect(AGENT_ENTITY_EVENT_ROUTES.get('approval.resolved')).toEqual({
      kind: 'approval',
      idField: 'approvalId',
      role: 'terminal',
    });
    for (const kind of AGENT_ENTITY_KINDS) {
      const { activeStatuses, finalStatuses } = AGENT_ENTITY_KIND_TABLE[kind];
      expect(activeStatuses.filter((status: string) => (finalStatuses as readonly string[]).includes(status))).toEqual(
        [],
      );
    }
  });
});
