// `npm start`: replays a scripted agent run through the store and prints the timeline.
// No network, no API key: the events are built here with the event factory.
import {
  type AgentEvent,
  createAgentCommandFactory,
  createAgentEventFactory,
  createAgentStore,
  selectAgentTimeline,
} from '../index';

const sessionId = 'demo-session';
const runId = 'run-1';
const events = createAgentEventFactory({ sessionId, runId });
const store = createAgentStore();

const script: AgentEvent[] = [
  events.create('run.started', { input: { prompt: 'What is the weather in Paris and Rome?' } }),
  events.create('message.started', {
    messageId: 'user-1',
    role: 'user',
    content: 'What is the weather in Paris and Rome?',
  }),
  events.create('message.completed', { messageId: 'user-1' }),
  events.create('reasoning.started', { reasoningId: 'think-1' }),
  ...['The user wants ', 'two cities; ', 'call the weather tool twice.'].map((delta) =>
    events.create('reasoning.delta', { reasoningId: 'think-1', delta }),
  ),
  events.create('reasoning.completed', { reasoningId: 'think-1' }),
  events.create('task.created', { taskId: 'plan', title: 'Look up two forecasts', progress: 0 }),
  ...['Paris', 'Rome'].flatMap((city, index) => {
    const toolCallId = `weather-${index}`;
    return [
      events.create('tool.requested', { toolCallId, name: 'get_weather' }),
      events.create('tool.arguments_delta', { toolCallId, delta: '{"city":' }),
      events.create('tool.arguments_delta', { toolCallId, delta: `"${city}"}` }),
      events.create('tool.arguments_completed', { toolCallId }),
      events.create('tool.running', { toolCallId }),
      index === 0
        ? events.create('tool.completed', { toolCallId, result: { city, celsius: 14 } })
        : events.create('tool.failed', { toolCallId, error: { message: 'upstream timeout', retryable: true } }),
      events.create('task.updated', { taskId: 'plan', progress: (index + 1) / 2 }),
    ];
  }),
  events.create('approval.requested', {
    approvalId: 'send-1',
    description: 'Email the forecast to the team?',
    risk: 'low',
  }),
  events.create('approval.resolved', { approvalId: 'send-1', decision: 'approved' }),
  events.create('task.completed', { taskId: 'plan' }),
  events.create('message.started', { messageId: 'answer-1', role: 'assistant' }),
  ...['Paris is 14 °C. ', 'Rome did not answer; ', 'you can retry that lookup.'].map((delta) =>
    events.create('message.delta', { messageId: 'answer-1', delta }),
  ),
  events.create('message.completed', { messageId: 'answer-1' }),
  events.create('run.completed', { usage: { inputTokens: 42, outputTokens: 31 } }),
];

const commands = createAgentCommandFactory({ sessionId, runId });
const retry = commands.create('tool.retry', { toolCallId: 'weather-1' });
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

for (const event of script) {
  store.dispatch(event);
  if (event.type === 'tool.failed') console.log(`  can retry weather-1 now? ${store.can(retry)}`);
  console.log(`#${String(event.sequence).padStart(2)} ${event.type}`);
  await sleep(25);
}

const state = store.getSnapshot();
console.log('\nTimeline');
for (const item of selectAgentTimeline(state, { runId, includeReasoning: true })) {
  const entity = item.entity;
  const detail =
    item.kind === 'message' || item.kind === 'reasoning'
      ? JSON.stringify('content' in entity ? entity.content : '')
      : item.kind === 'toolCall'
        ? `${item.entity.name}(${item.entity.arguments}) -> ${JSON.stringify(item.entity.result ?? item.entity.error?.message)}`
        : item.kind === 'approval'
          ? `${item.entity.description} -> ${item.entity.decision}`
          : item.kind === 'task'
            ? `${item.entity.title} (${Math.round((item.entity.progress ?? 0) * 100)}%)`
            : '';
  console.log(`  ${item.kind.padEnd(9)} ${entity.status.padEnd(18)} ${detail}`);
}
const run = state.runs[runId];
console.log(
  `\nrun ${runId}: ${run?.status}, usage ${JSON.stringify(run?.usage)}, protocol issues: ${state.issues.length}`,
);
store.destroy();
