// createAgent on the host: the agent loop runs server-side, its server tools execute there, and
// the answers to a run that ended waiting for input (an approval, a client tool's result) come
// through `POST /sessions/:id/commands` and continue the loop, on a loopback model server that
// speaks the OpenAI-compatible or Anthropic wire format.
import { afterEach, describe, expect, it } from 'vitest';
import * as z from 'zod/mini';
import type { AgentState } from '../machines/agentState';
import { createAgentCommandFactory } from '../protocol/createAgentCommandFactory';
import type { AgentEvent } from '../protocol/eventSchemas';
import { getAgentEntityKey } from '../protocol/getAgentEntityKey';
import type { AnyAgentProvider } from '../providers/AgentProvider';
import { createAgent } from '../providers/agent/createAgent';
import { type AgentTool, defineAgentTool } from '../providers/agent/defineAgentTool';
import { createAnthropicAgentProvider } from '../providers/anthropic/createAnthropicAgentProvider';
import { createOpenAICompatibleAgentProvider } from '../providers/openai/createOpenAICompatibleAgentProvider';
import { createAgentHost } from '../server/createAgentHost';
import { postJson, type ReadFrame, readEvents, serveHost } from './support/hostClient';
import { type ModelReply, type ModelRequest, type ModelWireFormat, startModelServer } from './support/modelServer';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A host whose `assistant` is an agent with `tools` on a loopback model that answers with `reply`. */
async function start(format: ModelWireFormat, tools: AgentTool[], reply: (request: ModelRequest) => ModelReply) {
  const model = await startModelServer(format, reply);
  const provider: AnyAgentProvider =
    format === 'openai'
      ? createOpenAICompatibleAgentProvider({ baseURL: model.baseURL, apiKey: 'sk-test', model: 'gpt-4o-mini' })
      : createAnthropicAgentProvider({
          baseURL: model.baseURL,
          apiKey: 'test-key',
          model: 'claude-sonnet-4-5',
          maxTokens: 1024,
        });
  const host = createAgentHost({
    providers: { assistant: createAgent({ model: provider, tools }) },
    onError: () => {},
  });
  const served = await serveHost(host.fetch);
  cleanups.push(async () => {
    await served.close();
    await host.close();
    await model.close();
  });
  const session = (sessionId: string) => `${served.url}/sessions/${sessionId}`;
  return {
    model,
    session,
    /** Starts a user turn and resolves with its events once it ended. */
    async turn(sessionId: string, prompt: string) {
      const started = await postJson(`${session(sessionId)}/runs`, { provider: 'assistant', input: { prompt } });
      expect(started.status).toBe(202);
      const runId = started.body.runId as string;
      const { events } = await readEvents(`${session(sessionId)}/events?runId=${runId}`, {
        stop: ended(runId),
        timeoutMs: 20_000,
      });
      return { runId, events };
    },
    async state(sessionId: string): Promise<AgentState> {
      return ((await (await fetch(`${session(sessionId)}/state`)).json()) as { state: AgentState }).state;
    },
  };
}

const eventsOf = (frames: ReadFrame[]) =>
  frames.filter((frame) => frame.event === undefined).map((frame) => JSON.parse(frame.data) as AgentEvent);
const isEnd = (event: AgentEvent) => /^run\.(completed|failed|cancelled)$/.test(event.type);

/** Stops once run `runId` has ended. */
const ended = (runId: string) => (frames: ReadFrame[]) =>
  eventsOf(frames).some((event) => event.runId === runId && isEnd(event));

/** Stops once the run that continues `runId` has ended, as a client following the whole session reads it. */
const continued = (runId: string) => (frames: ReadFrame[]) => {
  const events = eventsOf(frames);
  const continuing = events.find((event) => event.type === 'run.started' && event.payload.continuesRunId === runId);
  return continuing !== undefined && events.some((event) => event.runId === continuing.runId && isEnd(event));
};

/** Follows the whole session from its start until the run that continues `runId` ended. */
const followUntilContinued = (url: string, runId: string) =>
  readEvents(`${url}/events`, { stop: continued(runId), timeoutMs: 20_000 });

const continuationsOf = (state: AgentState, runId: string) =>
  Object.values(state.runs).filter((run) => run.continuesRunId === runId);

function deleteFilesTool(deleted: string[]) {
  return defineAgentTool({
    name: 'delete_files',
    description: 'Deletes the files that match a glob',
    inputSchema: z.object({ glob: z.string() }),
    needsApproval: true,
    execute: ({ glob }) => {
      deleted.push(glob);
      return { deleted: glob };
    },
  });
}

/** A model that asks to delete `*.log`, then answers with what the tool's result says. */
const deletingModel = (request: ModelRequest): ModelReply => {
  const [result] = request.toolResults;
  if (result === undefined) {
    return {
      text: 'Deleting.',
      toolCalls: [{ id: 'call_delete', name: 'delete_files', arguments: { glob: '*.log' } }],
    };
  }
  return { text: result.isError ? 'Nothing was deleted.' : `Done: ${result.content}` };
};

describe.each<ModelWireFormat>(['openai', 'anthropic'])('an agent on the host, over %s', (format) => {
  it('runs a server tool on the host and answers with its result, in one run', async () => {
    const calls: string[] = [];
    const weather = defineAgentTool({
      name: 'get_weather',
      description: 'The current weather in a city',
      inputSchema: z.object({ city: z.string() }),
      execute: ({ city }, { runId }) => {
        calls.push(`${runId}:${city}`);
        return { city, celsius: 14 };
      },
    });
    const host = await start(format, [weather], (request) => {
      const [result] = request.toolResults;
      if (result === undefined)
        return { toolCalls: [{ id: 'call_paris', name: 'get_weather', arguments: { city: 'Paris' } }] };
      return { text: `It is ${(JSON.parse(result.content) as { celsius: number }).celsius} °C.` };
    });
    const { runId, events } = await host.turn('weather', 'Weather in Paris?');
    expect(calls).toEqual([`${runId}:Paris`]);
    expect(events.filter((event) => event.type.startsWith('tool.')).map((event) => event.type)).toEqual([
      'tool.requested',
      'tool.arguments_delta',
      'tool.arguments_delta',
      'tool.arguments_completed',
      'tool.running',
      'tool.completed',
    ]);
    expect(events[0]?.meta).toEqual({ agentMachines: { hostProvider: 'assistant' } });
    const state = await host.state('weather');
    expect(state.runs[runId]).toMatchObject({ status: 'completed', output: { stoppedBy: 'answer', steps: 2 } });
    expect(Object.values(state.messages).map((message) => [message.role, message.content])).toEqual([
      ['user', 'Weather in Paris?'],
      ['assistant', 'It is 14 °C.'],
    ]);
    expect(host.model.modelRequests()[1]?.toolResults).toEqual([
      { toolCallId: 'call_paris', content: '{"city":"Paris","celsius":14}', isError: false },
    ]);
    expect(state.issues).toEqual([]);
  });

  it.each([
    ['approved', undefined, ['*.log']],
    ['rejected', undefined, []],
    ['modified', { glob: '*.tmp' }, ['*.tmp']],
  ] as const)('continues a run waiting for an approval %s through /commands', async (decision, data, expected) => {
    const deleted: string[] = [];
    const host = await start(format, [deleteFilesTool(deleted)], deletingModel);
    const sessionId = `approval-${decision}`;
    const { runId } = await host.turn(sessionId, 'Clean up the logs');
    let state = await host.state(sessionId);
    expect(state.runs[runId]).toMatchObject({
      status: 'completed',
      pendingToolCallIds: ['call_delete'],
      pendingApprovalIds: ['approval-call_delete'],
    });
    expect(deleted).toEqual([]);

    const following = followUntilContinued(host.session(sessionId), runId);
    const command = createAgentCommandFactory({ sessionId, runId }).create('approval.resolve', {
      approvalId: 'approval-call_delete',
      decision,
      ...(data === undefined ? {} : { data }),
    });
    const answer = await postJson(`${host.session(sessionId)}/commands`, command);
    expect([answer.status, answer.body]).toEqual([200, { status: 'accepted', events: [] }]);
    const { events } = await following;

    // The client following the session sees the continuation: the approval, the tool, the answer.
    const continuing = events.find((event) => event.type === 'run.started' && event.runId !== runId);
    expect(continuing?.payload).toMatchObject({ continuesRunId: runId });
    const after = events.filter((event) => event.runId === continuing?.runId).map((event) => event.type);
    expect(after.slice(0, 2)).toEqual(['run.started', 'approval.resolved']);
    expect(after.at(-1)).toBe('run.completed');
    expect(deleted).toEqual(expected);

    state = await host.state(sessionId);
    expect(state.approvals[getAgentEntityKey(runId, 'approval-call_delete')]).toMatchObject({
      status: 'resolved',
      decision,
    });
    const toolCall = state.toolCalls[getAgentEntityKey(runId, 'call_delete')];
    const lastText = Object.values(state.messages).at(-1)?.content;
    if (decision === 'rejected') {
      expect(toolCall).toMatchObject({ status: 'failed', error: { code: 'approval_rejected' } });
      expect(lastText).toBe('Nothing was deleted.');
    } else {
      expect(toolCall).toMatchObject({ status: 'completed', result: { deleted: expected[0] } });
      expect(lastText).toBe(`Done: ${JSON.stringify({ deleted: expected[0] })}`);
    }
    expect(continuationsOf(state, runId).map((run) => run.status)).toEqual(['completed']);
    expect(host.model.modelRequests()).toHaveLength(2);
    expect(state.issues).toEqual([]);

    // Answered, the run waits no more: the same answer again is refused, and nothing runs twice.
    const again = await postJson(
      `${host.session(sessionId)}/commands`,
      createAgentCommandFactory({ sessionId, runId }).create('approval.resolve', {
        approvalId: 'approval-call_delete',
        decision: 'approved',
      }),
    );
    expect([again.status, (again.body.error as { code: string }).code]).toEqual([409, 'run_ended']);
    expect(deleted).toEqual(expected);
  });

  it("continues a run waiting for a client tool's result through /commands", async () => {
    const pickFile = defineAgentTool({
      name: 'pick_file',
      description: 'Asks the user to pick a file',
      inputSchema: z.object({}),
    });
    const host = await start(format, [pickFile], (request) => {
      const [result] = request.toolResults;
      if (result === undefined) return { toolCalls: [{ id: 'call_pick', name: 'pick_file', arguments: {} }] };
      return { text: `You picked ${(JSON.parse(result.content) as { file: string }).file}.` };
    });
    const { runId } = await host.turn('pick', 'Open a file');
    expect((await host.state('pick')).runs[runId]?.pendingToolCallIds).toEqual(['call_pick']);
    const following = followUntilContinued(host.session('pick'), runId);
    const command = createAgentCommandFactory({ sessionId: 'pick', runId }).create('tool.submit_result', {
      toolCallId: 'call_pick',
      result: { file: 'report.pdf' },
    });
    const answer = await postJson(`${host.session('pick')}/commands`, command);
    expect([answer.status, answer.body]).toEqual([200, { status: 'accepted', events: [] }]);
    const { events } = await following;
    // The result is written to the waiting run, as the very event a client's runtime would apply.
    const result = events.find((event) => event.type === 'tool.completed');
    expect([result?.runId, result?.eventId, result?.meta]).toEqual([
      runId,
      'client-result:call_pick',
      { agentMachines: { executedBy: 'client', commandId: command.commandId } },
    ]);
    expect(host.model.modelRequests()[1]?.toolResults).toEqual([
      { toolCallId: 'call_pick', content: '{"file":"report.pdf"}', isError: false },
    ]);
    const state = await host.state('pick');
    expect(Object.values(state.messages).at(-1)?.content).toBe('You picked report.pdf.');
    expect(state.issues).toEqual([]);
  });
});

describe('answers to a run waiting for more than one input', () => {
  it('keeps an approval that leaves the run waiting in the log, and continues once the client tool answered too', async () => {
    const deleted: string[] = [];
    const pickFile = defineAgentTool({ name: 'pick_file', description: 'Asks for a file', inputSchema: z.object({}) });
    const host = await start('openai', [deleteFilesTool(deleted), pickFile], (request) => {
      if (request.toolResults.length === 0) {
        return {
          toolCalls: [
            { id: 'call_delete', name: 'delete_files', arguments: { glob: '*.log' } },
            { id: 'call_pick', name: 'pick_file', arguments: {} },
          ],
        };
      }
      return { text: request.toolResults.map((result) => result.content).join(' + ') };
    });
    const { runId } = await host.turn('two', 'Clean up, then open a file');
    const commands = createAgentCommandFactory({ sessionId: 'two', runId });
    const approve = await postJson(
      `${host.session('two')}/commands`,
      commands.create('approval.resolve', { approvalId: 'approval-call_delete', decision: 'approved' }),
    );
    expect([approve.status, approve.body]).toEqual([200, { status: 'accepted', events: [] }]);
    // Written to the waiting run; nothing ran, no run continues it yet.
    let state = await host.state('two');
    expect(state.approvals[getAgentEntityKey(runId, 'approval-call_delete')]).toMatchObject({
      status: 'resolved',
      decision: 'approved',
      meta: { agentMachines: { resolvedBy: 'command' } },
    });
    expect([deleted, continuationsOf(state, runId)]).toEqual([[], []]);

    const following = followUntilContinued(host.session('two'), runId);
    const submit = await postJson(
      `${host.session('two')}/commands`,
      commands.create('tool.submit_result', { toolCallId: 'call_pick', result: { file: 'a.txt' } }),
    );
    expect(submit.status).toBe(200);
    await following;
    state = await host.state('two');
    expect(deleted).toEqual(['*.log']);
    expect(host.model.modelRequests()[1]?.toolResults).toEqual([
      { toolCallId: 'call_delete', content: '{"deleted":"*.log"}', isError: false },
      { toolCallId: 'call_pick', content: '{"file":"a.txt"}', isError: false },
    ]);
    expect(continuationsOf(state, runId).map((run) => run.status)).toEqual(['completed']);
    expect(state.issues).toEqual([]);
  });
});

describe('one approval answered more than once', () => {
  it('executes the tool once: the same key twice at once shares one outcome, another key at once is refused', async () => {
    const deleted: string[] = [];
    const host = await start('openai', [deleteFilesTool(deleted)], deletingModel);
    const { runId } = await host.turn('twice', 'Clean up the logs');
    const url = `${host.session('twice')}/commands`;
    const commands = createAgentCommandFactory({ sessionId: 'twice', runId });
    const approve = commands.create('approval.resolve', { approvalId: 'approval-call_delete', decision: 'approved' });
    const other = commands.create('approval.resolve', { approvalId: 'approval-call_delete', decision: 'approved' });
    const following = followUntilContinued(host.session('twice'), runId);
    const answers = await Promise.all([postJson(url, approve), postJson(url, approve), postJson(url, other)]);
    await following;
    expect(answers[0]).toEqual({ status: 200, body: { status: 'accepted', events: [] } });
    expect(answers[1]).toEqual(answers[0]);
    // The other key found the approval being answered, or answered: refused, with nothing run.
    const refused = answers[2] as { status: number; body: { error?: { code: string } } };
    expect(refused.status).toBe(409);
    expect(['continuation_in_progress', 'run_ended']).toContain(refused.body.error?.code);
    expect(deleted).toEqual(['*.log']);
    const state = await host.state('twice');
    expect(continuationsOf(state, runId)).toHaveLength(1);
    expect(state.issues).toEqual([]);

    // A client's POST /runs continuing it after that starts nothing either.
    const late = await postJson(`${host.session('twice')}/runs`, {
      provider: 'assistant',
      input: {},
      continuation: {
        runId,
        approvals: [{ approvalId: 'approval-call_delete', status: 'resolved', decision: 'approved' }],
      },
    });
    expect([late.status, (late.body.error as { code: string }).code]).toEqual([400, 'invalid_request']);
    expect(deleted).toEqual(['*.log']);
  });
});
