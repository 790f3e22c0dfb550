import type { ActorLogic, AnyActorRef, EventObject } from 'xstate';
import { createEmptyAgentState } from '../machines/agentState';
import { AGENT_COMMAND_TYPES } from '../protocol/commandSchemas';
import { AgentError } from '../protocol/errors';
import { randomId } from '../protocol/randomId';
import type {
  AgentProviderActorCommand,
  AgentProviderActorEmitted,
  AgentProviderActorInput,
  AgentProviderActorOptions,
  AgentProviderActorSnapshot,
} from './agentProviderActorTypes';
import { type AgentProviderActorScope, isOwnEvent, LiveAgentProviderActor } from './LiveAgentProviderActor';

export type {
  AgentProviderActorCommand,
  AgentProviderActorContext,
  AgentProviderActorEmitted,
  AgentProviderActorInput,
  AgentProviderActorOptions,
  AgentProviderActorOutput,
  AgentProviderActorSnapshot,
} from './agentProviderActorTypes';

/** Any actor system: xstate does not export the name. */
type AnyActorSystem = AnyActorRef['system'];

export type AgentProviderActorLogic<Input> = ActorLogic<
  AgentProviderActorSnapshot,
  AgentProviderActorCommand,
  AgentProviderActorInput<Input>,
  AnyActorSystem,
  AgentProviderActorEmitted
>;

const COMMAND_TYPES: ReadonlySet<string> = new Set(AGENT_COMMAND_TYPES);

function isCommandEvent(event: EventObject): event is AgentProviderActorCommand {
  return COMMAND_TYPES.has(event.type);
}

/**
 * XState v5 actor logic that runs an AgentProvider: `runAgentProvider` into an agent store of
 * its own, so every event is validated and every lifecycle checked by the machines, with
 * the session's AgentState in the snapshot's `context.agentState`. A parent machine
 * `invoke`s (or `spawn`s) it and sends it commands as events: `sendTo('agent', { type:
 * 'approval.resolve', approvalId, decision })`, `tool.retry`, `tool.submit_result`,
 * `run.cancel`. Each is checked by the machines (`store.submit`), then carried out by the
 * provider (`runAgentCommand`, one at a time); one that does not take effect is told to the
 * parent as `agent.commandFailed`, never dropped.
 *
 * A run that ends waiting for input does not end the actor: the parent hears
 * `agent.waiting`, answers with `approval.resolve` and `tool.submit_result`, and once every
 * approval has an answer and every tool call a result, a new run continues it (the same input,
 * the conversation as history). The actor is done when a run ends otherwise: its `output`
 * says how (`completed`, `refused`, `failed` or `cancelled`: a failed run is an output, not an
 * error). It fails (`onError`) with what `runAgentProvider` rejects with: a provider that
 * breaks the contract, a dropped stream that cannot continue, the store's
 * `AgentProtocolError` in strict mode. Stopping it (its parent leaves the state) aborts the
 * run's signal and the commands in flight.
 *
 * @example
 * const workflow = setup({
 *   actors: { agent: fromAgentProvider({ provider }) },
 * }).createMachine({
 *   initial: 'drafting',
 *   states: {
 *     drafting: {
 *       invoke: {
 *         id: 'agent',
 *         src: 'agent',
 *         input: { sessionId: 'post-42', input: { prompt: 'Draft the release note' } },
 *         onDone: { target: 'published', actions: assign({ post: ({ event }) => event.output.text }) },
 *         onError: 'failed',
 *       },
 *       on: {
 *         'agent.waiting': {
 *           actions: enqueueActions(({ enqueue, event }) => {
 *             for (const approval of event.pendingInput.approvals)
 *               enqueue.sendTo('agent', { type: 'approval.resolve', approvalId: approval.id, decision: 'approved' });
 *           }),
 *         },
 *       },
 *     },
 *     published: { type: 'final' },
 *     failed: { type: 'final' },
 *   },
 * });
 */
export function fromAgentProvider<Input>(options: AgentProviderActorOptions<Input>): AgentProviderActorLogic<Input> {
  /** Each actor's live part, from its start until it ends. */
  const actors = new WeakMap<object, LiveAgentProviderActor<Input>>();
  /** What each actor was created with, until it starts. */
  const inputs = new WeakMap<object, { input: AgentProviderActorInput<Input>; runId: string }>();

  const transition = (
    snapshot: AgentProviderActorSnapshot,
    event: EventObject,
    scope: AgentProviderActorScope,
  ): AgentProviderActorSnapshot => {
    if (snapshot.status !== 'active') return snapshot;
    const live = actors.get(scope.self);
    const { context } = snapshot;
    if (event.type === 'xstate.stop') {
      live?.end();
      actors.delete(scope.self);
      return { status: 'stopped', output: undefined, error: undefined, context };
    }
    if (isCommandEvent(event)) {
      // After the snapshot is committed: what the command does comes back as events.
      scope.defer(() => live?.command(event));
      return snapshot;
    }
    if (!isOwnEvent(event) || live === undefined) return snapshot;
    switch (event.type) {
      case 'agentProvider.changed': {
        const forwarded = event.event;
        if (forwarded !== undefined) scope.defer(() => live.tell({ type: 'agent.event', event: forwarded }));
        return { ...snapshot, context: { ...context, agentState: live.store.getSnapshot() } };
      }
      case 'agentProvider.waiting': {
        const runId = event.runIds.at(-1) as string;
        scope.defer(() => live.tell({ type: 'agent.waiting', runId, pendingInput: event.pendingInput }));
        return { ...snapshot, context: { ...context, runId, runIds: event.runIds, phase: 'waiting' } };
      }
      case 'agentProvider.continued':
        return {
          ...snapshot,
          context: { ...context, runId: event.runIds.at(-1) as string, runIds: event.runIds, phase: 'running' },
        };
      case 'agentProvider.ended': {
        actors.delete(scope.self);
        const { output } = event;
        const ended = { ...context, runId: output.runId, runIds: output.runIds, agentState: output.agentState };
        return { status: 'done', output, error: undefined, context: ended };
      }
      case 'agentProvider.failed':
        actors.delete(scope.self);
        return { status: 'error', output: undefined, error: event.error, context };
    }
  };

  return {
    config: options,
    transition,
    getInitialSnapshot(scope, input) {
      const runId = input.runId ?? randomId();
      inputs.set(scope.self, { input, runId });
      return {
        status: 'active',
        output: undefined,
        error: undefined,
        context: {
          sessionId: input.sessionId,
          runId,
          runIds: [runId],
          phase: 'running',
          agentState: input.history ?? createEmptyAgentState(),
        },
      };
    },
    start(snapshot, scope) {
      if (snapshot.status !== 'active') return;
      const created = inputs.get(scope.self);
      inputs.delete(scope.self);
      if (created === undefined) {
        throw new AgentError(
          'not_restorable',
          'An agent provider actor cannot be restored from a persisted snapshot: its run is not in it',
        );
      }
      const live = new LiveAgentProviderActor(options, created.input, created.runId, scope);
      actors.set(scope.self, live);
      live.start();
    },
    getPersistedSnapshot: (snapshot) => snapshot,
  };
}
