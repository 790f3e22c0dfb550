import { type ActorRefFrom, assign, sendTo, setup, spawnChild, stopChild } from 'xstate';
import { commandLaneMachine } from './commandLaneMachine';
import { type ConnectionMachineEvent, connectionMachine } from './connectionMachine';
import type { XChatSnapshot } from './createXChatRuntime';

export type XChatRuntimeEvent =
  /** Goes to the connection machine, the runtime's `connection` child. */
  | ConnectionMachineEvent
  /** The restore from the checkpoint is over (done or failed): requests and commands go ahead. */
  | { type: 'restore.settled' }
  /** What a view reads changed; listeners hear of it in a task of their own. */
  | { type: 'view.changed'; view: XChatSnapshot }
  /** A run's first command: its lane is spawned, a child named `lane:<runId>` (the run must not have one). */
  | { type: 'lane.open'; runId: string }
  /** The run has finished and none of its commands is left: its lane is stopped. */
  | { type: 'lane.close'; runId: string };

export interface XChatRuntimeInput {
  sessionId: string;
  /** The conversation has a checkpoint storage: the runtime starts `restoring` from it. */
  checkpointed: boolean;
  view: XChatSnapshot;
}

export interface XChatRuntimeContext {
  sessionId: string;
  checkpointed: boolean;
  /** What the runtime's listeners were last told. */
  view: XChatSnapshot;
}

/** The actor of one run's command lane, a child of the runtime. */
export type CommandLaneRef = ActorRefFrom<typeof commandLaneMachine>;

/** The id of the lane of `runId` among the runtime's children. */
export function commandLaneId(runId: string): string {
  return `lane:${runId}`;
}

/**
 * The interaction runtime of one conversation as an actor: while a checkpoint is read it
 * is `restoring` (requests wait, commands are refused), then `ready`. Its children are the
 * connection machine (`connection`, which every `restore.*` and `stream.*` event goes to)
 * and one command lane per run with commands (`lane:<runId>`, spawned on the run's first
 * command and stopped when the run has finished with none left). Its context is the view
 * its listeners were last told of (`XChatSnapshot`). The runtime provides the lanes'
 * `execute` actor; the store's actors form a system of their own.
 */
export const xChatRuntimeMachine = setup({
  types: {
    context: {} as XChatRuntimeContext,
    input: {} as XChatRuntimeInput,
    events: {} as XChatRuntimeEvent,
  },
  actors: { connection: connectionMachine, commandLane: commandLaneMachine },
  guards: {
    checkpointed: ({ context }) => context.checkpointed,
  },
  actions: {
    toConnection: sendTo('connection', ({ event }) => event as ConnectionMachineEvent),
    keepView: assign({ view: ({ context, event }) => (event.type === 'view.changed' ? event.view : context.view) }),
    openLane: spawnChild('commandLane', {
      id: ({ event }) => commandLaneId((event as { runId: string }).runId),
      input: ({ event }) => ({ runId: (event as { runId: string }).runId }),
    }),
    closeLane: stopChild(({ event }) => commandLaneId((event as { runId: string }).runId)),
  },
}).createMachine({
  id: 'xChat',
  context: ({ input }) => ({ sessionId: input.sessionId, checkpointed: input.checkpointed, view: input.view }),
  invoke: { id: 'connection', systemId: 'connection', src: 'connection' },
  initial: 'starting',
  on: {
    'restore.*': { actions: 'toConnection' },
    'stream.*': { actions: 'toConnection' },
    'view.changed': { actions: 'keepView' },
    'lane.open': { actions: 'openLane' },
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
