import { expect } from 'vitest';
import { assign, setup } from 'xstate';
import { AgentCommandError } from '../../providers/AgentCommandError';
import {
  type ChatHarness,
  decideAndSettle,
  endedRunRefusals,
  type InteractionModel,
  localBackend,
  remoteBackend,
} from '../support/interactionHarness';
import { describeModel } from '../support/interactionModelRunner';

// --- Approval: waiting -> submitting -> approved | rejected | modified, or expired ------------

type Decision = 'approved' | 'rejected' | 'modified';
/** How carrying out a decision can fail at the runtime: it throws, or it answers with an event that breaks the contract. */
type Failure = 'provider_error' | 'protocol_error';

const APPROVAL_ID = 'approval-0';
const REQUESTED = { path: 'report.pdf' };
const EDITED = { path: 'draft.pdf' };

/**
 * The approval as its user sees it: waiting for a decision, the decision submitting, then
 * resolved as decided, or expired by the runtime, before a decision or while one is on its way.
 * A decision whose execution fails (the provider throws, or answers with an event that breaks
 * the contract) leaves the approval waiting, the failure shown on its command, and the user
 * decides again (once per path, after an approval: the model's horizon).
 */
const approvalInteraction = setup({
  types: {
    context: {} as {
      editable: boolean;
      decision: Decision | undefined;
      submitted: boolean;
      failure: Failure | undefined;
    },
    input: {} as { editable: boolean },
    events: {} as {
      type:
        | 'user.approve'
        | 'user.reject'
        | 'user.modify'
        | 'runtime.resolve'
        | 'runtime.expire'
        | 'runtime.provider_error'
        | 'runtime.protocol_error'
        | 'user.stop';
    },
  },
  guards: {
    isEditable: ({ context }) => context.editable,
    decided: ({ context }, params: { decision: Decision }) => context.decision === params.decision,
    // One failure per path, of an approval: the model's horizon (a failure does not depend on the decision).
    firstFailure: ({ context }) => context.failure === undefined && context.decision === 'approved',
  },
  actions: {
    decide: assign((_, params: { decision: Decision }) => ({ decision: params.decision, submitted: true })),
    fail: assign((_, params: { failure: Failure }) => ({ failure: params.failure, submitted: false })),
  },
}).createMachine({
  id: 'approvalInteraction',
  context: ({ input }) => ({ editable: input.editable, decision: undefined, submitted: false, failure: undefined }),
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
        'user.stop': { target: 'stopped' },
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
        'user.stop': { target: 'stopped' },
        'runtime.provider_error': {
          guard: 'firstFailure',
          target: 'waiting',
          actions: { type: 'fail', params: { failure: 'provider_error' } },
        },
        'runtime.protocol_error': {
          guard: 'firstFailure',
          target: 'waiting',
          actions: { type: 'fail', params: { failure: 'protocol_error' } },
        },
      },
    },
    approved: { type: 'final' },
    rejected: { type: 'final' },
    modified: { type: 'final' },
    expired: { type: 'final' },
    stopped: { type: 'final' },
  },
});

/** A type, not an interface: the model runner hands contexts over as records. */
type ApprovalContext = {
  editable: boolean;
  decision: Decision | undefined;
  submitted: boolean;
  failure: Failure | undefined;
};

/** The runtime's acts a local script cannot play. */
const LOCAL_NEVER = ['runtime.expire', 'runtime.provider_error', 'runtime.protocol_error'];

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
    // A local script never expires an approval and always carries out a decision, at once: a
    // Stop cannot come while its decision is still on its way.
    localBackend(
      (events) =>
        !events.some(
          (event, index) =>
            LOCAL_NEVER.includes(event) || (event === 'user.stop' && events[index - 1]?.startsWith('user.') === true),
        ),
      ({ editable }) => ({
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
    ),
    remoteBackend(
      (events, { editable }) => [
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
        const outcome = await harness.decisions.next(signal);
        if (outcome === 'refuse') {
          throw new AgentCommandError('invalid_command', `approval "${APPROVAL_ID}" expired before the decision came`);
        }
        if (outcome === 'provider_error') throw new Error('the approvals service answered 502');
        if (outcome === 'protocol_error') {
          // An answer about another session: the runner refuses it before the store sees it.
          const resolved = run.events.emit('approval.resolved', { approvalId: APPROVAL_ID, decision: 'approved' });
          yield { ...resolved, sessionId: 'another-session' };
          return;
        }
        const { approvalId, decision, data } = command.payload;
        yield run.events.emit(
          'approval.resolved',
          data === undefined ? { approvalId, decision } : { approvalId, decision, data },
          { meta: { agentMachines: { resolvedBy: 'command', commandId: command.commandId } } },
        );
      },
    ),
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
    // The user's Stop (`abort()`): the run's stream and any command on its way are dropped.
    'user.stop': async (harness) => {
      harness.chat.abort();
      await harness.settled();
    },
    'runtime.provider_error': (harness) => decideAndSettle(harness, 'provider_error'),
    'runtime.protocol_error': (harness) => decideAndSettle(harness, 'protocol_error'),
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
    const { editable, decision, submitted, failure } = state.context as ApprovalContext;
    const approval = harness.approval(APPROVAL_ID);
    switch (state.value) {
      case 'waiting':
        expect(approval).toMatchObject({ status: 'waiting', version: 2, editable, data: REQUESTED });
        expect(approval?.decision).toBeUndefined();
        expect(harness.run()?.status).toBe('running');
        if (failure === undefined) {
          harness.expectCommand('approval.resolve', APPROVAL_ID, 'none');
          return;
        }
        // The failed decision is shown on its command; nothing of it reached AgentState.
        harness.expectCommand('approval.resolve', APPROVAL_ID, { failed: failure });
        harness.expectOutcome({ rejected: failure });
        expect(harness.command('approval.resolve', APPROVAL_ID)?.error?.message).toMatch(
          failure === 'provider_error' ? /answered 502/ : /another-session/,
        );
        return;
      case 'submitting':
        expect(approval?.status).toBe('waiting');
        harness.expectCommand('approval.resolve', APPROVAL_ID, 'submitting');
        expect(harness.command('approval.resolve', APPROVAL_ID)?.command.payload).toMatchObject({ decision });
        return;
      case 'stopped':
        // Nobody expired or answered it: it ends with its run.
        expect(approval).toMatchObject({ status: 'cancelled', reason: 'run_terminated' });
        expect(approval?.decision).toBeUndefined();
        expect(harness.run()?.status).toBe('cancelled');
        expect(harness.chat.getSnapshot().isRequesting).toBe(false);
        // The run has ended: the runtime forgets its commands; a decision on its way was interrupted.
        expect(harness.chat.getSnapshot().commandStates).toEqual({});
        if (submitted) harness.expectOutcome({ rejected: 'interrupted' });
        else if (failure !== undefined) harness.expectOutcome({ rejected: failure });
        else expect(harness.action).toBeUndefined();
        return;
      case 'expired':
        expect(approval).toMatchObject({ status: 'resolved', decision: 'expired' });
        expect(harness.run()?.status).toBe('running');
        if (!submitted) {
          if (failure === undefined) harness.expectCommand('approval.resolve', APPROVAL_ID, 'none');
          else harness.expectCommand('approval.resolve', APPROVAL_ID, { failed: failure });
        } else {
          harness.expectCommand('approval.resolve', APPROVAL_ID, { failed: 'invalid_command' });
          harness.expectOutcome({ rejected: 'invalid_command' });
        }
        return;
      default: {
        expect(approval).toMatchObject({
          status: 'resolved',
          decision: state.value,
          meta: { agentMachines: { resolvedBy: 'command', commandId: harness.action?.commandId } },
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
    if (harness.run()?.status !== 'running' || state.value === 'stopped') return endedRunRefusals(harness, all);
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
    const { decision, submitted, failure } = state.context as ApprovalContext;
    const decided = submitted && (state.value === 'submitting' || state.value === 'expired');
    const name = decided ? `${String(state.value)}(${decision})` : String(state.value);
    return failure === undefined ? name : `${name}[after ${failure}]`;
  },
};

describeModel(approvalModel);
