import { assertEvent, assign, setup } from 'xstate';
import { AGENT_ENTITY_KIND_TABLE } from '../protocol/agentEntityKinds';
import type { AgentEventOf } from '../protocol/eventSchemas';
import type { AgentArtifactState } from './agentState';
import { FINAL_STATES, failedBy, hasStatus, restoreFinalStates, terminated } from './entityLifecycle';
import { type StoreTerminateEvent, withDefined, withMeta } from './entityUpdates';

export type ArtifactMachineEvent =
  | AgentEventOf<'artifact.updated' | 'artifact.completed' | 'artifact.failed'>
  | StoreTerminateEvent;

/**
 * The lifecycle of one artifact: `open -> updated* -> completed | failed`. An update that
 * carries a version must carry one greater than the last; one without keeps the version. An artifact still open when its run ends
 * is cancelled with reason `run_terminated`.
 */
export const artifactMachine = setup({
  types: {
    context: {} as { entity: AgentArtifactState },
    input: {} as { entity: AgentArtifactState },
    events: {} as ArtifactMachineEvent,
  },
  guards: {
    hasStatus,
    isNewerVersion: ({ context, event }) => {
      assertEvent(event, 'artifact.updated');
      const version = event.payload.version;
      return version === undefined || version > context.entity.version;
    },
  },
  actions: {
    update: assign({
      entity: ({ context, event }) => {
        assertEvent(event, 'artifact.updated');
        const { version, title, content, uri, data } = event.payload;
        return withDefined(context.entity, { version, title, content, uri, data, updatedAt: event.timestamp });
      },
    }),
    complete: assign({
      entity: ({ context, event }) => {
        assertEvent(event, 'artifact.completed');
        const { content, uri, data } = event.payload;
        return withMeta(
          withDefined(context.entity, { status: 'completed', content, uri, data, updatedAt: event.timestamp }),
          event.meta,
        );
      },
    }),
    fail: assign({ entity: failedBy<AgentArtifactState>('artifact.failed') }),
    terminate: assign({ entity: terminated<AgentArtifactState>() }),
  },
}).createMachine({
  id: 'artifact',
  context: ({ input }) => ({ entity: input.entity }),
  initial: 'restoring',
  states: {
    restoring: {
      always: [...restoreFinalStates(AGENT_ENTITY_KIND_TABLE.artifact.finalStatuses), { target: 'open' }],
    },
    open: {
      tags: ['active'],
      on: {
        'artifact.updated': { guard: 'isNewerVersion', actions: 'update' },
        'artifact.completed': { target: 'completed', actions: 'complete' },
        'artifact.failed': { target: 'failed', actions: 'fail' },
        'store.terminate': { target: 'cancelled', actions: 'terminate' },
      },
    },
    ...FINAL_STATES,
  },
});
