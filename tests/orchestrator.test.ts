// The publishing workflow of examples/orchestrator.ts, end to end: its own machine invokes the
// agent with fromAgentProvider, answers what the agent waits for through sendTo, and
// publishes the agent's post. On the embedded local runtime, and on a real OpenAI-compatible
// chat completions server on 127.0.0.1 (streamed chunks over SSE), where the agent asks for
// approval with a tool call instead of an approval of its own.
import { execFile } from 'node:child_process';
import { resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { createActor, toPromise } from 'xstate';
import {
  type EditorInput,
  type PublishingOutput,
  publishingWorkflow,
  REQUEST_APPROVAL_TOOL,
} from '../examples/orchestrator';
import { fromAgentProvider } from '../providers/fromAgentProvider';
import { createOpenAICompatibleAgentProvider } from '../providers/openai/createOpenAICompatibleAgentProvider';
import { startHttpServer, writePieces } from './support/httpServer';

/** Runs the workflow (as given, or with another agent) and keeps its notes, run ids made alike. */
async function publish(workflow: typeof publishingWorkflow, id: string, request: string) {
  const notes: string[] = [];
  const actor = createActor(workflow, { input: { id, request } });
  actor.on('workflow.note', ({ text }) => notes.push(text.replace(/\brun [0-9a-f-]{8}\b/, 'run <id>')));
  actor.start();
  const output: PublishingOutput = await toPromise(actor);
  return { output, notes };
}

describe('the publishing workflow on the local runtime', () => {
  it('approves an announcement: the continued run writes the post, which the workflow publishes', async () => {
    const { output, notes } = await publish(
      publishingWorkflow,
      'post-1',
      'Write a post about the offline mode launch.',
    );
    expect(output).toEqual({
      id: 'post-1',
      outcome: 'published',
      category: 'announcement',
      decision: 'approved',
      post: '# Offline mode launch\n\nOffline mode launch: available today.',
      runIds: [expect.any(String), expect.any(String)],
    });
    expect(notes).toEqual([
      'triage: announcement',
      'agent: run <id> started',
      'agent: asks: Publish the post "Offline mode launch"?',
      'agent: run <id> completed',
      'agent: waits for approval approval-2',
      'workflow: approved (announcement)',
      'agent: run <id> continues',
      'agent: approval approval-2 approved',
      'agent: run <id> completed',
    ]);
  });

  it('rejects an incident: the agent does not write the post, and the workflow ends rejected', async () => {
    const { output, notes } = await publish(publishingWorkflow, 'post-2', 'Write a post about the database outage.');
    expect(output).toEqual({
      id: 'post-2',
      outcome: 'rejected',
      category: 'incident',
      decision: 'rejected',
      runIds: [expect.any(String), expect.any(String)],
    });
    expect(notes).toContain('workflow: rejected (incident)');
    expect(notes).toContain('agent: approval approval-2 rejected');
  });

  it('runs as `npx tsx examples/orchestrator.ts`, printing what happens', async () => {
    const repository = resolve(import.meta.dirname, '..');
    const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', 'examples/orchestrator.ts'], {
      cwd: repository,
      timeout: 30_000,
    });
    expect(stdout).toContain('post-1: "Write a post about the new offline mode launch."');
    expect(stdout).toContain('  workflow: approved (announcement)');
    expect(stdout).toContain('  => published:\n     | # New offline mode launch');
    expect(stdout).toContain('  workflow: rejected (incident)');
    expect(stdout).toMatch(/post-2: .*\n[\s\S]*=> rejected\n$/);
  });
});

/** One server-sent chat completion chunk. */
function chunk(delta: Record<string, unknown>, finishReason: string | null = null): string {
  const body = {
    id: 'chatcmpl-1',
    object: 'chat.completion.chunk',
    created: 1_733_000_000,
    model: 'editor-1',
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }],
  };
  return `data: ${JSON.stringify(body)}\n\n`;
}

/** The model drafts, then calls request_approval, its arguments in two pieces: the run ends waiting on the call. */
const askingForApproval = [
  chunk({ role: 'assistant', content: 'Draft ready: ' }),
  chunk({ content: '"Offline mode".' }),
  chunk({
    tool_calls: [
      {
        index: 0,
        id: 'call_approval',
        type: 'function',
        function: { name: 'request_approval', arguments: '{"title":' },
      },
    ],
  }),
  chunk({ tool_calls: [{ index: 0, function: { arguments: '"Offline mode"}' } }] }),
  chunk({}, 'tool_calls'),
  'data: [DONE]\n\n',
];

function answering(text: string): string[] {
  return [chunk({ role: 'assistant', content: '' }), chunk({ content: text }), chunk({}, 'stop'), 'data: [DONE]\n\n'];
}

describe('the publishing workflow on an OpenAI-compatible server', async () => {
  let replies: string[][] = [];
  const server = await startHttpServer(async (_request, response) => {
    const reply = replies.shift();
    if (reply === undefined) {
      const error = { error: { message: 'The model "editor-1" does not exist', type: 'invalid_request_error' } };
      response.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify(error));
      return;
    }
    response.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    await writePieces(response, reply, 1);
    response.end();
  });
  afterAll(() => server.close());
  beforeEach(() => {
    replies = [];
    server.requests.length = 0;
  });

  const editor = createOpenAICompatibleAgentProvider({
    baseURL: `${server.url}/v1`,
    apiKey: 'sk-test',
    model: 'editor-1',
  });
  const workflow = publishingWorkflow.provide({
    actors: { agent: fromAgentProvider<EditorInput>({ provider: editor }) },
  });
  const bodies = () => server.requests.map((request) => JSON.parse(request.body));

  it('approves the tool call the model asked for approval with, then publishes the answer of the continued run', async () => {
    replies.push(askingForApproval, answering('# Offline mode\n\nAvailable today.'));
    const request = 'Write a post about the offline mode launch.';
    const { output, notes } = await publish(workflow, 'post-3', request);
    expect(output).toEqual({
      id: 'post-3',
      outcome: 'published',
      category: 'announcement',
      decision: 'approved',
      post: '# Offline mode\n\nAvailable today.',
      runIds: [expect.any(String), expect.any(String)],
    });
    expect(notes).toEqual([
      'triage: announcement',
      'agent: run <id> started',
      'agent: calls request_approval',
      'agent: run <id> completed',
      'agent: waits for tool request_approval({"title":"Offline mode"})',
      'workflow: approved (announcement)',
      'agent: run <id> continues',
      'agent: run <id> completed',
    ]);
    const [first, second] = bodies();
    const prompt = `You are the editor. Draft a post, then ask for approval before publishing.\n${request}`;
    expect(first).toMatchObject({ model: 'editor-1', stream: true, tools: [REQUEST_APPROVAL_TOOL] });
    expect(first.messages).toEqual([{ role: 'user', content: prompt }]);
    // The continued run sends the conversation: the draft, the call, and the workflow's answer as its result.
    expect(second.messages).toEqual([
      { role: 'user', content: prompt },
      {
        role: 'assistant',
        content: 'Draft ready: "Offline mode".',
        tool_calls: [
          {
            id: 'call_approval',
            type: 'function',
            function: { name: 'request_approval', arguments: '{"title":"Offline mode"}' },
          },
        ],
      },
      { role: 'tool', tool_call_id: 'call_approval', content: '{"decision":"approved"}' },
    ]);
    expect(server.requests.every((recorded) => recorded.headers.authorization === 'Bearer sk-test')).toBe(true);
  });

  it('rejects it for an incident: the model is told so, and nothing is published', async () => {
    replies.push(askingForApproval, answering('Understood: not publishing.'));
    const { output, notes } = await publish(workflow, 'post-4', 'Write a post about the API outage.');
    expect(output).toEqual({
      id: 'post-4',
      outcome: 'rejected',
      category: 'incident',
      decision: 'rejected',
      runIds: [expect.any(String), expect.any(String)],
    });
    expect(notes).toContain('workflow: rejected (incident)');
    expect(bodies()[1]?.messages.at(-1)).toEqual({
      role: 'tool',
      tool_call_id: 'call_approval',
      content: '{"decision":"rejected"}',
    });
  });

  it('ends failed, saying why, when the server refuses the request', async () => {
    const { output } = await publish(workflow, 'post-5', 'Write a post about the offline mode launch.');
    expect(output).toMatchObject({ id: 'post-5', outcome: 'failed', category: 'announcement' });
    expect(output.failure).toBe(
      `the agent's run ended failed: ${server.url}/v1/chat/completions answered 404: The model "editor-1" does not exist`,
    );
    expect(output.runIds).toHaveLength(1);
  });
});
