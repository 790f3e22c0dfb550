import { assign, setup } from 'xstate';

/** Where a conversation's connection to its runtime stands (seed 003 §11.3). */
export type AgentConnectionState =
  | 'idle'
  | 'restoring'
  | 'connecting'
  | 'connected'
  | 'reconnecting'
  | 'unrecoverable'
  | 'failed';

export type ConnectionMachineEvent =
  /** A checkpoint is being read. */
  | { type: 'restore.started' }
  /** The checkpoint was restored; `resuming` runs are being resumed from their cursors, `stranded` cannot be. */
  | { type: 'restore.done'; resuming: number; stranded: number }
  /** The checkpoint could not be read or was invalid: nothing was restored. */
  | { type: 'restore.failed'; error: unknown }
  /** A run's stream is opening (a new request, or a resume). */
  | { type: 'stream.connecting'; resume: boolean }
  | { type: 'stream.connected' }
  | { type: 'stream.reconnecting'; attempt: number; error: unknown }
  /** A stream cannot go on from where it was: no resume, an invalid cursor, a gap. */
  | { type: 'stream.unrecoverable'; error: unknown }
  /** A stream gave up: the reconnect budget is spent, or its error is not worth retrying. */
  | { type: 'stream.failed'; error: unknown }
  /** A stream ended (its run ended, or it was aborted). */
  | { type: 'stream.closed' };

export interface ConnectionContext {
  /** Streams open now. */
  streams: number;
  /** The error of the last `failed` or `unrecoverable`, for the view. */
  error: unknown;
}

/** A stream that failed or cannot go on: counted as closed, its error kept, the connection says so. */
const streamBreaks = {
  'stream.failed': { target: '#connection.failed', actions: ['close', 'keepError'] },
  'stream.unrecoverable': { target: '#connection.unrecoverable', actions: ['close', 'keepError'] },
} as const;

/** The same, once the connection has broken: only a stream still open can break again. */
const anotherStreamBreaks = {
  'stream.failed': { ...streamBreaks['stream.failed'], guard: 'streaming' },
  'stream.unrecoverable': { ...streamBreaks['stream.unrecoverable'], guard: 'streaming' },
} as const;

/** How an open stream ends, from any state with one: failed, cannot go on, or closed (idle when it was the last). */
const streamEnds = {
  ...streamBreaks,
  'stream.closed': [{ guard: 'lastStream', target: '#connection.idle', actions: 'close' }, { actions: 'close' }],
} as const;

/**
 * The connection of one conversation, as seed 003 §11.3 draws it:
 * `idle -> restoring -> idle | reconnecting | unrecoverable | failed`,
 * `idle -> connecting -> connected -> reconnecting -> connected | unrecoverable | failed`,
 * and back to `idle` when no stream is open. A new request from `failed` or `unrecoverable`
 * connects again. With several runs streaming at once it follows the latest change, and is
 * `idle` only when every stream has closed. It never changes AgentState: a dropped
 * connection is not a failed run until the runner says the run failed.
 */
export const connectionMachine = setup({
  types: {
    context: {} as ConnectionContext,
    events: {} as ConnectionMachineEvent,
  },
  guards: {
    lastStream: ({ context }) => context.streams <= 1,
    streaming: ({ context }) => context.streams > 0,
    resumes: ({ event }) => event.type === 'stream.connecting' && event.resume,
    resuming: ({ event }) => event.type === 'restore.done' && event.resuming > 0,
    stranded: ({ event }) => event.type === 'restore.done' && event.stranded > 0,
  },
  actions: {
    open: assign({ streams: ({ context }) => context.streams + 1 }),
    close: assign({ streams: ({ context }) => Math.max(0, context.streams - 1) }),
    keepError: assign({
      error: ({ event }) => ('error' in event ? event.error : undefined),
    }),
    clearError: assign({ error: () => undefined }),
  },
}).createMachine({
  id: 'connection',
  context: { streams: 0, error: undefined },
  initial: 'idle',
  on: {
    'stream.connecting': [
      { guard: 'resumes', target: '.reconnecting', actions: ['open', 'clearError'] },
      { target: '.connecting', actions: ['open', 'clearError'] },
    ],
  },
  states: {
    idle: {
      on: { 'restore.started': { target: 'restoring' } },
    },
    restoring: {
      on: {
        'restore.done': [
          { guard: 'stranded', target: 'unrecoverable' },
          { guard: 'resuming', target: 'reconnecting' },
          // A stream opened during the restore is still open: it is being resumed.
          { guard: 'streaming', target: 'reconnecting' },
          { target: 'idle' },
        ],
        'restore.failed': { target: 'failed', actions: 'keepError' },
        // A resume opening during the restore keeps the conversation restoring until it is done;
        // its end is counted, and its error kept, whenever it comes.
        'stream.connecting': { actions: ['open', 'clearError'] },
        'stream.failed': { guard: 'streaming', actions: ['close', 'keepError'] },
        'stream.unrecoverable': { guard: 'streaming', actions: ['close', 'keepError'] },
        'stream.closed': { actions: 'close' },
      },
    },
    connecting: {
      on: { 'stream.connected': { target: 'connected' }, ...streamEnds },
    },
    connected: {
      on: { 'stream.reconnecting': { target: 'reconnecting' }, ...streamEnds },
    },
    reconnecting: {
      on: { 'stream.connected': { target: 'connected' }, 'stream.reconnecting': {}, ...streamEnds },
    },
    // Another stream still open may end here too: it is counted, and the latest break is shown.
    unrecoverable: {
      on: { 'stream.closed': { actions: 'close' }, ...anotherStreamBreaks },
    },
    failed: {
      on: { 'stream.closed': { actions: 'close' }, ...anotherStreamBreaks },
    },
  },
});
