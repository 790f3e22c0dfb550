// An agent's run waiting for an approval survives its host's process: killed (SIGKILL) while
// the run waits, another process on the same Redis takes the approval through its /commands,
// continues the loop from the log (the history is the session's AgentState, which that process
// never saw being made), runs the approved tool once, and a client following the session sees
// the continuation. The model is a loopback OpenAI-compatible server in this process; the tool
// posts each execution to a loopback server here, which counts them.
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { AgentState } from '../machines/agentState';
import { createAgentCommandFactory } from '../protocol/createAgentCommandFactory';
import type { AgentEvent } from '../protocol/eventSchemas';
import { getAgentEntityKey } from '../protocol/getAgentEntityKey';
import { startAgentHostProcess } from './support/agentHostProcesses';
import { postJson, type ReadFrame, readEvents } from './support/hostClient';
import type { HostProcess } from './support/hostProcesses';
import { startHttpServer, type TestServer } from './support/httpServer';
import { type ModelServer, startModelServer } from './support/modelServer';
import { describeWithRedis, startRedisServer, type TestRedisServer } from './support/redisServer';

const eventsOf = (frames: ReadFrame[]) =>
  frames.filter((frame) => frame.event === undefined).map((frame) => JSON.parse(frame.data) as AgentEvent);
const isEnd = (event: AgentEvent) => /^run\.(completed|failed|cancelled)$/.test(event.type);
const ended = (frames: ReadFrame[]) => eventsOf(frames).some(isEnd);

/** Stops once the run that continues `runId` has ended. */
const continued = (runId: string) => (frames: ReadFrame[]) => {
  const events = eventsOf(frames);
  const continuing = events.find((event) => event.type === 'run.started' && event.payload.continuesRunId === runId);
  return continuing !== undefined && events.some((event) => event.runId === continuing.runId && isEnd(event));
};

describeWithRedis('an agent waiting for an approval, across host processes', () => {
  let redis: TestRedisServer;
  let model: ModelServer;
  let tools: TestServer;
  const processes: HostProcess[] = [];

  /** The `deploy` executions the tool server saw: the instance, run and call of each. */
  const executions = () =>
    tools.requests.map((request) => JSON.parse(request.body) as { instanceId: string; toolCallId: string });

  const start = async (instanceId: string) => {
    const host = await startAgentHostProcess({
      redisUrl: redis.url,
      keyPrefix: 'agent-restart:',
      instanceId,
      modelURL: model.baseURL,
      toolsURL: tools.url,
    });
    processes.push(host);
    return host;
  };

  /** Starts a turn on `host` and resolves once its run ended, waiting for the approval of `deploy`. */
  const waitingRun = async (host: HostProcess, sessionId: string) => {
    const started = await postJson(`${host.url}/sessions/${sessionId}/runs`, {
      provider: 'assistant',
      input: { prompt: 'Deploy the api' },
    });
    const runId = started.body.runId as string;
    await readEvents(`${host.url}/sessions/${sessionId}/events?runId=${runId}`, { stop: ended, timeoutMs: 30_000 });
    const { state } = (await (await fetch(`${host.url}/sessions/${sessionId}/state`)).json()) as { state: AgentState };
    expect(state.runs[runId]).toMatchObject({ status: 'completed', pendingApprovalIds: ['approval-call_deploy'] });
    return runId;
  };

  beforeAll(async () => {
    redis = await startRedisServer();
    // A model that asks to deploy, then says what the deployment answered.
    model = await startModelServer('openai', (request) => {
      const [result] = request.toolResults;
      if (result === undefined) {
        return {
          text: 'Deploying.',
          toolCalls: [{ id: 'call_deploy', name: 'deploy', arguments: { service: 'api' } }],
        };
      }
      return { text: `Deployed: ${result.content}` };
    });
    tools = await startHttpServer((request, response) => {
      const { input } = JSON.parse(request.body) as { input: { service: string } };
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end(JSON.stringify({ deployed: input.service }));
    });
  }, 30_000);

  afterAll(async () => {
    await Promise.all(processes.map((host) => host.stop()));
    await Promise.all([model?.close(), tools?.close()]);
    await redis?.stop();
  });

  it('SIGKILL while the run waits; the approval through another process continues it from the log, the tool runs once', async () => {
    const sessionId = 'restart';
    const a = await start('a');
    const runId = await waitingRun(a, sessionId);
    await a.kill();
    expect(a.child.signalCode).toBe('SIGKILL');

    const b = await start('b');
    // A client following the session through B, from its start.
    const following = readEvents(`${b.url}/sessions/${sessionId}/events`, {
      stop: continued(runId),
      timeoutMs: 30_000,
    });
    const approve = createAgentCommandFactory({ sessionId, runId }).create('approval.resolve', {
      approvalId: 'approval-call_deploy',
      decision: 'approved',
    });
    const answer = await postJson(`${b.url}/sessions/${sessionId}/commands`, approve);
    expect([answer.status, answer.body]).toEqual([200, { status: 'accepted', events: [] }]);
    const { events } = await following;

    const continuing = events.find((event) => event.type === 'run.started' && event.runId !== runId);
    expect(continuing?.payload).toMatchObject({ continuesRunId: runId });
    expect(continuing?.meta).toEqual({ agentMachines: { hostProvider: 'assistant' } });
    expect(events.filter((event) => event.runId === continuing?.runId).map((event) => event.type)).toEqual([
      'run.started',
      'approval.resolved',
      'tool.running',
      'tool.completed',
      'message.started',
      'message.delta',
      'message.delta',
      'message.completed',
      'run.completed',
    ]);
    // Executed once, by B, for the call the run made on A.
    expect(executions().map(({ instanceId, toolCallId }) => [instanceId, toolCallId])).toEqual([['b', 'call_deploy']]);
    // B's model step read the conversation from the log: the prompt, A's step and the tool's result.
    const [, second] = model.modelRequests();
    expect(second?.messages.map((message) => message.role)).toEqual(['user', 'assistant', 'tool']);
    expect(second?.messages[0]?.content).toBe('Deploy the api');
    expect(second?.toolResults).toEqual([{ toolCallId: 'call_deploy', content: '{"deployed":"api"}', isError: false }]);

    const { state } = (await (await fetch(`${b.url}/sessions/${sessionId}/state`)).json()) as { state: AgentState };
    expect(state.toolCalls[getAgentEntityKey(runId, 'call_deploy')]).toMatchObject({
      status: 'completed',
      result: { deployed: 'api' },
    });
    expect(Object.values(state.messages).at(-1)?.content).toBe('Deployed: {"deployed":"api"}');
    expect(state.issues).toEqual([]);

    // The same command again gets the same outcome; another approval of the call is refused.
    expect(await postJson(`${b.url}/sessions/${sessionId}/commands`, approve)).toEqual(answer);
    const again = createAgentCommandFactory({ sessionId, runId }).create('approval.resolve', {
      approvalId: 'approval-call_deploy',
      decision: 'approved',
    });
    const refused = await postJson(`${b.url}/sessions/${sessionId}/commands`, again);
    expect([refused.status, (refused.body.error as { code: string }).code]).toEqual([409, 'run_ended']);
    expect(executions()).toHaveLength(1);
  }, 120_000);

  it('one approval sent to two processes at once, with one key and with two, runs the tool once', async () => {
    const sessionId = 'at-once';
    const [b] = processes.slice(-1) as [HostProcess];
    const c = await start('c');
    const before = executions().length;
    const runId = await waitingRun(c, sessionId);
    const following = readEvents(`${c.url}/sessions/${sessionId}/events`, {
      stop: continued(runId),
      timeoutMs: 30_000,
    });
    const commands = createAgentCommandFactory({ sessionId, runId });
    const approve = commands.create('approval.resolve', { approvalId: 'approval-call_deploy', decision: 'approved' });
    const other = commands.create('approval.resolve', { approvalId: 'approval-call_deploy', decision: 'approved' });
    const answers = await Promise.all([
      postJson(`${b.url}/sessions/${sessionId}/commands`, approve),
      postJson(`${c.url}/sessions/${sessionId}/commands`, approve),
      postJson(`${b.url}/sessions/${sessionId}/commands`, other),
      postJson(`${c.url}/sessions/${sessionId}/commands`, other),
    ]);
    await following;
    // One key, one outcome on both; one of the two keys continued the run, the other was refused.
    expect(answers[1]).toEqual(answers[0]);
    expect(answers[3]).toEqual(answers[2]);
    const statuses = [answers[0]?.status, answers[2]?.status].sort();
    expect(statuses, JSON.stringify(answers.map((answer) => answer.body))).toEqual([200, 409]);
    expect(
      executions()
        .slice(before)
        .map(({ toolCallId }) => toolCallId),
    ).toEqual(['call_deploy']);
    const { state } = (await (await fetch(`${b.url}/sessions/${sessionId}/state`)).json()) as { state: AgentState };
    expect(Object.values(state.runs).filter((run) => run.continuesRunId === runId)).toHaveLength(1);
    expect(state.issues).toEqual([]);
  }, 120_000);
});
