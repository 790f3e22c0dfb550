// Approvals of the local provider answered through the public runtime API: an approval a run
// ended waiting on is answered by the run that continues it (an approval ends the scripted
// run there, a rejection stops the script), and a `modified` decision's data reaches the
// tool call that runs after it.
import { describe, expect, it } from 'vitest';
import { CLIENT_TOOLS } from '../examples/demo/app/clientTools';
import { localAgentScript } from '../examples/demo/app/localAgentScript';
import type { AgentState } from '../machines/agentState';
import { selectPendingInput } from '../machines/selectors';
import { getAgentEntityKey } from '../protocol/getAgentEntityKey';
import { createLocalAgentProvider, type LocalAgentRuntime } from '../providers/local/createLocalAgentProvider';
import type { LocalAgentScript } from '../providers/local/localAgentChunks';
import { createXChatRuntime, type XChatRuntime } from '../runtime/createXChatRuntime';

/** Resolves once `ready` holds for the runtime's snapshot, checked at every change. */
function until(chat: XChatRuntime<unknown>, ready: (state: AgentState, requesting: boolean) => boolean): Promise<void> {
  return new Promise((resolve) => {
    const check = () => {
      const snapshot = chat.getSnapshot();
      return ready(snapshot.agentState, snapshot.isRequesting);
    };
    if (check()) {
      resolve();
      return;
    }
    const unsubscribe = chat.subscribe(() => {
      if (!check()) return;
      unsubscribe();
      resolve();
    });
  });
}

const runCount = (runs: number) => (state: AgentState, requesting: boolean) =>
  !requesting && Object.keys(state.runs).length >= runs;

const textsOf = (state: AgentState, runId: string | undefined) =>
  Object.values(state.messages)
    .filter((message) => message.runId === runId && message.role === 'assistant')
    .map((message) => message.content);

const otherRun = (state: AgentState, runId: string) => Object.values(state.runs).find((run) => run.id !== runId);

describe('local provider: an approval the run ended waiting on, answered through agentActions', () => {
  const script: LocalAgentScript = {
    steps: [
      { type: 'text', deltas: ['I drafted the email.'] },
      { type: 'approval', description: 'Send the email?', data: { to: 'ana@example.com' } },
      { type: 'text', deltas: ['Sent.'] },
    ],
  };

  it('ends the run at the approval; an approved decision travels with the continuation, which plays the rest of the script', async () => {
    const chat = createXChatRuntime({ provider: createLocalAgentProvider({ script }), sessionId: 'mail' });
    const first = await chat.request({ prompt: 'Email Ana' });
    const state = chat.getSnapshot().agentState;
    expect(state.runs[first.runId]?.pendingApprovalIds).toEqual(['approval-1']);
    expect(selectPendingInput(state, first.runId).approvals.map((approval) => approval.id)).toEqual(['approval-1']);
    expect(textsOf(state, first.runId)).toEqual(['I drafted the email.']);

    await chat.agentActions.resolveApproval({ runId: first.runId, approvalId: 'approval-1', decision: 'approved' });
    await until(chat, runCount(2));
    const after = chat.getSnapshot().agentState;
    const resolved = after.approvals[getAgentEntityKey(first.runId, 'approval-1')];
    expect([resolved?.status, resolved?.decision, resolved?.meta]).toEqual([
      'resolved',
      'approved',
      { agentMachines: { resolvedBy: 'continuation' } },
    ]);
    const continuing = otherRun(after, first.runId);
    expect([continuing?.status, continuing?.continuesRunId]).toEqual(['completed', first.runId]);
    expect(textsOf(after, continuing?.id)).toEqual(['Sent.']);
    expect(Object.keys(after.approvals)).toHaveLength(1);
    expect(after.issues).toEqual([]);
    expect(chat.getSnapshot().error).toBeUndefined();
  });

  it('stops the script on a rejection: the continuation resolves the approval rejected, cancels the tool call it is about, plays nothing more', async () => {
    const guarded: LocalAgentScript = {
      steps: [
        { type: 'tool', name: 'send_email', argumentDeltas: ['{"to":"ana@example.com"}'] },
        { type: 'approval', description: 'Send the email?', toolCallId: 'tool-0' },
        { type: 'text', deltas: ['Sent.'] },
      ],
    };
    const chat = createXChatRuntime({ provider: createLocalAgentProvider({ script: guarded }), sessionId: 'no-mail' });
    const first = await chat.request({ prompt: 'Email Ana' });
    expect(chat.getSnapshot().agentState.runs[first.runId]).toMatchObject({
      pendingToolCallIds: ['tool-0'],
      pendingApprovalIds: ['approval-1'],
    });
    await chat.agentActions.resolveApproval({ runId: first.runId, approvalId: 'approval-1', decision: 'rejected' });
    await until(chat, runCount(2));
    const after = chat.getSnapshot().agentState;
    const resolved = after.approvals[getAgentEntityKey(first.runId, 'approval-1')];
    expect([resolved?.status, resolved?.decision]).toEqual(['resolved', 'rejected']);
    const toolCall = after.toolCalls[getAgentEntityKey(first.runId, 'tool-0')];
    expect([toolCall?.status, toolCall?.reason]).toEqual(['cancelled', 'approval_rejected']);
    const continuing = otherRun(after, first.runId);
    expect(continuing?.status).toBe('completed');
    expect(textsOf(after, continuing?.id)).toEqual([]);
    expect(after.issues).toEqual([]);
  });

  it('takes an answer sent while the run still runs in the run itself', async () => {
    const twoQuestions: LocalAgentScript = {
      delayMs: 5,
      steps: [
        { type: 'approval', description: 'Email the team?' },
        { type: 'approval', description: 'Post on the blog?' },
        { type: 'text', deltas: ['Done.'] },
      ],
    };
    const chat = createXChatRuntime({
      provider: createLocalAgentProvider({ script: twoQuestions }),
      sessionId: 'early',
    });
    const request = chat.request({ prompt: 'Tell everyone' });
    // The first approval is waiting while the run is still running: answer it at once.
    await until(chat, (state) => Object.values(state.approvals).some((approval) => approval.id === 'approval-0'));
    const [run] = Object.values(chat.getSnapshot().agentState.runs);
    expect(run?.status).toBe('running');
    const runId = run?.id as string;
    await chat.agentActions.resolveApproval({ runId, approvalId: 'approval-0', decision: 'approved' });
    await request;
    const state = chat.getSnapshot().agentState;
    const early = state.approvals[getAgentEntityKey(runId, 'approval-0')];
    expect([
      early?.status,
      early?.decision,
      (early?.meta?.agentMachines as { resolvedBy?: string })?.resolvedBy,
    ]).toEqual(['resolved', 'approved', 'command']);
    expect(state.runs[runId]?.pendingApprovalIds).toEqual(['approval-1']);
    expect(state.issues).toEqual([]);
  });

  it('carries an answer the run could not take before it ended with the continuation instead of failing it', async () => {
    // A runtime that takes no commands: once the answer is handed to the run, the run ends
    // without taking it, waiting on that approval.
    const runtime: LocalAgentRuntime = async function* (_input, signal, run) {
      if (run.turn.continuation !== undefined) {
        yield { type: 'done' };
        return;
      }
      yield { type: 'approval.request', id: 'approval-0', description: 'Deploy?' };
      await run.commands.waitForDelivery(signal);
      yield { type: 'done', pendingApprovalIds: ['approval-0'] };
    };
    const chat = createXChatRuntime({ provider: createLocalAgentProvider({ runtime }), sessionId: 'late' });
    const request = chat.request({ prompt: 'Deploy' });
    await until(chat, (state) => Object.keys(state.approvals).length === 1);
    const runId = Object.keys(chat.getSnapshot().agentState.runs)[0] as string;
    await chat.agentActions.resolveApproval({ runId, approvalId: 'approval-0', decision: 'approved' });
    await request;
    await until(chat, runCount(2));
    const state = chat.getSnapshot().agentState;
    const approval = state.approvals[getAgentEntityKey(runId, 'approval-0')];
    expect([approval?.status, approval?.decision, approval?.meta]).toEqual([
      'resolved',
      'approved',
      { agentMachines: { resolvedBy: 'continuation' } },
    ]);
    expect(chat.getSnapshot().error).toBeUndefined();
  });
});

describe("local provider: a modified decision's data reaches the tool call that runs", () => {
  const script: LocalAgentScript = {
    steps: [
      {
        type: 'approval',
        description: 'Send the email?',
        data: { to: 'team@example.com', subject: 'Forecast' },
        waitFor: 'command',
      },
      {
        type: 'tool',
        name: 'send_email',
        argumentDeltas: ['{"to":"team@example.com"}'],
        argumentsFrom: 'approval-0',
        result: { sent: true },
      },
    ],
  };

  it('answered in the run: the tool call after it is made with the edited data', async () => {
    const chat = createXChatRuntime({ provider: createLocalAgentProvider({ script }), sessionId: 'edit' });
    const request = chat.request({ prompt: 'Email the forecast' });
    await until(chat, (state) => Object.keys(state.approvals).length === 1);
    const runId = Object.keys(chat.getSnapshot().agentState.runs)[0] as string;
    const edited = { to: 'ana@example.com', subject: 'Forecast' };
    await chat.agentActions.resolveApproval({ runId, approvalId: 'approval-0', decision: 'modified', data: edited });
    await request;
    const state = chat.getSnapshot().agentState;
    expect(state.approvals[getAgentEntityKey(runId, 'approval-0')]).toMatchObject({
      decision: 'modified',
      resolvedData: edited,
    });
    const toolCall = state.toolCalls[getAgentEntityKey(runId, 'tool-1')];
    expect([toolCall?.status, toolCall?.parsedArguments]).toEqual(['completed', edited]);
  });

  it('approved as asked: the tool call is made with the data the approval asked about', async () => {
    const chat = createXChatRuntime({ provider: createLocalAgentProvider({ script }), sessionId: 'as-asked' });
    const request = chat.request({ prompt: 'Email the forecast' });
    await until(chat, (state) => Object.keys(state.approvals).length === 1);
    const runId = Object.keys(chat.getSnapshot().agentState.runs)[0] as string;
    await chat.agentActions.resolveApproval({ runId, approvalId: 'approval-0', decision: 'approved' });
    await request;
    const toolCall = chat.getSnapshot().agentState.toolCalls[getAgentEntityKey(runId, 'tool-1')];
    expect(toolCall?.parsedArguments).toEqual({ to: 'team@example.com', subject: 'Forecast' });
  });

  it('answered with the continuation: the continuing run makes the tool call with the edited data', async () => {
    const waiting: LocalAgentScript = {
      steps: [{ ...script.steps[0], waitFor: 'continuation' } as LocalAgentScript['steps'][number], script.steps[1]],
    } as LocalAgentScript;
    const chat = createXChatRuntime({ provider: createLocalAgentProvider({ script: waiting }), sessionId: 'later' });
    const first = await chat.request({ prompt: 'Email the forecast' });
    const edited = { to: 'ana@example.com', subject: 'Forecast' };
    await chat.agentActions.resolveApproval({
      runId: first.runId,
      approvalId: 'approval-0',
      decision: 'modified',
      data: edited,
    });
    await until(chat, runCount(2));
    const state = chat.getSnapshot().agentState;
    const continuing = otherRun(state, first.runId);
    const toolCall = state.toolCalls[getAgentEntityKey(continuing?.id as string, 'tool-1')];
    expect([toolCall?.name, toolCall?.status, toolCall?.parsedArguments]).toEqual(['send_email', 'completed', edited]);
    expect(state.issues).toEqual([]);
  });
});

describe('the demo: Edit and approve sends the email to the edited address', () => {
  it("the page's send_email runs with the address of the modified decision", async () => {
    const chat = createXChatRuntime({
      provider: createLocalAgentProvider({ script: localAgentScript }),
      sessionId: 'demo',
    });
    const request = chat.request({ prompt: 'Weather in Paris and Rome, then email the team' });
    // The run waits for the user's Retry of the failed lookup, then for the email's approval.
    await until(chat, (state) =>
      Object.values(state.toolCalls).some((call) => call.status === 'failed' && call.id === 'tool-4'),
    );
    const runId = Object.keys(chat.getSnapshot().agentState.runs)[0] as string;
    await chat.agentActions.retryTool({ runId, toolCallId: 'tool-4' });
    await until(chat, (state) => Object.values(state.approvals).some((approval) => approval.status === 'waiting'));
    const [approval] = Object.values(chat.getSnapshot().agentState.approvals);
    const edited = { ...(approval?.data as Record<string, unknown>), to: 'ana@example.com' };
    await chat.agentActions.resolveApproval({
      runId,
      approvalId: approval?.id as string,
      decision: 'modified',
      data: edited,
    });
    await request;
    // What the page does (useClientTools): runs send_email with the call's arguments.
    const [call] = selectPendingInput(chat.getSnapshot().agentState, runId).toolCalls;
    expect([call?.name, call?.parsedArguments]).toEqual(['send_email', edited]);
    const result = CLIENT_TOOLS.send_email?.(call?.parsedArguments as Record<string, unknown>);
    expect(result).toEqual({ sent: true, to: 'ana@example.com' });
    await chat.agentActions.submitToolResult({ runId, toolCallId: call?.id as string, result });
    await until(chat, runCount(2));
    const state = chat.getSnapshot().agentState;
    expect(textsOf(state, otherRun(state, runId)?.id).join('')).toContain('ana@example.com');
  });
});
