import { describe, expect, it } from 'vitest';
import { assign, setup } from 'xstate';
import { createAgentStore } from '../../machines/createAgentStore';
import type { AgentCommand } from '../../protocol/commandSchemas';
import { createAgentCommandFactory } from '../../protocol/createAgentCommandFactory';
import { createLocalAgentProvider } from '../../providers/local/createLocalAgentProvider';
import { runLocalAgentScript } from '../../providers/local/runLocalAgentScript';
import { runAgentCommand } from '../../providers/runAgentCommand';
import { runAgentProvider } from '../../providers/runAgentProvider';
import {
  decideAndSettle,
  endedRunRefusals,
  eventually,
  type InteractionModel,
  localBackend,
  type ModelState,
  remoteBackend,
  SESSION_ID,
} from '../support/interactionHarness';
import { describeModel } from '../support/interactionModelRunner';

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
    // The local runtime carries out every cancel it takes.
    localBackend(
      (events) => !events.includes('runtime.ignore'),
      () => ({
        steps: [
          { type: 'text', deltas: ['Deploying ', 'to prod.'] },
          { type: 'approval', description: 'Deploy to prod?', waitFor: 'command' },
        ],
      }),
    ),
    remoteBackend(
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
      // The approval still waiting ends with its run, cancelled (nobody expired it).
      expect(harness.approval(DEPLOY_APPROVAL)).toMatchObject({ status: 'cancelled', reason: 'run_terminated' });
      expect(harness.approval(DEPLOY_APPROVAL)?.decision).toBeUndefined();
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
