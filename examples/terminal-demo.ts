// `npm run demo:terminal`: a scripted agent on the embedded local runtime, driven through the interaction
// runtime as a user would drive it: the demo "user" retries the tool that failed, approves the
// email in the run, and runs a client-side tool, after which the conversation continues by
// itself. Every action goes through `agentActions`, checked by the machines. No network, no key.
import { selectAgentTimeline, selectPendingInput } from '../index';
import { createLocalAgentProvider, type LocalAgentScript } from '../providers/index';
import { createXChatRuntime } from '../runtime/index';

const firstTurn: LocalAgentScript = {
  delayMs: 15,
  usage: { inputTokens: 42, outputTokens: 31 },
  steps: [
    { type: 'reasoning', deltas: ['The user wants ', 'two cities; ', 'call the weather tool twice.'] },
    { type: 'task', title: 'Look up two forecasts', progress: [0.5, 1] },
    {
      type: 'tool',
      name: 'get_weather',
      argumentDeltas: ['{"city":', '"Paris"}'],
      result: { city: 'Paris', celsius: 14 },
    },
    {
      type: 'tool',
      name: 'get_weather',
      argumentDeltas: ['{"city":', '"Rome"}'],
      error: { message: 'upstream timeout', code: 'timeout', retryable: true },
      retryResult: { city: 'Rome', celsius: 21 },
    },
    // The run waits here for the user's next command: the retry.
    { type: 'await_command', timeoutMs: 5_000 },
    { type: 'approval', description: 'Email the forecast to the team?', risk: 'low', waitFor: 'command' },
    {
      type: 'artifact',
      mediaType: 'text/markdown',
      title: 'Forecast',
      versions: ['# Paris\n14 °C', '# Paris\n14 °C\n# Rome\n21 °C'],
    },
    { type: 'text', deltas: ['Paris is 14 °C, ', 'Rome 21 °C. ', 'Sending the email now.'] },
    // A tool the application runs: the run ends waiting for its result.
    { type: 'tool', name: 'send_email', argumentDeltas: ['{"to":"team@example.com"}'] },
  ],
};

const provider = createLocalAgentProvider({
  script: (_input, turn) =>
    turn.continuation === undefined
      ? firstTurn
      : { delayMs: 15, steps: [{ type: 'text', deltas: [`Done: ${JSON.stringify(turn.toolResults[0]?.result)}.`] }] },
});

const chat = createXChatRuntime({ provider, sessionId: 'demo-session' });
const acted = new Set<string>();
const act = (key: string, what: string, action: () => Promise<unknown>) => {
  if (acted.has(key)) return;
  acted.add(key);
  console.log(`user: ${what}`);
  action().then(
    () => console.log(`      ${what}: succeeded`),
    (error: unknown) => console.log(`      ${what}: ${String(error)}`),
  );
};

// What a UI would do on each change: offer the actions the state allows.
chat.subscribe(() => {
  const { agentState } = chat.getSnapshot();
  for (const call of Object.values(agentState.toolCalls)) {
    if (call.status === 'failed' && call.error?.retryable && call.attempt === 1) {
      act(call.key, `retry ${call.name} ${call.arguments}`, () =>
        chat.agentActions.retryTool({ runId: call.runId, toolCallId: call.id }),
      );
    }
  }
  for (const approval of Object.values(agentState.approvals)) {
    if (approval.status === 'waiting') {
      act(approval.key, `approve "${approval.description}"`, () =>
        chat.agentActions.resolveApproval({ runId: approval.runId, approvalId: approval.id, decision: 'approved' }),
      );
    }
  }
  for (const run of Object.values(agentState.runs)) {
    for (const call of selectPendingInput(agentState, run.id).toolCalls) {
      act(call.key, `run ${call.name} on the client`, () =>
        chat.agentActions.submitToolResult({ runId: run.id, toolCallId: call.id, result: { sent: true } }),
      );
    }
  }
});

const first = await chat.request({ prompt: 'What is the weather in Paris and Rome? Email it to the team.' });
// The continuation starts once the client tool's result is in; wait for it to end.
while (chat.getSnapshot().isRequesting || Object.keys(chat.getSnapshot().agentState.runs).length < 2) {
  await new Promise((resolve) => setTimeout(resolve, 20));
}

const state = chat.getSnapshot().agentState;
for (const run of Object.values(state.runs)) {
  const continues = run.continuesRunId === undefined ? '' : ` (continues ${run.continuesRunId.slice(0, 8)})`;
  console.log(`\nRun ${run.id.slice(0, 8)}${continues}: ${run.status}`);
  for (const item of selectAgentTimeline(state, { runId: run.id, includeReasoning: true })) {
    let detail = '';
    if (item.kind === 'message' || item.kind === 'reasoning') detail = JSON.stringify(item.entity.content ?? '');
    if (item.kind === 'toolCall') {
      const outcome = item.entity.result ?? item.entity.error?.message;
      detail = `${item.entity.name}(${item.entity.arguments}) attempt ${item.entity.attempt} -> ${JSON.stringify(outcome)}`;
    }
    if (item.kind === 'approval') detail = `${item.entity.description} -> ${item.entity.decision ?? 'waiting'}`;
    if (item.kind === 'task') detail = `${item.entity.title} (${Math.round((item.entity.progress ?? 0) * 100)}%)`;
    if (item.kind === 'artifact') detail = `${item.entity.title} v${item.entity.version}`;
    console.log(`  ${item.kind.padEnd(9)} ${item.entity.status.padEnd(18)} ${detail}`);
  }
}
console.log(
  `\nfirst run ${first.status}, usage ${JSON.stringify(state.runs[first.runId]?.usage)}; protocol issues: ${state.issues.length}`,
);
