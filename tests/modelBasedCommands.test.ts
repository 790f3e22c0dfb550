import { getSimplePaths } from '@xstate/graph';
import { describe, expect, it } from 'vitest';
import { type AnyStateMachine, assign, setup } from 'xstate';
import type { AgentApprovalState, AgentRunState, AgentState, AgentToolCallState } from '../machines/agentState';
import { createAgentStore } from '../machines/createAgentStore';
import type { AgentCommand, AgentCommandType } from '../protocol/commandSchemas';
import { createAgentCommandFactory } from '../protocol/createAgentCommandFactory';
import type { AgentErrorInfo, AgentEvent } from '../protocol/eventSchemas';
import { getAgentEntityKey } from '../protocol/getAgentEntityKey';
import { AgentCommandError, type AgentCommandErrorCode } from '../providers/AgentCommandError';
import type { AgentProvider } from '../providers/AgentProvider';
import type { AgentRunEmitter } from '../providers/createAgentRunEmitter';
import { createLocalAgentProvider } from '../providers/local/createLocalAgentProvider';
import type { LocalAgentScript, LocalAgentStep } from '../providers/local/localAgentChunks';
import { runLocalAgentScript } from '../providers/local/runLocalAgentScript';
import { runAgentCommand } from '../providers/runAgentCommand';
import { type AgentRunResult, runAgentProvider } from '../providers/runAgentProvider';
import { getAgentActionKey } from '../runtime/agentCommandKeys';
import type { AgentCommandState } from '../runtime/commandBook';
import { type AgentActionResult, createXChatRuntime, type XChatRuntime } from '../runtime/createXChatRuntime';
import { createRemoteRuntime, type RemoteRun } from './support/remoteRuntime';

/*
 * Models of what a user sees of an approval, a tool call and a run while acting on them. Each
 * path runs against a fresh interaction runtime (`createXChatRuntime`: its store, machines and
 * command lanes) over the remote simulator of `support/remoteRuntime.ts`, which holds each
 * command until the path says what the runtime does with it, and, when a fixed local script
 * can play it, over the local provider too (a local script never expires an approval and
 * always honours a cancel). In every state the runtime snapshot is checked (the entity in
 * AgentState, the command state, no protocol issue), and every user action the state must
 * refuse is tried: it rejects `invalid_command`, creates no command and changes nothing.
 */

const SESSION_ID = 'session-1';
const CANCEL_TIMEOUT_MS = 30;

type BackendName = 'local provider' | 'remote runtime';

/** A model state: its value and context, as `getSimplePaths` returns them. */
interface ModelState {
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
async function eventually(assertion: () => void, timeoutMs = 2_000): Promise<void> {
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
class ChatHarness {
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
interface Backend<Input> {
  name: BackendName;
  /** Whether it can take every step of the path: a local script is fixed when its run starts. */
  plays(events: readonly string[]): boolean;
  /** A fresh chat whose run has started, ready for the path. */
  start(input: Input, events: readonly string[]): Promise<ChatHarness>;
}

/** A user action the runtime must refuse in a state, and the reason its message gives. */
interface Refusal {
  action: string;
  reason: RegExp;
}

/** A model of one interaction lifecycle, and how its events and states map onto the runtime. */
interface InteractionModel<Input> {
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

function endedRunRefusals(harness: ChatHarness, actions: readonly string[]): Refusal[] {
  const reason = new RegExp(`run "${harness.runId}" is ${harness.run()?.status}: an ended run takes no commands`);
  return actions.map((action) => ({ action, reason }));
}

// --- Approval: waiting -> submitting -> approved | rejected | modified, or expired ------------

type Decision = 'approved' | 'rejected' | 'modified';

const APPROVAL_ID = 'approval-0';
const REQUESTED = { path: 'report.pdf' };
const EDITED = { path: 'draft.pdf' };

/**
 * The approval as its user sees it: waiting for a decision, the decision submitting, then
 * resolved as decided, or expired by the runtime, before a decision or while one is on its way.
 */
const approvalInteraction = setup({
  types: {
    context: {} as { editable: boolean; decision: Decision | undefined },
    input: {} as { editable: boolean },
    events: {} as { type: 'user.approve' | 'user.reject' | 'user.modify' | 'runtime.resolve' | 'runtime.expire' },
  },
  guards: {
    isEditable: ({ context }) => context.editable,
    decided: ({ context }, params: { decision: Decision }) => context.decision === params.decision,
  },
  actions: {
    decide: assign((_, params: { decision: Decision }) => ({ decision: params.decision })),
  },
}).createMachine({
  id: 'approvalInteraction',
  context: ({ input }) => ({ editable: input.editable, decision: undefined }),
  initial: 'waiting',
  states: {
    waiting: {
      on: {
        'user.approve': { target: 'submitting', actions: { type: 'decide', params: { decision: 'approved' } } },
        'user.reject': { target: 'submitting', actions: { type: 'decide', params: { decision: 'rejected' } } },
        'user.modify': {
          guard: 'isEditable',
          target: 'submitting',
          actions: { type: 'decide', params: { decision: 'modified' } },
        },
        'runtime.expire': { target: 'expired' },
      },
    },
    submitting: {
      on: {
        'runtime.resolve': [
          { guard: { type: 'decided', params: { decision: 'approved' } }, target: 'approved' },
          { guard: { type: 'decided', params: { decision: 'rejected' } }, target: 'rejected' },
          { target: 'modified' },
        ],
        'runtime.expire': { target: 'expired' },
      },
    },
    approved: { type: 'final' },
    rejected: { type: 'final' },
    modified: { type: 'final' },
    expired: { type: 'final' },
  },
});

function resolveApproval(harness: ChatHarness, decision: Decision, more: { expectedVersion?: number; data?: unknown }) {
  return harness.chat.agentActions.resolveApproval({
    runId: harness.runId,
    approvalId: APPROVAL_ID,
    decision,
    ...more,
  });
}

const approvalModel: InteractionModel<{ editable: boolean }> = {
  name: 'approval',
  machine: approvalInteraction,
  variants: [
    { label: 'editable', input: { editable: true } },
    { label: 'editable: false', input: { editable: false } },
  ],
  backends: [
    {
      name: 'local provider',
      plays: (events) => !events.includes('runtime.expire'),
      start: ({ editable }) =>
        startLocal({
          steps: [
            {
              type: 'approval',
              description: 'Delete report.pdf?',
              data: REQUESTED,
              version: 2,
              editable,
              waitFor: 'command',
            },
            { type: 'stall' },
          ],
        }),
    },
    {
      name: 'remote runtime',
      plays: () => true,
      start: ({ editable }) =>
        startRemote(
          (events) => [
            events.emit('approval.requested', {
              approvalId: APPROVAL_ID,
              description: 'Delete report.pdf?',
              data: REQUESTED,
              version: 2,
              editable,
            }),
          ],
          async function* (harness, command, run, signal) {
            if (command.type !== 'approval.resolve') return;
            if ((await harness.decisions.next(signal)) === 'refuse') {
              throw new AgentCommandError(
                'invalid_command',
                `approval "${APPROVAL_ID}" expired before the decision came`,
              );
            }
            const { approvalId, decision, data } = command.payload;
            yield run.events.emit(
              'approval.resolved',
              data === undefined ? { approvalId, decision } : { approvalId, decision, data },
              { meta: { agentstate: { resolvedBy: 'command', commandId: command.commandId } } },
            );
          },
        ),
    },
  ],
  actions: {
    'user.approve': (harness) => resolveApproval(harness, 'approved', { expectedVersion: 2 }),
    'user.reject': (harness) => resolveApproval(harness, 'rejected', {}),
    'user.modify': (harness) => resolveApproval(harness, 'modified', { expectedVersion: 2, data: EDITED }),
    'user.approve_stale': (harness) => resolveApproval(harness, 'approved', { expectedVersion: 1 }),
  },
  runtime: {
    'runtime.resolve': async (harness) => {
      harness.decisions.decide('resolve');
      await harness.settled();
    },
    'runtime.expire': async (harness, from) => {
      harness.remoteRun?.push((events) => [
        events.emit('approval.resolved', { approvalId: APPROVAL_ID, decision: 'expired' }),
      ]);
      if (from.value !== 'submitting') return;
      // The decision on its way comes too late: the runtime refuses it.
      harness.decisions.decide('refuse');
      await harness.settled();
    },
  },
  expectState(harness, state) {
    const { editable, decision } = state.context as { editable: boolean; decision: Decision | undefined };
    const approval = harness.approval(APPROVAL_ID);
    switch (state.value) {
      case 'waiting':
        expect(approval).toMatchObject({ status: 'waiting', version: 2, editable, data: REQUESTED });
        expect(harness.run()?.status).toBe('running');
        harness.expectCommand('approval.resolve', APPROVAL_ID, 'none');
        return;
      case 'submitting':
        expect(approval?.status).toBe('waiting');
        harness.expectCommand('approval.resolve', APPROVAL_ID, 'submitting');
        expect(harness.command('approval.resolve', APPROVAL_ID)?.command.payload).toMatchObject({ decision });
        return;
      case 'expired':
        expect(approval).toMatchObject({ status: 'resolved', decision: 'expired' });
        expect(harness.run()?.status).toBe('running');
        if (decision === undefined) {
          harness.expectCommand('approval.resolve', APPROVAL_ID, 'none');
        } else {
          harness.expectCommand('approval.resolve', APPROVAL_ID, { failed: 'invalid_command' });
          harness.expectOutcome({ rejected: 'invalid_command' });
        }
        return;
      default: {
        expect(approval).toMatchObject({
          status: 'resolved',
          decision: state.value,
          meta: { agentstate: { resolvedBy: 'command', commandId: harness.action?.commandId } },
        });
        if (state.value === 'modified') expect(approval?.resolvedData).toEqual(EDITED);
        else expect(approval?.resolvedData).toBeUndefined();
        harness.expectOutcome('fulfilled');
        if (harness.backend === 'local provider' && state.value === 'rejected') {
          // A rejection stops the local script: the run completes, and the runtime forgets its commands.
          expect(harness.run()?.status).toBe('completed');
          expect(harness.chat.getSnapshot().commandStates).toEqual({});
        } else {
          expect(harness.run()?.status).toBe('running');
          harness.expectCommand('approval.resolve', APPROVAL_ID, 'succeeded');
        }
      }
    }
  },
  refusals(harness, state) {
    const all = ['user.approve', 'user.reject', 'user.modify', 'user.approve_stale'];
    if (harness.run()?.status !== 'running') return endedRunRefusals(harness, all);
    const { editable } = state.context as { editable: boolean };
    const stale = { action: 'user.approve_stale', reason: /approval "approval-0" is at version 2, not the expected 1/ };
    const notEditable = /approval "approval-0" may not be modified \(editable: false\)/;
    switch (state.value) {
      case 'waiting':
        return editable ? [stale] : [stale, { action: 'user.modify', reason: notEditable }];
      case 'submitting': {
        const busy = /a decision on approval "approval-0" is already submitting/;
        return [
          { action: 'user.approve', reason: busy },
          { action: 'user.reject', reason: busy },
          { action: 'user.modify', reason: editable ? busy : notEditable },
          stale,
        ];
      }
      default: {
        const reason = new RegExp(`approval "approval-0" is resolved \\(${harness.approval(APPROVAL_ID)?.decision}\\)`);
        return all.map((action) => ({ action, reason }));
      }
    }
  },
  label: (state) => {
    const { decision } = state.context as { decision: Decision | undefined };
    const decided = decision !== undefined && (state.value === 'submitting' || state.value === 'expired');
    return decided ? `${String(state.value)}(${decision})` : String(state.value);
  },
};

// --- Tool retry: failed -> retrying -> a new attempt completed | failed (retried again) ------

const MAX_ATTEMPTS = 3;
const ARGUMENTS = '{"q":"paris"}';
const RETRYABLE: AgentErrorInfo = { message: 'upstream timeout', code: 'timeout', retryable: true };
const FOR_GOOD: AgentErrorInfo = { message: 'bad query', code: 'invalid_query', retryable: false };
const RETRY_RESULT = { hits: 3 };

/** The id of a tool call's attempt, as the local runtime names retries. */
const attemptId = (attempt: number) => (attempt === 1 ? 'tool-0' : `tool-0-retry-${attempt}`);

/**
 * A failed tool call as its user sees it: a retryable failure can be retried; the retry
 * submits, and a new attempt arrives that completes, fails for good, or fails retryably and
 * can be retried again (up to the model's horizon of three attempts).
 */
const retryInteraction = setup({
  types: {
    context: {} as { attempt: number; firstRetryable: boolean },
    input: {} as { retryable: boolean },
    events: {} as {
      type: 'user.retry' | 'runtime.retry_completes' | 'runtime.retry_fails' | 'runtime.retry_fails_for_good';
    },
  },
  guards: {
    firstFailureRetryable: ({ context }) => context.firstRetryable,
    belowMaxAttempts: ({ context }) => context.attempt < MAX_ATTEMPTS,
  },
  actions: {
    nextAttempt: assign({ attempt: ({ context }) => context.attempt + 1 }),
  },
}).createMachine({
  id: 'retryInteraction',
  context: ({ input }) => ({ attempt: 1, firstRetryable: input.retryable }),
  initial: 'started',
  states: {
    started: { always: [{ guard: 'firstFailureRetryable', target: 'failed' }, { target: 'failed_for_good' }] },
    failed: { on: { 'user.retry': { guard: 'belowMaxAttempts', target: 'retrying' } } },
    retrying: {
      on: {
        'runtime.retry_completes': { target: 'completed', actions: 'nextAttempt' },
        'runtime.retry_fails': { target: 'failed', actions: 'nextAttempt' },
        'runtime.retry_fails_for_good': { target: 'failed_for_good', actions: 'nextAttempt' },
      },
    },
    completed: { type: 'final' },
    failed_for_good: { type: 'final' },
  },
});

const RETRY_OUTCOMES = ['runtime.retry_completes', 'runtime.retry_fails', 'runtime.retry_fails_for_good'];

/** The local tool step whose retries all do what the path's retries do. */
function retriedToolStep(retryable: boolean, events: readonly string[]): LocalAgentStep {
  const outcome = events.find((event) => RETRY_OUTCOMES.includes(event));
  return {
    type: 'tool',
    name: 'search',
    argumentDeltas: ['{"q":', '"paris"}'],
    error: retryable ? RETRYABLE : FOR_GOOD,
    ...(outcome === 'runtime.retry_completes' ? { retryResult: RETRY_RESULT } : {}),
    ...(outcome === 'runtime.retry_fails_for_good' ? { retryError: FOR_GOOD } : {}),
  };
}

function attemptOf(state: ModelState): number {
  return (state.context as { attempt: number }).attempt;
}

async function decideAndSettle(harness: ChatHarness, decision: string): Promise<void> {
  harness.decisions.decide(decision);
  await harness.settled();
}

const retryModel: InteractionModel<{ retryable: boolean }> = {
  name: 'tool retry',
  machine: retryInteraction,
  variants: [
    { label: 'retryable failure', input: { retryable: true } },
    { label: 'failure not retryable', input: { retryable: false } },
  ],
  backends: [
    {
      name: 'local provider',
      // Every retry of a local tool step yields the same: its `retryResult` or its `retryError`.
      plays: (events) => new Set(events.filter((event) => RETRY_OUTCOMES.includes(event))).size <= 1,
      start: ({ retryable }, events) => startLocal({ steps: [retriedToolStep(retryable, events), { type: 'stall' }] }),
    },
    {
      name: 'remote runtime',
      plays: () => true,
      start: ({ retryable }) =>
        startRemote(
          (events) => [
            events.emit('tool.requested', { toolCallId: 'tool-0', name: 'search' }),
            events.emit('tool.arguments_completed', { toolCallId: 'tool-0', arguments: ARGUMENTS }),
            events.emit('tool.running', { toolCallId: 'tool-0' }),
            events.emit('tool.failed', { toolCallId: 'tool-0', error: retryable ? RETRYABLE : FOR_GOOD }),
          ],
          async function* (harness, command, run, signal) {
            if (command.type !== 'tool.retry') return;
            const outcome = await harness.decisions.next(signal);
            const retryOf = command.payload.toolCallId;
            const attempt = (harness.toolCall(retryOf)?.attempt ?? 1) + 1;
            const toolCallId = attemptId(attempt);
            yield run.events.emit('tool.requested', { toolCallId, name: 'search', attempt, retryOf });
            yield run.events.emit('tool.arguments_completed', { toolCallId, arguments: ARGUMENTS });
            yield run.events.emit('tool.running', { toolCallId });
            yield outcome === 'runtime.retry_completes'
              ? run.events.emit('tool.completed', { toolCallId, result: RETRY_RESULT })
              : run.events.emit('tool.failed', {
                  toolCallId,
                  error: outcome === 'runtime.retry_fails' ? RETRYABLE : FOR_GOOD,
                });
          },
        ),
    },
  ],
  actions: {
    'user.retry': (harness, state) =>
      harness.chat.agentActions.retryTool({ runId: harness.runId, toolCallId: attemptId(attemptOf(state)) }),
    'user.submit_result': (harness, state) =>
      harness.chat.agentActions.submitToolResult({
        runId: harness.runId,
        toolCallId: attemptId(attemptOf(state)),
        result: { hits: 0 },
      }),
  },
  runtime: Object.fromEntries(
    RETRY_OUTCOMES.map((outcome) => [outcome, (harness: ChatHarness) => decideAndSettle(harness, outcome)]),
  ),
  expectState(harness, state) {
    const attempt = attemptOf(state);
    const latest = harness.toolCall(attemptId(attempt));
    expect(harness.run()?.status).toBe('running');
    expect(Object.keys(harness.state().toolCalls)).toHaveLength(attempt);
    // Earlier attempts stay as history: failed, retryably.
    for (let earlier = 1; earlier < attempt; earlier += 1) {
      expect(harness.toolCall(attemptId(earlier))).toMatchObject({ status: 'failed', error: RETRYABLE });
    }
    expect(latest).toMatchObject({ name: 'search', attempt, parsedArguments: { q: 'paris' } });
    if (attempt > 1) expect(latest?.retryOf).toBe(attemptId(attempt - 1));
    switch (state.value) {
      case 'failed':
        expect(latest).toMatchObject({ status: 'failed', error: RETRYABLE });
        break;
      case 'failed_for_good':
        expect(latest).toMatchObject({ status: 'failed', error: FOR_GOOD });
        break;
      case 'completed':
        expect(latest).toMatchObject({ status: 'completed', result: RETRY_RESULT });
        break;
      case 'retrying':
        expect(latest).toMatchObject({ status: 'failed', error: RETRYABLE });
        harness.expectCommand('tool.retry', attemptId(attempt), 'submitting');
        return;
    }
    harness.expectCommand('tool.retry', attemptId(attempt), 'none');
    if (attempt === 1) return;
    // The retry that made this attempt was taken.
    harness.expectCommand('tool.retry', attemptId(attempt - 1), 'succeeded');
    harness.expectOutcome('fulfilled');
  },
  refusals(_harness, state) {
    const id = attemptId(attemptOf(state));
    const failed = {
      action: 'user.submit_result',
      reason: new RegExp(`tool call "${id}" is failed: it takes no result`),
    };
    switch (state.value) {
      case 'failed':
        return [failed];
      case 'retrying':
        return [
          { action: 'user.retry', reason: new RegExp(`a retry of tool call "${id}" is already submitting`) },
          failed,
        ];
      case 'failed_for_good':
        return [
          { action: 'user.retry', reason: new RegExp(`tool call "${id}" failed without retryable: true`) },
          failed,
        ];
      default:
        return [
          { action: 'user.retry', reason: new RegExp(`tool call "${id}" is completed, not failed`) },
          { action: 'user.submit_result', reason: new RegExp(`tool call "${id}" is completed: it takes no result`) },
        ];
    }
  },
  label: (state) => `${String(state.value)}#${attemptOf(state)}`,
};

// --- Tool result: awaiting the application's result -> submitting -> completed | failed -----

const READ_RESULT = { text: 'A' };
const READ_ERROR = { message: 'no such file', code: 'ENOENT' };

/**
 * A tool the application executes: awaiting its result (the runtime may mark it running
 * meanwhile), the result or error submitting, then the call completed or failed.
 */
const resultInteraction = setup({
  types: {
    context: {} as { running: boolean; submitted: 'result' | 'error' | undefined },
    events: {} as { type: 'runtime.start_running' | 'user.submit_result' | 'user.submit_error' | 'runtime.take' },
  },
  guards: {
    submittedResult: ({ context }) => context.submitted === 'result',
  },
  actions: {
    markRunning: assign({ running: true }),
    submit: assign((_, params: { submitted: 'result' | 'error' }) => ({ submitted: params.submitted })),
  },
}).createMachine({
  id: 'resultInteraction',
  context: { running: false, submitted: undefined },
  initial: 'awaiting_execution',
  states: {
    awaiting_execution: {
      on: {
        'runtime.start_running': { target: 'running', actions: 'markRunning' },
        'user.submit_result': { target: 'submitting', actions: { type: 'submit', params: { submitted: 'result' } } },
        'user.submit_error': { target: 'submitting', actions: { type: 'submit', params: { submitted: 'error' } } },
      },
    },
    running: {
      on: {
        'user.submit_result': { target: 'submitting', actions: { type: 'submit', params: { submitted: 'result' } } },
        'user.submit_error': { target: 'submitting', actions: { type: 'submit', params: { submitted: 'error' } } },
      },
    },
    submitting: {
      on: { 'runtime.take': [{ guard: 'submittedResult', target: 'completed' }, { target: 'failed' }] },
    },
    completed: { type: 'final' },
    failed: { type: 'final' },
  },
});

function submitToolResult(harness: ChatHarness, outcome: { result: unknown } | { error: typeof READ_ERROR }) {
  return harness.chat.agentActions.submitToolResult({ runId: harness.runId, toolCallId: 'tool-0', ...outcome });
}

const resultModel: InteractionModel<undefined> = {
  name: 'tool result',
  machine: resultInteraction,
  variants: [{ label: 'client tool', input: undefined }],
  backends: [
    {
      name: 'local provider',
      plays: (events) => !events.includes('runtime.start_running'),
      start: () =>
        startLocal({
          steps: [
            { type: 'tool', name: 'read_file', argumentDeltas: ['{"path":', '"a.txt"}'], waitFor: 'command' },
            { type: 'stall' },
          ],
        }),
    },
    {
      name: 'remote runtime',
      plays: () => true,
      start: () =>
        startRemote(
          (events) => [
            events.emit('tool.requested', { toolCallId: 'tool-0', name: 'read_file' }),
            events.emit('tool.arguments_completed', { toolCallId: 'tool-0', arguments: '{"path":"a.txt"}' }),
          ],
          async function* (harness, command, run, signal) {
            if (command.type !== 'tool.submit_result') return;
            await harness.decisions.next(signal);
            const { toolCallId, result, error } = command.payload;
            const meta = { meta: { agentstate: { executedBy: 'client', commandId: command.commandId } } };
            yield error === undefined
              ? run.events.emit('tool.completed', { toolCallId, result }, meta)
              : run.events.emit('tool.failed', { toolCallId, error }, meta);
          },
        ),
    },
  ],
  actions: {
    'user.submit_result': (harness) => submitToolResult(harness, { result: READ_RESULT }),
    'user.submit_error': (harness) => submitToolResult(harness, { error: READ_ERROR }),
    'user.retry': (harness) => harness.chat.agentActions.retryTool({ runId: harness.runId, toolCallId: 'tool-0' }),
  },
  runtime: {
    'runtime.start_running': async (harness) => {
      harness.remoteRun?.push((events) => [events.emit('tool.running', { toolCallId: 'tool-0' })]);
    },
    'runtime.take': (harness) => decideAndSettle(harness, 'take'),
  },
  expectState(harness, state) {
    const { running, submitted } = state.context as { running: boolean; submitted: 'result' | 'error' | undefined };
    const toolCall = harness.toolCall('tool-0');
    expect(harness.run()?.status).toBe('running');
    expect(toolCall).toMatchObject({ name: 'read_file', parsedArguments: { path: 'a.txt' } });
    switch (state.value) {
      case 'awaiting_execution':
      case 'running':
        expect(toolCall?.status).toBe(state.value);
        harness.expectCommand('tool.submit_result', 'tool-0', 'none');
        return;
      case 'submitting':
        expect(toolCall?.status).toBe(running ? 'running' : 'awaiting_execution');
        harness.expectCommand('tool.submit_result', 'tool-0', 'submitting');
        expect(harness.command('tool.submit_result', 'tool-0')?.command.payload).toEqual(
          submitted === 'result'
            ? { toolCallId: 'tool-0', result: READ_RESULT }
            : { toolCallId: 'tool-0', error: READ_ERROR },
        );
        return;
      case 'completed':
        expect(toolCall).toMatchObject({
          status: 'completed',
          result: READ_RESULT,
          meta: { agentstate: { executedBy: 'client', commandId: harness.action?.commandId } },
        });
        break;
      case 'failed':
        expect(toolCall).toMatchObject({ status: 'failed', error: READ_ERROR });
        break;
    }
    harness.expectCommand('tool.submit_result', 'tool-0', 'succeeded');
    harness.expectOutcome('fulfilled');
  },
  refusals(_harness, state) {
    const { running } = state.context as { running: boolean };
    const notFailed = (status: string) => ({
      action: 'user.retry',
      reason: new RegExp(`tool call "tool-0" is ${status}, not failed`),
    });
    const submits = (reason: RegExp) => [
      { action: 'user.submit_result', reason },
      { action: 'user.submit_error', reason },
    ];
    switch (state.value) {
      case 'awaiting_execution':
      case 'running':
        return [notFailed(String(state.value))];
      case 'submitting':
        return [
          ...submits(/a result for tool call "tool-0" is already submitting/),
          notFailed(running ? 'running' : 'awaiting_execution'),
        ];
      case 'completed':
        return [...submits(/tool call "tool-0" is completed: it takes no result/), notFailed('completed')];
      default:
        return [
          ...submits(/tool call "tool-0" is failed: it takes no result/),
          { action: 'user.retry', reason: /tool call "tool-0" failed without retryable: true/ },
        ];
    }
  },
  label: (state) => {
    const { running, submitted } = state.context as { running: boolean; submitted: string | undefined };
    const hints = [running ? 'running' : '', submitted ?? ''].filter((hint) => hint !== '');
    return hints.length === 0 ? String(state.value) : `${String(state.value)}(${hints.join(', ')})`;
  },
};

// --- Run cancel: running -> cancel requested -> cancelled | timed out (-> cancel again) -----

const MAX_CANCELS = 2;
const CANCEL_REASON = 'user changed their mind';
const DEPLOY_APPROVAL = 'approval-1';

/**
 * A run as its user sees it while cancelling: the cancel is requested and the runtime
 * confirms it (the run is cancelled), or never does (after the timeout the run still runs,
 * and the user may cancel again, up to the model's horizon of two cancels).
 */
const cancelInteraction = setup({
  types: {
    context: {} as { cancels: number },
    events: {} as { type: 'user.cancel' | 'runtime.confirm' | 'runtime.ignore' },
  },
  guards: {
    mayCancelAgain: ({ context }) => context.cancels < MAX_CANCELS,
  },
  actions: {
    countCancel: assign({ cancels: ({ context }) => context.cancels + 1 }),
  },
}).createMachine({
  id: 'cancelInteraction',
  context: { cancels: 0 },
  initial: 'running',
  states: {
    running: { on: { 'user.cancel': { target: 'cancel_requested', actions: 'countCancel' } } },
    cancel_requested: { on: { 'runtime.confirm': { target: 'cancelled' }, 'runtime.ignore': { target: 'timed_out' } } },
    timed_out: {
      on: { 'user.cancel': { guard: 'mayCancelAgain', target: 'cancel_requested', actions: 'countCancel' } },
    },
    cancelled: { type: 'final' },
  },
});

function cancelsOf(state: ModelState): number {
  return (state.context as { cancels: number }).cancels;
}

const cancelModel: InteractionModel<undefined> = {
  name: 'run cancel',
  machine: cancelInteraction,
  variants: [{ label: 'run waiting on an approval', input: undefined }],
  backends: [
    {
      name: 'local provider',
      // The local runtime carries out every cancel it takes.
      plays: (events) => !events.includes('runtime.ignore'),
      start: () =>
        startLocal({
          steps: [
            { type: 'text', deltas: ['Deploying ', 'to prod.'] },
            { type: 'approval', description: 'Deploy to prod?', waitFor: 'command' },
          ],
        }),
    },
    {
      name: 'remote runtime',
      plays: () => true,
      start: () =>
        startRemote(
          (events) => [
            events.emit('message.started', { messageId: 'text-0', role: 'assistant' }),
            events.emit('message.delta', { messageId: 'text-0', delta: 'Deploying to prod.' }),
            events.emit('message.completed', { messageId: 'text-0' }),
            events.emit('approval.requested', { approvalId: DEPLOY_APPROVAL, description: 'Deploy to prod?' }),
          ],
          async function* (harness, command, run, signal) {
            if (command.type !== 'run.cancel') return;
            // Ignored, the cancel is acknowledged and nothing happens: the runtime's wait times out.
            if ((await harness.decisions.next(signal)) !== 'confirm') return;
            yield* run.events.close({ type: 'cancelled', reason: command.payload.reason ?? 'cancelled_by_user' });
          },
        ),
    },
  ],
  actions: {
    'user.cancel': (harness) => harness.chat.agentActions.cancelRun({ runId: harness.runId, reason: CANCEL_REASON }),
    'user.approve': (harness) =>
      harness.chat.agentActions.resolveApproval({
        runId: harness.runId,
        approvalId: DEPLOY_APPROVAL,
        decision: 'approved',
      }),
  },
  runtime: {
    'runtime.confirm': (harness) => decideAndSettle(harness, 'confirm'),
    'runtime.ignore': (harness) => decideAndSettle(harness, 'ignore'),
  },
  expectState(harness, state) {
    const { isRequesting, commandStates } = harness.chat.getSnapshot();
    // A cancel sent again after a timeout is the same command, with the same idempotency key.
    expect(new Set(harness.commandIds).size).toBe(Math.min(cancelsOf(state), 1));
    expect(new Set(harness.calls.map((call) => call.idempotencyKey)).size).toBeLessThanOrEqual(1);
    expect(harness.calls.every((call) => call.type === 'run.cancel')).toBe(true);
    if (state.value === 'cancelled') {
      expect(harness.run()).toMatchObject({ status: 'cancelled', reason: CANCEL_REASON });
      // Approvals cannot be cancelled: the one still waiting expires with its run.
      expect(harness.approval(DEPLOY_APPROVAL)).toMatchObject({ status: 'resolved', decision: 'expired' });
      expect(isRequesting).toBe(false);
      // The run has ended: the runtime forgets its commands.
      expect(commandStates).toEqual({});
      harness.expectOutcome('fulfilled');
      return;
    }
    expect(harness.run()?.status).toBe('running');
    expect(harness.approval(DEPLOY_APPROVAL)?.status).toBe('waiting');
    expect(isRequesting).toBe(true);
    switch (state.value) {
      case 'running':
        harness.expectCommand('run.cancel', undefined, 'none');
        return;
      case 'cancel_requested':
        harness.expectCommand('run.cancel', undefined, 'submitting');
        return;
      case 'timed_out': {
        harness.expectCommand('run.cancel', undefined, { failed: 'interrupted' });
        harness.expectOutcome({ rejected: 'interrupted' });
        const error = harness.command('run.cancel')?.error;
        expect(error?.retryable).toBe(true);
        expect(error?.message).toMatch(/did not confirm the cancel .* within 30 ms; the run stays as it is/);
      }
    }
  },
  refusals(harness, state) {
    switch (state.value) {
      case 'cancel_requested': {
        const reason = /is being cancelled: later commands are refused/;
        return [
          { action: 'user.cancel', reason },
          { action: 'user.approve', reason },
        ];
      }
      case 'cancelled':
        return endedRunRefusals(harness, ['user.cancel', 'user.approve']);
      default:
        return [];
    }
  },
  label: (state) => (state.value === 'running' ? 'running' : `${String(state.value)}#${cancelsOf(state)}`),
};

// --- The runner ---------------------------------------------------------------------------

interface ModelPath {
  state: ModelState;
  steps: Array<{ event: { type: string }; state: ModelState }>;
}

function pathsOf<Input>(model: InteractionModel<Input>): Array<{ label: string; input: Input; path: ModelPath }> {
  return model.variants.flatMap(({ label, input }) =>
    (getSimplePaths(model.machine, { input }) as unknown as ModelPath[]).map((path) => ({ label, input, path })),
  );
}

function eventsOf(path: ModelPath): string[] {
  return path.steps.map((step) => step.event.type).filter((type) => type !== 'xstate.init');
}

function describePath<Input>(model: InteractionModel<Input>, path: ModelPath): string {
  const [first, ...rest] = path.steps;
  const start = first === undefined ? '' : model.label(first.state);
  return [start, ...rest.map((step) => `--${step.event.type}--> ${model.label(step.state)}`)].join(' ');
}

/** Tries a user action the runtime must refuse: it rejects `invalid_command`, creates no command, changes nothing. */
function expectRefused(harness: ChatHarness, label: string, attempt: () => Promise<unknown>, reason: RegExp) {
  const before = harness.chat.getSnapshot();
  const pending = attempt();
  const after = harness.chat.getSnapshot();
  expect(after.agentState, label).toBe(before.agentState);
  expect(after.commandStates, label).toBe(before.commandStates);
  expect(after.latestCommandByAction, label).toBe(before.latestCommandByAction);
  return pending.then(
    () => expect.fail(`${label} was accepted`),
    (error: unknown) => {
      expect(AgentCommandError.isInstance(error), label).toBe(true);
      expect((error as AgentCommandError).code, label).toBe('invalid_command');
      expect((error as AgentCommandError).message, label).toMatch(reason);
    },
  );
}

/** What holds in every state: no protocol issue, and only the path's own commands reached the provider. */
function expectInvariants(harness: ChatHarness): void {
  expect(harness.state().issues).toEqual([]);
  for (const call of harness.calls) expect(harness.commandIds).toContain(call.commandId);
}

async function checkState<Input>(model: InteractionModel<Input>, harness: ChatHarness, state: ModelState) {
  model.expectState(harness, state);
  expectInvariants(harness);
  // All refusals are tried before any of them is awaited: a submitting state may not last.
  const probes = model.refusals(harness, state).map(({ action, reason }) => {
    const attempt = model.actions[action];
    if (attempt === undefined) throw new Error(`${model.name} has no action ${action}`);
    return expectRefused(harness, `${action} in ${model.label(state)}`, () => attempt(harness, state), reason);
  });
  await Promise.all(probes);
  expectInvariants(harness);
}

async function playPath<Input>(model: InteractionModel<Input>, harness: ChatHarness, path: ModelPath): Promise<void> {
  const [first, ...rest] = path.steps;
  if (first === undefined) throw new Error('a path starts with xstate.init');
  await eventually(() => model.expectState(harness, first.state));
  await checkState(model, harness, first.state);
  let from = first.state;
  for (const step of rest) {
    const type = step.event.type;
    const userAction = model.actions[type];
    if (userAction !== undefined) {
      // Checked at once: with the local provider, a submitting command is taken within a few ticks.
      harness.act(type, () => userAction(harness, from));
    } else {
      const runtimeStep = model.runtime[type];
      if (runtimeStep === undefined) throw new Error(`${model.name} cannot carry out ${type}`);
      await runtimeStep(harness, from);
      await eventually(() => model.expectState(harness, step.state));
    }
    await checkState(model, harness, step.state);
    from = step.state;
  }
}

function finalStates(machine: AnyStateMachine): string[] {
  return Object.values(machine.root.states)
    .filter((node) => node.type === 'final')
    .map((node) => node.key);
}

function describeModel<Input>(model: InteractionModel<Input>): void {
  describe(`model-based commands: ${model.name}`, () => {
    const plans = pathsOf(model);

    it('has paths that reach every final state and take every event, each played by a backend', () => {
      expect(plans.length).toBeGreaterThan(0);
      const reached = new Set(plans.map(({ path }) => path.state.value));
      for (const final of finalStates(model.machine)) {
        expect(reached, `${model.name}: final state ${final} is never reached`).toContain(final);
      }
      const taken = new Set(plans.flatMap(({ path }) => eventsOf(path)));
      for (const event of model.machine.root.events)
        expect(taken, `${model.name}: ${event} is never taken`).toContain(event);
      for (const { path } of plans) {
        expect(model.backends.some((backend) => backend.plays(eventsOf(path)))).toBe(true);
      }
      for (const backend of model.backends) {
        const played = plans.filter(({ path }) => backend.plays(eventsOf(path))).length;
        console.log(`model-based commands, ${model.name}: ${plans.length} paths, ${played} on the ${backend.name}`);
        expect(played).toBeGreaterThan(0);
      }
    });

    for (const backend of model.backends) {
      for (const { label, input, path } of plans) {
        if (!backend.plays(eventsOf(path))) continue;
        it(`${backend.name}, ${label}: ${describePath(model, path)}`, async () => {
          const harness = await backend.start(input, eventsOf(path));
          try {
            await playPath(model, harness, path);
          } finally {
            await harness.close();
          }
        });
      }
    }
  });
}

describeModel(approvalModel);
describeModel(retryModel);
describeModel(resultModel);
describeModel(cancelModel);

describe('commands withdrawn and sent again (found by the command paths)', () => {
  // A delivery withdrawn before the run took it fails `interrupted` (retryable: true); the same
  // command sent again (same key, as `resend` and the runtime's "same intent again" make it)
  // must reach the run, not the first delivery's cached rejection.
  it('the local provider takes a command sent again after the first was withdrawn before the run took it', async () => {
    let release: () => void = () => undefined;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    const provider = createLocalAgentProvider({
      // The run takes no command until `release`: the first cancel waits in its inbox.
      runtime: async function* (_input, signal, run) {
        yield { type: 'text.start', id: 'text-0' };
        await held;
        yield* runLocalAgentScript({ steps: [{ type: 'stall' }] }, signal, run.commands);
      },
    });
    const store = createAgentStore();
    const runController = new AbortController();
    const finished = runAgentProvider({
      provider,
      input: { prompt: 'Go' },
      sessionId: SESSION_ID,
      runId: 'run-1',
      signal: runController.signal,
      onEvent: store.dispatch,
    });
    try {
      await eventually(() => expect(store.getSnapshot().messages).not.toEqual({}));
      const commands = createAgentCommandFactory({ sessionId: SESSION_ID, runId: 'run-1' });
      const cancel = commands.create('run.cancel', { reason: CANCEL_REASON });
      const send = (command: AgentCommand, signal?: AbortSignal) =>
        runAgentCommand({
          provider,
          command,
          ...(signal === undefined ? {} : { signal }),
          initialSequence: store.getSnapshot().lastSequenceByRun['run-1'] ?? 0,
          onEvent: store.dispatch,
        });
      const commandController = new AbortController();
      const withdrawn = send(cancel, commandController.signal).catch((error: unknown) => error);
      await new Promise((resolve) => setTimeout(resolve, 1));
      commandController.abort();
      expect(await withdrawn).toMatchObject({ code: 'interrupted', retryable: true });
      release();
      await send(commands.resend(cancel));
      expect(await finished).toMatchObject({ status: 'cancelled' });
    } finally {
      release();
      runController.abort();
      await finished;
    }
  });
});
