import { assign, fromPromise, setup } from 'xstate';

export type CommandLaneEvent =
  | { type: 'lane.enqueue'; commandId: string; cancels: boolean }
  | { type: 'lane.cancel_settled' };

/**
 * The commands of one run, one at a time (seed 003 §17): a command is executed when those
 * before it have finished, and runs of a session have lanes of their own, so different
 * runs' commands go in parallel. A `run.cancel` in the lane (`cancelling`) refuses every
 * later command of its run until it has settled; a cancel that failed (no confirmation in
 * time) opens the lane again. The runtime provides `execute`, which never rejects: a
 * command's failure is its command state, not the lane's.
 */
export const commandLaneMachine = setup({
  types: {
    context: {} as { runId: string; queue: string[] },
    input: {} as { runId: string },
    events: {} as CommandLaneEvent,
  },
  actors: {
    execute: fromPromise<void, { commandId: string }>(async () => {
      throw new Error('commandLaneMachine needs an execute actor: provide it');
    }),
  },
  guards: {
    cancels: ({ event }) => event.type === 'lane.enqueue' && event.cancels,
    hasQueued: ({ context }) => context.queue.length > 0,
  },
  actions: {
    push: assign({
      queue: ({ context, event }) =>
        // Only `lane.enqueue` runs `push`: the other arm narrows the type of `event` and is never taken.
        event.type === 'lane.enqueue' ? [...context.queue, event.commandId] : /* v8 ignore next */ context.queue,
    }),
    shift: assign({ queue: ({ context }) => context.queue.slice(1) }),
  },
}).createMachine({
  id: 'commandLane',
  context: ({ input }) => ({ runId: input.runId, queue: [] }),
  type: 'parallel',
  states: {
    admission: {
      initial: 'accepting',
      states: {
        accepting: {
          on: {
            'lane.enqueue': [{ guard: 'cancels', target: 'cancelling', actions: 'push' }, { actions: 'push' }],
          },
        },
        cancelling: { on: { 'lane.cancel_settled': { target: 'accepting' } } },
      },
    },
    execution: {
      initial: 'idle',
      states: {
        idle: { always: { guard: 'hasQueued', target: 'executing' } },
        executing: {
          invoke: {
            src: 'execute',
            input: ({ context }) => ({ commandId: context.queue[0] as string }),
            onDone: { target: 'idle', actions: 'shift' },
            onError: { target: 'idle', actions: 'shift' },
          },
        },
      },
    },
  },
});
