import { expect } from 'vitest';
import type { AnyStateMachine } from 'xstate';
import type { AgentApprovalState, AgentRunState, AgentState, AgentToolCallState } from '../../machines/agentState';
import type { AgentCommand, AgentCommandType } from '../../protocol/commandSchemas';
import type { AgentEvent } from '../../protocol/eventSchemas';
import { getAgentEntityKey } from '../../protocol/getAgentEntityKey';
import { AgentCommandError, type AgentCommandErrorCode } from '../../providers/AgentCommandError';
import type { AgentProvider } from '../../providers/AgentProvider';
import type { AgentRunEmitter } from '../../providers/createAgentRunEmitter';
import { createLocalAgentProvider } from '../../providers/local/createLocalAgentProvider';
import type { LocalAgentScript } from '../../providers/local/localAgentChunks';
import type { AgentRunResult } from '../../providers/runAgentProvider';
import { getAgentActionKey } from '../../runtime/agentCommandKeys';
import type { AgentCommandState } from '../../runtime/commandBook';
import { type AgentActionResult, createXChatRuntime, type XChatRuntime } from '../../runtime/createXChatRuntime';
import { createRemoteRuntime, type RemoteRun } from './remoteRuntime';

/*
 * Models of what a user sees of an approval, a tool call and a run while acting on them. Each
 * path runs against a fresh interaction runtime (`createXChatRuntime`: its store, machines and
 * command lanes) over the remote simulator of `remoteRuntime.ts`, which holds each
 * command until the path says what the runtime does with it, and, when a fixed local script
 * can play it, over the local provider too (a local script never expires an approval and
 * always honours a cancel). In every state the runtime snapshot is checked (the entity in
 * AgentState, the command state, no protocol issue), and every user action the state must
 * refuse is tried: it rejects `invalid_command`, creates no command and changes nothing.
 */

/** The session every chat under test runs in. */
export const SESSION_ID = 'session-1';
const CANCEL_TIMEOUT_MS = 30;

/** The backends a model's paths run on. */
export type BackendName = 'local provider' | 'remote runtime';

/** A model state: its value and context, as `getSimplePaths` returns them. */
export interface ModelState {
  value: unknown;
  context: Record<string, unknown>;
}

/** A user action that settled: how. */
type Outcome = { status: 'fulfilled'; value: AgentActionResult } | { status: 'rejected'; reason: unknown };

/** The last user action a path took: the command it created, and its outcome once settled. */
interface TrackedAction {
  commandId: string;
  outcome: Outcome | undefined;
  settled: Promise<void>;
}

/** What the path says the simulated runtime does with the command it holds. */
class RuntimeDecisions {
  private readonly queued: string[] = [];
  private waiting: ((decision: string) => void) | undefined;

  decide(decision: string): void {
    const waiting = this.waiting;
    this.waiting = undefined;
    if (waiting === undefined) this.queued.push(decision);
    else waiting(decision);
  }

  next(signal: AbortSignal): Promise<string> {
    const queued = this.queued.shift();
    if (queued !== undefined) return Promise.resolve(queued);
    return new Promise((resolve, reject) => {
      this.waiting = resolve;
      signal.addEventListener('abort', () => reject(signal.reason), { once: true });
    });
  }
}

/** Retries `assertion` until it holds; after `timeoutMs` its failure is the test's. */
export async function eventually(assertion: () => void, timeoutMs = 2_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      assertion();
      return;
    } catch (error) {
      if (Date.now() > deadline) throw error;
    }
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
}

type CommandExpectation = 'none' | 'submitting' | 'succeeded' | { failed: AgentCommandErrorCode };

/** One chat under test: a fresh runtime over one backend, its one run, and the commands of the path. */
export class ChatHarness {
  readonly chat: XChatRuntime<{ prompt: string }>;
  /** Every command the provider was asked to execute. */
  readonly calls: AgentCommand[] = [];
  /** The command of each user action the path took, in order. */
  readonly commandIds: string[] = [];
  readonly decisions = new RuntimeDecisions();
  runId = '';
  remoteRun: RemoteRun | undefined;
  action: TrackedAction | undefined;
  private result: Promise<AgentRunResult> | undefined;

  constructor(
    readonly backend: BackendName,
    provider: AgentProvider<{ prompt: string }, unknown, unknown, unknown>,
  ) {
    const execute = provider.executeCommand;
    const recording: typeof provider = {
      ...provider,
      executeCommand: (command, options) => {
        this.calls.push(command);
        return (execute as NonNullable<typeof execute>)(command, options);
      },
    };
    this.chat = createXChatRuntime({ provider: recording, sessionId: SESSION_ID, cancelTimeoutMs: CANCEL_TIMEOUT_MS });
  }

  async start(): Promise<void> {
    this.result = this.chat.request({ prompt: 'Go' });
    await eventually(() => expect(Object.keys(this.state().runs)).toHaveLength(1));
    this.runId = Object.keys(this.state().runs)[0] as string;
  }

  /** Takes a user action the model accepts: it creates one command, submitting at once. */
  act(name: string, attempt: () => Promise<AgentActionResult>): void {
    const before = this.chat.getSnapshot().commandStates;
    const promise = attempt();
    const after = this.chat.getSnapshot().commandStates;
    const changed = Object.keys(after).filter((id) => after[id] !== before[id] && after[id]?.status === 'submitting');
    expect(changed, `${name} makes one submitting command`).toHaveLength(1);
    const action: TrackedAction = {
      commandId: changed[0] as string,
      outcome: undefined,
      settled: promise.then(
        (value) => {
          action.outcome = { status: 'fulfilled', value };
        },
        (reason: unknown) => {
          action.outcome = { status: 'rejected', reason };
        },
      ),
    };
    this.action = action;
    this.commandIds.push(action.commandId);
  }

  /** Waits until the last user action has settled. */
  async settled(): Promise<void> {
    await this.action?.settled;
  }

  state(): AgentState {
    return this.chat.getSnapshot().agentState;
  }

  run(): AgentRunState | undefined {
    return this.state().runs[this.runId];
  }

  approval(approvalId: string): AgentApprovalState | undefined {
    return this.state().approvals[getAgentEntityKey(this.runId, approvalId)];
  }

  toolCall(toolCallId: string): AgentToolCallState | undefined {
    return this.state().toolCalls[getAgentEntityKey(this.runId, toolCallId)];
  }

  /** The latest command of one action on one entity (none for `run.cancel`). */
  command(type: AgentCommandType, entityId?: string): AgentCommandState | undefined {
    const { commandStates, latestCommandByAction } = this.chat.getSnapshot();
    const key = getAgentActionKey(
      entityId === undefined ? { runId: this.runId, type } : { runId: this.runId, type, entityId },
    );
    const commandId = latestCommandByAction[key];
    return commandId === undefined ? undefined : commandStates[commandId];
  }

  expectCommand(type: AgentCommandType, entityId: string | undefined, expected: CommandExpectation): void {
    const state = this.command(type, entityId);
    const label = `${type} ${entityId ?? ''}`;
    if (expected === 'none') {
      expect(state, label).toBeUndefined();
      return;
    }
    expect(state?.command.commandId, label).toBe(this.action?.commandId);
    if (typeof expected === 'string') {
      expect(state?.status, label).toBe(expected);
      expect(state?.error, label).toBeUndefined();
    } else {
      expect(state?.status, label).toBe('failed');
      expect(state?.error?.code, label).toBe(expected.failed);
    }
  }

  /** The last user action resolved with its command, or rejected with `code`. */
  expectOutcome(expected: 'fulfilled' | { rejected: AgentCommandErrorCode }): void {
    const outcome = this.action?.outcome;
    if (expected === 'fulfilled') {
      expect(outcome).toMatchObject({ status: 'fulfilled', value: { commandId: this.action?.commandId } });
      return;
    }
    expect(outcome?.status).toBe('rejected');
    const reason = outcome?.status === 'rejected' ? outcome.reason : undefined;
    expect(AgentCommandError.isInstance(reason)).toBe(true);
    expect((reason as AgentCommandError).code).toBe(expected.rejected);
  }

  async close(): Promise<void> {
    this.chat.abort();
    await this.result;
  }
}

/** A fresh chat over the local provider playing `script`, its run started. */
async function startLocal(script: LocalAgentScript): Promise<ChatHarness> {
  const harness = new ChatHarness('local provider', createLocalAgentProvider({ script }));
  await harness.start();
  return harness;
}

type RemoteAnswer = (
  harness: ChatHarness,
  command: AgentCommand,
  run: RemoteRun,
  signal: AbortSignal,
) => AsyncIterable<AgentEvent>;

/** A fresh chat over the remote simulator: its run opens with `opening`; `answer` answers its commands. */
async function startRemote(
  opening: (events: AgentRunEmitter) => AgentEvent[],
  answer: RemoteAnswer,
): Promise<ChatHarness> {
  const remote = createRemoteRuntime();
  const harness = new ChatHarness('remote runtime', remote.provider);
  remote.setOnCommand((command, run, signal) => answer(harness, command, run, signal));
  const started = remote.nextRun();
  await harness.start();
  harness.remoteRun = await started;
  harness.remoteRun.push(opening);
  return harness;
}

/** Where a model's paths run. */
export interface Backend<Input> {
  name: BackendName;
  /** Whether it can take every step of the path: a local script is fixed when its run starts. */
  plays(events: readonly string[]): boolean;
  /** A fresh chat whose run has started, ready for the path. */
  start(input: Input, events: readonly string[]): Promise<ChatHarness>;
}

/**
 * The local provider as a backend: it plays the paths `plays` accepts, each with the script
 * `script` makes for the variant's input and the path's events.
 */
export function localBackend<Input>(
  plays: (events: readonly string[]) => boolean,
  script: (input: Input, events: readonly string[]) => LocalAgentScript,
): Backend<Input> {
  return { name: 'local provider', plays, start: (input, events) => startLocal(script(input, events)) };
}

/**
 * The remote simulator as a backend: it plays every path; its run opens with the events
 * `opening` emits for the variant's input, and `answer` answers its commands.
 */
export function remoteBackend<Input>(
  opening: (events: AgentRunEmitter, input: Input) => AgentEvent[],
  answer: RemoteAnswer,
): Backend<Input> {
  return {
    name: 'remote runtime',
    plays: () => true,
    start: (input) => startRemote((events) => opening(events, input), answer),
  };
}

/** A user action the runtime must refuse in a state, and the reason its message gives. */
export interface Refusal {
  action: string;
  reason: RegExp;
}

/** A model of one interaction lifecycle, and how its events and states map onto the runtime. */
export interface InteractionModel<Input> {
  name: string;
  machine: AnyStateMachine;
  variants: ReadonlyArray<{ label: string; input: Input }>;
  backends: ReadonlyArray<Backend<Input>>;
  /** The user's actions, each one agent action: the model's `user.*` events, and the probes. */
  actions: Record<string, (harness: ChatHarness, state: ModelState) => Promise<AgentActionResult>>;
  /** What the runtime does at each `runtime.*` event; the runner then waits until the next state shows. */
  runtime: Record<string, (harness: ChatHarness, from: ModelState) => Promise<void>>;
  /** Asserts, synchronously, what the runtime snapshot shows in a state of the model. */
  expectState(harness: ChatHarness, state: ModelState): void;
  /** The user actions the runtime refuses in a state of the model. */
  refusals(harness: ChatHarness, state: ModelState): Refusal[];
  /** A state's name in test titles. */
  label(state: ModelState): string;
}

/** Every one of `actions`, refused because the harness's run has ended. */
export function endedRunRefusals(harness: ChatHarness, actions: readonly string[]): Refusal[] {
  const reason = new RegExp(`run "${harness.runId}" is ${harness.run()?.status}: an ended run takes no commands`);
  return actions.map((action) => ({ action, reason }));
}

/** Lets the simulated runtime carry out `decision` on the command it holds, and waits until the user action settles. */
export async function decideAndSettle(harness: ChatHarness, decision: string): Promise<void> {
  harness.decisions.decide(decision);
  await harness.settled();
}
