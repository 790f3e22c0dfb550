// The demo server's host agent without a key: createAgent on the scripted model (streaming at
// once here), its tools run on the host. The weather turn looks two cities up on the server, writes what they say and
// asks to send the email; approved through /commands, the server sends it (edited, when the
// decision modified it) and the agent says so.
import { afterEach, describe, expect, it } from 'vitest';
import { createDemoHostAgent, type DemoOutbox } from '../examples/demo/hostAgent';
import type { AgentState } from '../machines/agentState';
import { createAgentCommandFactory } from '../protocol/createAgentCommandFactory';
import type { AgentEvent } from '../protocol/eventSchemas';
import { createAgentHost } from '../server/createAgentHost';
import { postJson, type ReadFrame, readEvents, serveHost } from './support/hostClient';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const WEATHER_PROMPT = 'What is the weather in Paris and Rome? Email it to the team.';

const eventsOf = (frames: ReadFrame[]) =>
  frames.filter((frame) => frame.event === undefined).map((frame) => JSON.parse(frame.data) as AgentEvent);

async function start() {
  const outbox: DemoOutbox = { sent: [] };
  const host = createAgentHost({
    providers: { assistant: createDemoHostAgent(undefined, { outbox, paced: false }) },
    onError: () => {},
  });
  const served = await serveHost(host.fetch);
  cleanups.push(async () => {
    await served.close();
    await host.close();
  });
  const session = `${served.url}/sessions/demo`;
  /** Reads the session from its start until `done` holds for its events. */
  const readUntil = (done: (events: AgentEvent[]) => boolean) =>
    readEvents(`${session}/events`, { stop: (frames) => done(eventsOf(frames)), timeoutMs: 30_000 });
  const state = async () => ((await (await fetch(`${session}/state`)).json()) as { state: AgentState }).state;
  const texts = (current: AgentState) =>
    Object.values(current.messages)
      .filter((message) => message.role === 'assistant')
      .map((message) => message.content);
  return { outbox, session, readUntil, state, texts };
}

const completedRuns = (events: AgentEvent[]) => events.filter((event) => event.type === 'run.completed').length;

describe("the demo host's agent on its scripted model", () => {
  it.each([
    ['approved', undefined, 'team@example.com'],
    ['modified', { to: 'ana@example.com', subject: 'Forecast' }, 'ana@example.com'],
  ] as const)('looks the weather up on the server, and sends the email once it is %s', async (decision, data, to) => {
    const demo = await start();
    const started = await postJson(`${demo.session}/runs`, {
      provider: 'assistant',
      input: { prompt: WEATHER_PROMPT },
    });
    const runId = started.body.runId as string;
    await demo.readUntil((events) => completedRuns(events) === 1);
    let state = await demo.state();
    expect(demo.texts(state)).toEqual([
      'Let me check the weather in both cities.',
      'Paris is 14 °C, Rome 21 °C. Sending the email now.',
    ]);
    expect(Object.values(state.toolCalls).map((call) => [call.name, call.status, call.result])).toEqual([
      ['get_weather', 'completed', { city: 'Paris', celsius: 14 }],
      ['get_weather', 'completed', { city: 'Rome', celsius: 21 }],
      ['send_email', 'awaiting_execution', undefined],
    ]);
    const [approval] = Object.values(state.approvals);
    expect(approval?.data).toEqual({
      to: 'team@example.com',
      subject: 'Forecast',
      body: 'Paris is 14 °C, Rome 21 °C.',
    });
    expect(demo.outbox.sent).toEqual([]);

    const command = createAgentCommandFactory({ sessionId: 'demo', runId }).create('approval.resolve', {
      approvalId: approval?.id as string,
      decision,
      ...(data === undefined ? {} : { data }),
    });
    expect((await postJson(`${demo.session}/commands`, command)).status).toBe(200);
    await demo.readUntil((events) => completedRuns(events) === 2);
    state = await demo.state();
    expect(demo.outbox.sent.map((email) => email.to)).toEqual([to]);
    expect(demo.texts(state).at(-1)).toBe(`Email sent to ${to}. Anything else?`);
    expect(state.issues).toEqual([]);
  });

  it('says the email was not sent when the approval is rejected', async () => {
    const demo = await start();
    const started = await postJson(`${demo.session}/runs`, {
      provider: 'assistant',
      input: { prompt: WEATHER_PROMPT },
    });
    const runId = started.body.runId as string;
    await demo.readUntil((events) => completedRuns(events) === 1);
    const [approval] = Object.values((await demo.state()).approvals);
    const command = createAgentCommandFactory({ sessionId: 'demo', runId }).create('approval.resolve', {
      approvalId: approval?.id as string,
      decision: 'rejected',
    });
    expect((await postJson(`${demo.session}/commands`, command)).status).toBe(200);
    await demo.readUntil((events) => completedRuns(events) === 2);
    expect(demo.texts(await demo.state()).at(-1)).toBe('The email was not sent. Anything else?');
    expect(demo.outbox.sent).toEqual([]);
  });

  it('answers the slow turn with one lookup on the server', async () => {
    const demo = await start();
    await postJson(`${demo.session}/runs`, {
      provider: 'assistant',
      input: { prompt: 'What is the weather in Oslo? Answer slowly.' },
    });
    await demo.readUntil((events) => completedRuns(events) === 1);
    const state = await demo.state();
    expect(demo.texts(state)).toEqual(['Looking it up, slowly.', 'Oslo is 9 °C.']);
    expect(Object.values(state.toolCalls).map((call) => [call.name, call.status])).toEqual([
      ['get_weather', 'completed'],
    ]);
  });
});
