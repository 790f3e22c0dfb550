import { type ActorRefFrom, enqueueActions, sendTo, setup, stopChild } from 'xstate';
import { sessionMachine } from '../machines/sessionMachine';
import { commandLaneMachine } from './commandLaneMachine';
import { type ConnectionMachineEvent, connectionMachine } from './connectionMachine';

export type XChatRuntimeEvent =
  /** Goes to the connection machine, the runtime's `connection` child. */
  | ConnectionMachineEvent
  /** The restore from the checkpoint is over (done or failed): requests and commands go ahead. */
  | { type: 'restore.settled' }
  /**
   * A command for a run's lane: the lane (a child named `lane:<runId>`) is spawned on the
   * run's first command, and takes the command after those before it.
   */
  | { type: 'lane.enqueue'; runId: string; commandId: string; cancels: boolean }
  /** The run's cancel has settled: its lane takes commands again. */
  | { type: 'lane.cancel_settled'; runId: string }
  /** The run has finished and none of its commands is left: its lane is stopped. */
  | { type: 'lane.close'; runId: string };

export interface XChatRuntimeInput {
  sessionId: string;
  /** The conversation has a checkpoint storage: the runtime starts `restoring` from it. */
  checkpointed: boolean;
}

export interface XChatRuntimeContext {
  sessionId: string;
  checkpointed: boolean;
}

/** The actor of one run's command lane, a child of the runtime. */
export type CommandLaneRef = ActorRefFrom<typeof commandLaneMachine>;

/** The id of the lane of `runId` among the runtime's children, and its systemId in the conversation's system. */
export function commandLaneId(runId: string): `lane:${string}` {
  return `lane:${runId}`;
}

/**
 * One conversation as one actor system: while a checkpoint is read it is `restoring`
 * (requests wait, commands are refused), then `ready`. Its children are the store's session
 * actor (`session`, which owns a `run:<runId>` actor per live run, which owns an actor per
 * live entity), the connection machine (`connection`, which every `restore.*` and
 * `stream.*` event goes to) and one command lane per run with commands (`lane:<runId>`,
 * spawned on the run's first command and stopped when the run has finished with none left):
 * commands reach their lane through it, so they keep their order even when sent while it is
 * busy. What views read is selected from these snapshots (`XChatRuntime.getSnapshot`), never
 * copied into its context. The runtime provides the lanes' `execute` actor.
 */
export const xChatRuntimeMachine = setup({
  types: {
    context: {} as XChatRuntimeContext,
    input: {} as XChatRuntimeInput,
    events: {} as XChatRuntimeEvent,
    // The children by id: the lanes' ids as a pattern, so the children's type (written out in
    // the declarations a consumer typechecks) has `connection` beside a `lane:${string}` index
    // rather than beside a `string` index it does not fit (TS2411 under skipLibCheck: false).
    children: {} as { connection: 'connection'; session: 'session'; [id: `lane:${string}`]: 'commandLane' },
  },
  actors: { connection: connectionMachine, session: sessionMachine, commandLane: commandLaneMachine },
  guards: {
    checkpointed: ({ context }) => context.checkpointed,
  },
  actions: {
    toConnection: sendTo('connection', ({ event }) => event as ConnectionMachineEvent),
    toLane: enqueueActions(({ event, enqueue, self }) => {
      if (event.type !== 'lane.enqueue' && event.type !== 'lane.cancel_settled') return;
      const id = commandLaneId(event.runId);
      if (self.getSnapshot().children[id] === undefined) {
        // A cancel settles on a lane that is gone (stopped from outside): nothing to tell.
        if (event.type === 'lane.cancel_settled') return;
        // Its systemId is its id: `lane.close` stops a lane with `stopChild`, which takes it out
        // of the system at once, so a lane spawned again for the run registers under the same id.
        enqueue.spawnChild('commandLane', { id, systemId: id, input: { runId: event.runId } });
      }
      enqueue.sendTo(
        id,
        event.type === 'lane.enqueue'
          ? { type: 'lane.enqueue', commandId: event.commandId, cancels: event.cancels }
          : { type: 'lane.cancel_settled' },
      );
    }),
    closeLane: stopChild(({ event }) => commandLaneId((event as { runId: string }).runId)),
  },
}).createMachine({
  id: 'xChat',
  context: ({ input }) => ({ sessionId: input.sessionId, checkpointed: input.checkpointed }),
  invoke: [
    { id: 'session', systemId: 'session', src: 'session' },
    { id: 'connection', systemId: 'connection', src: 'connection' },
  ],
  initial: 'starting',
  on: {
    'restore.*': { actions: 'toConnection' },
    'stream.*': { actions: 'toConnection' },
    'lane.enqueue': { actions: 'toLane' },
    'lane.cancel_settled': { actions: 'toLane' },
    'lane.close': { actions: 'closeLane' },
  },
  states: {
    starting: {
      always: [{ guard: 'checkpointed', target: 'restoring' }, { target: 'ready' }],
    },
    restoring: {
      on: { 'restore.settled': { target: 'ready' } },
    },
    ready: {},
  },
});
