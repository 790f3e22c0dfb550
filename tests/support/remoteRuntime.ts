import type { AgentCommand, AgentCommandType } from '../../protocol/commandSchemas';
import type { AgentEvent } from '../../protocol/eventSchemas';
import type { AgentProviderContextOptions } from '../../providers/AgentProvider';
import type { AgentRunEmitter } from '../../providers/createAgentRunEmitter';
import { defineAgentProvider } from '../../providers/defineAgentProvider';
import { AGENT_EVENT_TYPE_GROUPS, eventTypesOf } from '../../providers/eventTypeGroups';
import { createAsyncIterableTransport } from '../../transports/createAsyncIterableTransport';

/** One run of the simulated runtime: its emitter (one sequence for its stream and its commands), and its stream. */
export interface RemoteRun {
  runId: string;
  events: AgentRunEmitter;
  options: AgentProviderContextOptions;
  input: unknown;
  /** Sends events down the run's stream. */
  push(make: (events: AgentRunEmitter) => AgentEvent[]): void;
  /** Ends the run's stream (after `push`ing its terminal, or not). */
  end(): void;
  /** Whether the stream was opened and then aborted by the client. */
  aborted: boolean;
}

export type RemoteCommandHandler = (
  command: AgentCommand,
  run: RemoteRun,
  signal: AbortSignal,
) => AsyncIterable<AgentEvent> | Iterable<AgentEvent>;

/**
 * A runtime simulated in process, for tests of the interaction runtime: each run's stream
 * is fed by the test (`push`, `end`), and commands are answered by `onCommand`, with
 * events of the same run emitter, so sequences of the stream and of commands interleave
 * as a real runtime's would. Every `executeCommand` call is recorded.
 */
export function createRemoteRuntime(
  options: { commands?: readonly AgentCommandType[]; onCommand?: RemoteCommandHandler } = {},
) {
  const runs: RemoteRun[] = [];
  const waiting: Array<(run: RemoteRun) => void> = [];
  const calls: AgentCommand[] = [];
  let onCommand: RemoteCommandHandler | undefined = options.onCommand;

  const provider = defineAgentProvider({
    id: 'remote',
    capabilities: {
      eventTypes: eventTypesOf(Object.keys(AGENT_EVENT_TYPE_GROUPS) as Array<keyof typeof AGENT_EVENT_TYPE_GROUPS>),
      commands: options.commands ?? ['approval.resolve', 'tool.retry', 'run.cancel', 'tool.submit_result'],
    },
    transport: createAsyncIterableTransport<RemoteRun, AgentEvent[]>((run, signal) => stream(run, signal)),
    createContext: (events: AgentRunEmitter, contextOptions: AgentProviderContextOptions) => {
      const run = createRun(events, contextOptions);
      return { events, run };
    },
    start: (input: { prompt?: string }, { events, run }) => {
      run.input = input;
      const out: AgentEvent[] = [events.emit('run.started', { input })];
      if (run.options.continuation === undefined && input.prompt !== undefined) {
        out.push(
          events.emit('message.started', { messageId: 'prompt', role: 'user', content: input.prompt }),
          events.emit('message.completed', { messageId: 'prompt' }),
        );
      }
      return out;
    },
    prepareRequest: (_input, { run }) => run,
    transformChunk: (chunk) => chunk,
    incompleteStream: { message: 'The remote stream ended early', code: 'incomplete_stream' },
    executeCommand: (command, commandOptions) => execute(command, commandOptions.signal),
  });

  function createRun(events: AgentRunEmitter, contextOptions: AgentProviderContextOptions): RemoteRun {
    const queue: Array<AgentEvent[] | 'end'> = [];
    let wake: (() => void) | undefined;
    const run: RemoteRun & { queue: typeof queue; wait(): Promise<void> } = {
      runId: events.runId,
      events,
      options: contextOptions,
      input: undefined,
      aborted: false,
      queue,
      push(make) {
        queue.push(make(events));
        wake?.();
      },
      end() {
        queue.push('end');
        wake?.();
      },
      wait: () =>
        new Promise<void>((resolve) => {
          wake = resolve;
        }),
    };
    runs.push(run);
    for (const resolve of waiting.splice(0)) resolve(run);
    return run;
  }

  async function* stream(run: RemoteRun, signal: AbortSignal): AsyncGenerator<AgentEvent[]> {
    const own = run as RemoteRun & { queue: Array<AgentEvent[] | 'end'>; wait(): Promise<void> };
    const aborted = new Promise<never>((_resolve, reject) => {
      signal.addEventListener(
        'abort',
        () => {
          run.aborted = true;
          reject(signal.reason);
        },
        { once: true },
      );
    });
    aborted.catch(() => undefined);
    for (;;) {
      const next = own.queue.shift();
      if (next === 'end') return;
      if (next !== undefined) {
        yield next;
        continue;
      }
      await Promise.race([own.wait(), aborted]);
    }
  }

  async function* execute(command: AgentCommand, signal: AbortSignal): AsyncGenerator<AgentEvent> {
    calls.push(command);
    const run = runs.find((candidate) => candidate.runId === command.runId);
    if (run === undefined) throw new Error(`No run ${command.runId}`);
    if (onCommand !== undefined) yield* onCommand(command, run, signal);
  }

  return {
    provider,
    runs,
    calls,
    /** The next run the runtime starts. */
    nextRun(): Promise<RemoteRun> {
      return new Promise((resolve) => waiting.push(resolve));
    },
    setOnCommand(handler: RemoteCommandHandler | undefined) {
      onCommand = handler;
    },
  };
}

/** A run's terminal that leaves it waiting on one client tool call, with that call's events. */
export function waitingOnTool(events: AgentRunEmitter, toolCallId = 'call-1'): AgentEvent[] {
  return [
    events.emit('tool.requested', { toolCallId, name: 'weather' }),
    events.emit('tool.arguments_completed', { toolCallId, arguments: '{"city":"Paris"}' }),
    events.emit('run.completed', { pendingToolCallIds: [toolCallId] }),
  ];
}

/**
 * Requests a run of `remote` through `chat` that ends waiting on one client tool call
 * (`waitingOnTool`), and resolves with it once the request has settled.
 */
export async function requestRunWaitingOnTool(
  chat: { request(input: { prompt: string }): Promise<unknown> },
  remote: ReturnType<typeof createRemoteRuntime>,
  prompt = 'Weather in Paris?',
  toolCallId = 'call-1',
): Promise<RemoteRun> {
  const started = remote.nextRun();
  const result = chat.request({ prompt });
  const run = await started;
  run.push((events) => waitingOnTool(events, toolCallId));
  run.end();
  await result;
  return run;
}

/** Requests a run of `remote` through `chat` that completes at once, and resolves with it once the request has settled. */
export async function requestCompletedRun(
  chat: { request(input: { prompt: string }): Promise<unknown> },
  remote: ReturnType<typeof createRemoteRuntime>,
  prompt: string,
): Promise<RemoteRun> {
  const started = remote.nextRun();
  const result = chat.request({ prompt });
  const run = await started;
  run.push((events) => [events.emit('run.completed', {})]);
  run.end();
  await result;
  return run;
}
