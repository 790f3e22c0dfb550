import { assertEvent, assign, setup } from 'xstate';
import type { AgentEventOf } from '../protocol/eventSchemas';
import type { AgentArtifactState } from './agentState';
import {
  cancelEntity,
  failEntity,
  RUN_TERMINATED_REASON,
  type StoreTerminateEvent,
  withDefined,
  withMeta,
} from './entityUpdates';

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
    hasStatus: ({ context }, params: { status: AgentArtifactState['status'] }) =>
      context.entity.status === params.status,
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
    fail: assign({
      entity: ({ context, event }) => {
        assertEvent(event, 'artifact.failed');
        return failEntity(context.entity, event.payload.error, event.timestamp);
      },
    }),
    terminate: assign({
      entity: ({ context, event }) => {
        assertEvent(event, 'store.terminate');
        return cancelEntity(context.entity, RUN_TERMINATED_REASON, event.timestamp);
      },
    }),
  },
}).createMachine({
  id: 'artifact',
  context: ({ input }) => ({ entity: input.entity }),
  initial: 'restoring',
  states: {
    restoring: {
      always: [
        { guard: { type: 'hasStatus', params: { status: 'completed' } }, target: 'completed' },
        { guard: { type: 'hasStatus', params: { status: 'failed' } }, target: 'failed' },
        { guard: { type: 'hasStatus', params: { status: 'cancelled' } }, target: 'cancelled' },
        { target: 'open' },
      ],
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
    completed: { type: 'final' },
    failed: { type: 'final' },
    cancelled: { type: 'final' },
  },
});
