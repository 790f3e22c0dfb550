import type { AgentCommandType } from '../../protocol/commandSchemas';
import type { AgentEvent } from '../../protocol/eventSchemas';
import { createAsyncIterableTransport } from '../../transports/createAsyncIterableTransport';
import { AgentCommandError } from '../AgentCommandError';
import type { AgentApprovalAnswer, AgentProvider } from '../AgentProvider';
import type { AgentRunEmitter } from '../createAgentRunEmitter';
import { defineAgentProvider } from '../defineAgentProvider';
import { eventTypesOf } from '../eventTypeGroups';
import { LocalAgentCommandInbox } from './LocalAgentCommandInbox';
import type { LocalAgentChunk, LocalAgentScript } from './localAgentChunks';
import { type LocalAgentTurn, readLocalAgentTurn } from './localAgentTurn';
import { cancelRejectedToolCalls, localScriptResumePoint } from './localScriptContinuation';
import { mapLocalAgentChunk } from './mapLocalAgentChunk';
import { runLocalAgentScript } from './runLocalAgentScript';

export interface LocalAgentInput {
  prompt: string;
}

/** One live local run, as its runtime sees it: the turn it plays and the commands sent to it. */
export interface LocalAgentRun {
  sessionId: string;
  runId: string;
  turn: LocalAgentTurn;
  /** The commands `executeCommand` hands to this run; a runtime that never takes them leaves them to fail when it ends. */
  commands: LocalAgentCommandInbox;
}

export interface LocalAgentContext {
  events: AgentRunEmitter;
  run: LocalAgentRun;
}

/** What the local transport opens: the input, and the live run it plays. */
export interface LocalAgentRequest {
  input: LocalAgentInput;
  run: LocalAgentRun;
}

/**
 * Your own local runtime: yields chunks for the input. `run` gives the turn, and the
 * commands sent to the run, which it takes from `run.commands` and accepts or refuses.
 */
export type LocalAgentRuntime = (
  request: LocalAgentInput,
  signal: AbortSignal,
  run: LocalAgentRun,
) => AsyncIterable<LocalAgentChunk>;

export type LocalAgentProviderOptions =
  | {
      script: LocalAgentScript | ((input: LocalAgentInput, turn: LocalAgentTurn) => LocalAgentScript);
      runtime?: never;
    }
  | { runtime: LocalAgentRuntime; script?: never };

const LOCAL_EVENT_TYPES = eventTypesOf(['run', 'message', 'reasoning', 'toolCall', 'approval', 'task', 'artifact']);
const LOCAL_COMMANDS: readonly AgentCommandType[] = [
  'approval.resolve',
  'tool.retry',
  'run.cancel',
  'tool.submit_result',
];

/** The waiting run's approval, as the continuing run resolves it: a dismissed one is rejected. */
function resolveAnswer(events: AgentRunEmitter, answer: AgentApprovalAnswer): AgentEvent {
  const decision = answer.status === 'cancelled' ? 'rejected' : (answer.decision ?? 'approved');
  const payload =
    answer.data === undefined
      ? { approvalId: answer.approvalId, decision }
      : { approvalId: answer.approvalId, decision, data: answer.data };
  return events.emit('approval.resolved', payload, { meta: { agentMachines: { resolvedBy: 'continuation' } } });
}

/**
 * The embedded runtime: a provider over the async-iterable transport that plays a
 * scripted agent (reasoning, streamed text, tool calls with streamed arguments, failing
 * tools, approvals, tasks, artifacts, and failure or stall points), or runs your own
 * local runtime function. No network and no key: what `npm start` and the tests use.
 *
 * It carries out every command while the run runs, through its own stream: `run.cancel`
 * ends the run cancelled; `tool.retry` makes a new attempt of a failed retryable tool call
 * (`attempt` + 1, `retryOf`), which yields the step's `retryResult` (else fails again);
 * `approval.resolve` and `tool.submit_result` answer the approval or tool step the run
 * waits on (`waitFor: 'command'`), or an approval it would end waiting on. `executeCommand` completes, with no events of its own,
 * once the run has taken the command, and fails `invalid_command` when the run is not
 * running here or the command does not apply. A script given as a function gets the turn
 * too: in a run that continues a waiting one, the application's tool results; the answers
 * to the waiting run's approvals are resolved before the script plays, and no user message is sent.
 * A script given as an object is one conversation: the run that continues a waiting one plays
 * it on from the step after the approvals that ended it, with their answers (a tool step's
 * `argumentsFrom` takes a modified decision's data); a rejection cancels the tool call the
 * approval is about and plays nothing more.
 *
 * @example
 * // Run 1 asks for approval in the run, then leaves the weather tool to the application;
 * // run 2, continuing it once the application settled the tool, answers with the result.
 * const provider = createLocalAgentProvider({
 *   script: (input, turn) => {
 *     const [weather] = turn.toolResults;
 *     if (weather !== undefined) return { steps: [{ type: 'text', deltas: [`It is ${(weather.result as { celsius: number }).celsius} °C.`] }] };
 *     return {
 *       steps: [
 *         { type: 'approval', description: 'Look up the weather?', waitFor: 'command' },
 *         { type: 'tool', name: 'weather', argumentDeltas: ['{"city":"Paris"}'] },
 *       ],
 *       delayMs: 20,
 *     };
 *   },
 * });
 * const run = runAgentProvider({ provider, input: { prompt: 'Weather?' }, sessionId: 'local', runId: 'r1', onEvent: store.dispatch });
 * const approve = createAgentCommandFactory({ sessionId: 'local', runId: 'r1' })
 *   .create('approval.resolve', { approvalId: 'approval-0', decision: 'approved' });
 * await runAgentCommand({ provider, command: approve, initialSequence: store.getSnapshot().lastSequenceByRun.r1, onEvent: store.dispatch });
 */
export function createLocalAgentProvider(
  options: LocalAgentProviderOptions,
): AgentProvider<LocalAgentInput, LocalAgentRequest, LocalAgentChunk, LocalAgentContext> {
  const runtime: LocalAgentRuntime =
    options.runtime ??
    ((input, signal, run) => {
      const answers = run.turn.continuation?.approvals ?? [];
      // A script function writes each turn itself; one script is one conversation, played on
      // where the waiting run ended.
      if (typeof options.script === 'function') {
        return runLocalAgentScript(options.script(input, run.turn), signal, run.commands, { answers });
      }
      const script = options.script as LocalAgentScript;
      const from = localScriptResumePoint(script, run.turn);
      return runLocalAgentScript(script, signal, run.commands, { from, answers });
    });
  /** The live runs of this provider, by run id: from their context until their stream ends. */
  const runs = new Map<string, LocalAgentRun>();
  return defineAgentProvider({
    id: 'local',
    capabilities: { eventTypes: LOCAL_EVENT_TYPES, commands: LOCAL_COMMANDS },
    transport: createAsyncIterableTransport((request: LocalAgentRequest, signal) =>
      runtime(request.input, signal, request.run),
    ),
    createContext: (events, contextOptions) => {
      const { sessionId, runId, signal } = contextOptions;
      const commands = new LocalAgentCommandInbox(sessionId, runId, () => {
        if (runs.get(runId) === run) runs.delete(runId);
      });
      const run: LocalAgentRun = { sessionId, runId, turn: readLocalAgentTurn(contextOptions), commands };
      runs.set(runId, run);
      // The runner aborts its signal when the run is over, however it ended: the run is forgotten then at the latest.
      if (signal.aborted) commands.close();
      else signal.addEventListener('abort', () => commands.close(), { once: true });
      return { events, run };
    },
    start: (input, { events, run }) => {
      const { continuation } = run.turn;
      if (continuation !== undefined) {
        return [
          events.emit('run.started', { input }),
          ...continuation.approvals.map((answer) => resolveAnswer(events, answer)),
          // A scripted agent stops at a rejection; your own runtime decides for itself.
          ...(options.runtime === undefined ? cancelRejectedToolCalls(events, run.turn) : []),
        ];
      }
      return [
        events.emit('run.started', { input }),
        events.emit('message.started', { messageId: 'prompt', role: 'user', content: input.prompt }),
        events.emit('message.completed', { messageId: 'prompt' }),
      ];
    },
    prepareRequest: (input, { run }) => ({ input, run }),
    transformChunk: (chunk, { events }) => mapLocalAgentChunk(chunk, events),
    incompleteStream: { message: 'The local runtime ended without finishing the run', code: 'incomplete_stream' },
    // biome-ignore lint/correctness/useYield: the run's own stream emits what the command does, so this one has no events
    async *executeCommand(command, commandOptions) {
      const run = runs.get(command.runId);
      if (run === undefined || run.sessionId !== command.sessionId || run.commands.isClosed) {
        throw new AgentCommandError(
          'invalid_command',
          `${command.type} (command ${command.commandId}): the local runtime has no running run "${command.runId}" in session "${command.sessionId}"; it never started here or has ended`,
        );
      }
      await run.commands.deliver(command, commandOptions.signal);
    },
  });
}
