// `npm start`: runs the embedded local runtime through the provider runner and the store,
// printing each event as it arrives and the timeline at the end. The run ends waiting for the
// user's approval, which the store's machines say can be given now. No network, no API key.
import {
  type AgentEvent,
  createAgentCommandFactory,
  createAgentStore,
  getAgentEntityKey,
  selectAgentTimeline,
} from '../index';
import { createLocalAgentProvider, runAgentProvider } from '../providers/index';

const provider = createLocalAgentProvider({
  script: {
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
      },
      // No decision: the approval waits for the user, and the run ends listing it as pending.
      { type: 'approval', description: 'Email the forecast to the team?', risk: 'low' },
      {
        type: 'artifact',
        mediaType: 'text/markdown',
        title: 'Forecast',
        versions: ['# Paris\n14 °C', '# Paris\n14 °C\n# Rome\n?'],
      },
      {
        type: 'text',
        deltas: ['Paris is 14 °C. ', 'Rome did not answer; ', 'you can retry that lookup. ', 'Shall I email the team?'],
      },
    ],
  },
});

const sessionId = 'demo-session';
const runId = 'run-1';
const store = createAgentStore();
const commands = createAgentCommandFactory({ sessionId, runId });
const retry = commands.create('tool.retry', { toolCallId: 'tool-3' });
const approve = commands.create('approval.resolve', { approvalId: 'approval-4', decision: 'approved' });

const result = await runAgentProvider({
  provider,
  input: { prompt: 'What is the weather in Paris and Rome?' },
  sessionId,
  runId,
  onEvent(event: AgentEvent) {
    store.dispatch(event);
    console.log(`#${String(event.sequence).padStart(2)} ${event.type}`);
    if (event.type === 'tool.failed')
      console.log(`    the user may retry ${event.payload.toolCallId}: ${store.can(retry)}`);
  },
});

const state = store.getSnapshot();
console.log('\nTimeline');
for (const item of selectAgentTimeline(state, { runId, includeReasoning: true })) {
  let detail = '';
  if (item.kind === 'message' || item.kind === 'reasoning') detail = JSON.stringify(item.entity.content ?? '');
  if (item.kind === 'toolCall') {
    const outcome = item.entity.result ?? item.entity.error?.message;
    detail = `${item.entity.name}(${item.entity.arguments}) -> ${JSON.stringify(outcome)}`;
  }
  if (item.kind === 'approval')
    detail = `${item.entity.description} -> ${item.entity.decision ?? 'waiting for the user'}`;
  if (item.kind === 'task') detail = `${item.entity.title} (${Math.round((item.entity.progress ?? 0) * 100)}%)`;
  if (item.kind === 'artifact') detail = `${item.entity.title} v${item.entity.version}`;
  console.log(`  ${item.kind.padEnd(9)} ${item.entity.status.padEnd(18)} ${detail}`);
}
const run = state.runs[runId];
const answer = state.messages[getAgentEntityKey(runId, 'text-6')];
console.log(
  `\nrun ${runId}: ${result.status}, usage ${JSON.stringify(run?.usage)}, protocol issues: ${state.issues.length}`,
);
console.log(`answer: ${answer?.content}`);
console.log(
  `waiting for the user: ${JSON.stringify(run?.pendingApprovalIds)}; the user may approve: ${store.can(approve)}`,
);
store.destroy();
