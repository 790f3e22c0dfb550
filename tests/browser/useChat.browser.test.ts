import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import type { UIMessage } from 'ai';
import { build } from 'esbuild';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import * as z from 'zod/mini';
import type { AgentState } from '../../machines/agentState';
import { createAgentStore } from '../../machines/createAgentStore';
import { createAgent } from '../../providers/agent/createAgent';
import { defineAgentTool } from '../../providers/agent/defineAgentTool';
import { followAgentSession } from '../../providers/agent-event/followAgentSession';
import { createOpenAICompatibleAgentProvider } from '../../providers/openai/createOpenAICompatibleAgentProvider';
import { type AgentHost, createAgentHost } from '../../server/createAgentHost';
import { toNodeHandler } from '../../server/node';
import { type RecordedRequest, startHttpServer, type TestServer } from '../support/httpServer';
import { until } from '../support/until';
import { browserTestsEnabled, launchChromium, screenshotOf } from './chromium';
import type { UseChatAppHistory } from './useChatApp';

/** The held answer: the model sends the first half, waits for the test's gate, then the rest. */
const FIRST_HALF = 'The answer streams in, ';
const SECOND_HALF = 'and ends once the gate opens.';
const ANSWER = FIRST_HALF + SECOND_HALF;

/** A promise with its resolve, for a gate the test opens. */
function gate() {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { promise, open };
}

const frame = (delta: object, finishReason: string | null = null) =>
  `data: ${JSON.stringify({
    id: 'chatcmpl-1',
    object: 'chat.completion.chunk',
    created: 1733000000,
    model: 'gpt-4o-mini',
    choices: [{ index: 0, delta, finish_reason: finishReason }],
  })}\n\n`;

/**
 * The scripted model. Asked about "logs": a delete_files call, and once the tool's result is
 * in the conversation, what it did ("Nothing was deleted." for the error a denial leaves).
 * Anything else: the first half of the answer, then the rest once `held` opens.
 */
async function completions(
  request: RecordedRequest,
  response: ServerResponse,
  held: () => Promise<void>,
): Promise<void> {
  const { messages } = JSON.parse(request.body) as { messages: Array<{ role: string; content?: unknown }> };
  const prompt = JSON.stringify(messages.findLast((message) => message.role === 'user')?.content ?? '');
  const result = messages.find((message) => message.role === 'tool');
  response.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  response.write(frame({ role: 'assistant', content: '' }));
  const end = (finishReason: string): void => {
    response.end(`${frame({}, finishReason)}data: [DONE]\n\n`);
  };
  if (prompt.includes('logs')) {
    if (result === undefined) {
      const call = { index: 0, id: 'call_delete', type: 'function', function: { name: 'delete_files', arguments: '' } };
      response.write(frame({ content: 'Deleting the logs.' }));
      response.write(frame({ tool_calls: [call] }));
      response.write(frame({ tool_calls: [{ index: 0, function: { arguments: '{"glob":"*.log"}' } }] }));
      return end('tool_calls');
    }
    const content = String(result.content);
    response.write(frame({ content: content.startsWith('Error: ') ? 'Nothing was deleted.' : `Done: ${content}` }));
    return end('stop');
  }
  response.write(frame({ content: FIRST_HALF }));
  await held();
  if (response.destroyed) return;
  response.write(frame({ content: SECOND_HALF }));
  end('stop');
}

/** A request the page made to the host, as Chromium sent it. */
interface PageRequest {
  method: string;
  path: string;
  body: unknown;
}

/** What DefaultChatTransport posts to `/chat`. */
interface ChatPostBody {
  id: string;
  messages: UIMessage[];
  trigger: string;
  messageId?: string;
}

const chatBodyOf = (request: PageRequest | undefined) => request?.body as ChatPostBody | undefined;

/** The text of a UI message: its text parts, in order. */
const textsOf = (message: UIMessage | undefined) =>
  (message?.parts ?? []).flatMap((part) => (part.type === 'text' ? [part.text] : []));

describe.runIf(browserTestsEnabled)('useChat on the host, in Chromium', () => {
  let model: TestServer;
  let host: AgentHost;
  let server: Server;
  let origin: string;
  let browser: Browser;
  let context: BrowserContext | undefined;
  let held = gate();
  /** Every glob the delete_files tool was run with. */
  const deleted: string[] = [];
  const hostErrors: unknown[] = [];
  const pageErrors: string[] = [];
  const requests: PageRequest[] = [];

  beforeAll(async () => {
    const bundled = await build({
      entryPoints: [fileURLToPath(new URL('./useChatApp.tsx', import.meta.url))],
      bundle: true,
      format: 'esm',
      platform: 'browser',
      jsx: 'automatic',
      define: { 'process.env.NODE_ENV': '"development"' },
      write: false,
      logLevel: 'silent',
    });
    const script = bundled.outputFiles[0]?.text ?? '';
    model = await startHttpServer((request, response) => completions(request, response, () => held.promise));
    const deleteFiles = defineAgentTool({
      name: 'delete_files',
      description: 'Deletes the files that match a glob',
      inputSchema: z.object({ glob: z.string() }),
      needsApproval: true,
      execute: ({ glob }) => {
        deleted.push(glob);
        return { deleted: glob };
      },
    });
    host = createAgentHost({
      providers: {
        assistant: createAgent({
          model: createOpenAICompatibleAgentProvider({
            baseURL: `${model.url}/v1`,
            apiKey: 'sk-test',
            model: 'gpt-4o-mini',
          }),
          tools: [deleteFiles],
        }),
      },
      basePath: '/api/agent',
      uiMessageStream: { provider: 'assistant' },
      onError: (error) => hostErrors.push(error),
    });
    const handleHost = toNodeHandler(host.fetch);
    server = createServer((request, response) => {
      if (request.url?.startsWith('/api/agent/')) return handleHost(request, response);
      if (request.url === '/app.js') {
        response.writeHead(200, { 'content-type': 'text/javascript' });
        return void response.end(script);
      }
      response.writeHead(200, { 'content-type': 'text/html' });
      response.end(
        '<!doctype html><title>useChat</title><div id="root"></div><script type="module" src="/app.js"></script>',
      );
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    browser = await launchChromium();
  }, 180_000);

  beforeEach(() => {
    held = gate();
    deleted.length = 0;
    hostErrors.length = 0;
    pageErrors.length = 0;
    requests.length = 0;
  });

  afterEach(async () => {
    held.open();
    await context?.close();
    context = undefined;
  });

  afterAll(async () => {
    await browser?.close();
    await new Promise<void>((resolve) => {
      if (server === undefined) return resolve();
      server.closeAllConnections();
      server.close(() => resolve());
    });
    await host?.close();
    await model?.close();
  });

  /** A fresh page (its own context) on chat `chatId`, once useChat's resume on load has had its answer. */
  async function openPage(chatId: string): Promise<Page> {
    context = await browser.newContext();
    context.setDefaultTimeout(60_000);
    const page = await context.newPage();
    page.on('pageerror', (error) => pageErrors.push(error.message));
    page.on('console', (message) => {
      if (message.type() === 'error') pageErrors.push(message.text());
    });
    page.on('request', (request) => {
      const { pathname } = new URL(request.url());
      if (!pathname.startsWith('/api/agent/')) return;
      const body = request.postData();
      requests.push({ method: request.method(), path: pathname, body: body === null ? undefined : JSON.parse(body) });
    });
    const resumed = page.waitForResponse((response) => response.url().endsWith(`/api/agent/chat/${chatId}/stream`));
    await page.goto(`${origin}/?chat=${chatId}`);
    // Nothing runs in a new chat: the resume on load is answered 204 and useChat stays ready.
    expect((await resumed).status()).toBe(204);
    await page.waitForSelector('#status:text-is("ready")');
    return page;
  }

  const send = async (page: Page, prompt: string) => {
    await page.fill('#prompt', prompt);
    await page.click('#send');
  };
  const status = (page: Page) => page.textContent('#status');
  const messagesOf = (page: Page) => page.evaluate(() => globalThis.chatMessages ?? []);
  const historyOf = (page: Page) =>
    page.evaluate(() => globalThis.chatHistory) as Promise<UseChatAppHistory | undefined>;
  const chatPosts = () => requests.filter((request) => request.method === 'POST' && request.path === '/api/agent/chat');
  const assistantText = (page: Page, text: string, state: 'streaming' | 'done') =>
    page.waitForSelector(`[data-testid="message-1"] [data-testid="text"][data-state="${state}"]:text-is("${text}")`);

  /** Follows the session with followAgentSession until `ready` holds of what it built. */
  async function followed(sessionId: string, ready: (state: AgentState) => boolean): Promise<AgentState> {
    const store = createAgentStore();
    const controller = new AbortController();
    const done = followAgentSession({
      baseURL: `${origin}/api/agent`,
      sessionId,
      store,
      signal: controller.signal,
    }).catch(() => undefined);
    try {
      await until(() => ready(store.getSnapshot()), 'the follower to catch up');
      return store.getSnapshot();
    } finally {
      controller.abort();
      await done;
    }
  }

  const completedRuns = (state: AgentState) => Object.values(state.runs).filter((run) => run.status === 'completed');

  it('streams a run: the answer shows half-way while the model holds it, then whole, and useChat is ready again', async () => {
    const page = await openPage('streams');
    await send(page, 'Tell me something');
    await assistantText(page, FIRST_HALF, 'streaming');
    expect(await status(page)).toBe('streaming');
    held.open();
    await assistantText(page, ANSWER, 'done');
    await page.waitForSelector('#status:text-is("ready")');

    const [user, assistant] = await messagesOf(page);
    expect(user).toMatchObject({ role: 'user', parts: [{ type: 'text', text: 'Tell me something' }] });
    expect(assistant?.role).toBe('assistant');
    expect(assistant?.parts).toEqual([{ type: 'step-start' }, { type: 'text', text: ANSWER, state: 'done' }]);
    const history = await historyOf(page);
    const texts = history?.textsByMessage[assistant?.id as string] ?? [];
    expect(texts).toContain(FIRST_HALF);
    expect(texts.at(-1)).toBe(ANSWER);
    for (const text of texts) expect(ANSWER.startsWith(text), `"${text}" is a prefix of the answer`).toBe(true);
    expect(history?.statuses).toEqual(['ready', 'submitted', 'streaming', 'ready']);

    // One POST, as DefaultChatTransport sends it; the assistant message is the host's run.
    expect(chatPosts().map((request) => request.body)).toEqual([
      {
        id: 'streams',
        messages: [user],
        trigger: 'submit-message',
      },
    ]);
    const { state } = await host.getState('streams');
    expect(Object.keys(state.runs)).toEqual([assistant?.id]);
    expect(Object.values(state.messages).map((entry) => [entry.role, entry.content])).toEqual([
      ['user', 'Tell me something'],
      ['assistant', ANSWER],
    ]);
    expect(pageErrors).toEqual([]);
    expect(hostErrors).toEqual([]);
    await screenshotOf(page, 'use-chat-streams');
  });
  it('goes through an approval: Approve sends the answer by itself, the host runs the tool once and the answer follows', async () => {
    const page = await openPage('approve');
    await send(page, 'Clean up the logs');
    await page.waitForSelector('[data-testid="tool"][data-state="approval-requested"]');
    await page.waitForSelector('#status:text-is("ready")');
    const [user, asked] = await messagesOf(page);
    expect(asked?.parts).toContainEqual(
      expect.objectContaining({
        type: 'tool-delete_files',
        toolCallId: 'call_delete',
        state: 'approval-requested',
        input: { glob: '*.log' },
        approval: { id: 'approval-call_delete' },
      }),
    );
    expect(deleted).toEqual([]);

    await page.click('[data-testid="approve"]');
    await page.waitForSelector('[data-testid="tool"][data-state="output-available"]');
    await page.waitForSelector('[data-testid="text"][data-state="done"]:text-is("Done: {\\"deleted\\":\\"*.log\\"}")');
    await page.waitForSelector('#status:text-is("ready")');
    expect(await page.textContent('[data-testid="tool-output"]')).toBe('{"deleted":"*.log"}');
    expect(deleted).toEqual(['*.log']);

    // The second POST is useChat's own, sent by sendAutomaticallyWhen: the message with the approval answered.
    const posts = chatPosts();
    expect(posts).toHaveLength(2);
    const answered = chatBodyOf(posts[1]);
    expect([answered?.id, answered?.trigger, answered?.messageId]).toEqual(['approve', 'submit-message', asked?.id]);
    expect(answered?.messages.map((message) => message.id)).toEqual([user?.id, asked?.id]);
    expect(answered?.messages[1]?.parts).toContainEqual(
      expect.objectContaining({
        type: 'tool-delete_files',
        state: 'approval-responded',
        approval: { id: 'approval-call_delete', approved: true },
      }),
    );

    // One assistant message, continued in place: the first run's text, the tool's output, the answer.
    const messages = await messagesOf(page);
    expect(messages.map((message) => [message.id, message.role])).toEqual([
      [user?.id, 'user'],
      [asked?.id, 'assistant'],
    ]);
    const continued = messages[1];
    expect(textsOf(continued)).toEqual(['Deleting the logs.', 'Done: {"deleted":"*.log"}']);
    expect(continued?.parts).toContainEqual(
      expect.objectContaining({
        type: 'tool-delete_files',
        toolCallId: 'call_delete',
        state: 'output-available',
        input: { glob: '*.log' },
        output: { deleted: '*.log' },
      }),
    );

    // The same session followed with the host's own protocol shows the same conversation.
    const follower = await followed('approve', (state) => completedRuns(state).length === 2);
    expect(Object.values(follower.runs).map((run) => [run.status, run.continuesRunId])).toEqual([
      ['completed', undefined],
      ['completed', asked?.id],
    ]);
    expect(
      Object.values(follower.messages)
        .filter((entry) => entry.role === 'assistant')
        .map((entry) => entry.content),
    ).toEqual(textsOf(continued));
    expect(Object.values(follower.toolCalls).map((call) => [call.id, call.name, call.status, call.result])).toEqual([
      ['call_delete', 'delete_files', 'completed', { deleted: '*.log' }],
    ]);
    expect(Object.values(follower.approvals).map((approval) => [approval.id, approval.decision])).toEqual([
      ['approval-call_delete', 'approved'],
    ]);
    expect(follower.issues).toEqual([]);
    expect(pageErrors).toEqual([]);
    expect(hostErrors).toEqual([]);
    await screenshotOf(page, 'use-chat-approved');
  });

  it('rejects a tool call: Reject sends the denial, the tool never runs and the answer says so', async () => {
    const page = await openPage('reject');
    await send(page, 'Clean up the logs');
    await page.click('[data-testid="reject"]');
    await page.waitForSelector('[data-testid="tool"][data-state="output-denied"]');
    await page.waitForSelector('[data-testid="text"][data-state="done"]:text-is("Nothing was deleted.")');
    await page.waitForSelector('#status:text-is("ready")');
    expect(deleted).toEqual([]);

    const posts = chatPosts();
    expect(posts).toHaveLength(2);
    expect(chatBodyOf(posts[1])?.messages[1]?.parts).toContainEqual(
      expect.objectContaining({
        type: 'tool-delete_files',
        state: 'approval-responded',
        approval: { id: 'approval-call_delete', approved: false, reason: 'Keep them' },
      }),
    );
    const [, continued] = await messagesOf(page);
    expect(textsOf(continued)).toEqual(['Deleting the logs.', 'Nothing was deleted.']);
    expect(continued?.parts).toContainEqual(
      expect.objectContaining({ type: 'tool-delete_files', toolCallId: 'call_delete', state: 'output-denied' }),
    );
    const { state } = await host.getState('reject');
    expect(Object.values(state.approvals).map((approval) => [approval.id, approval.decision])).toEqual([
      ['approval-call_delete', 'rejected'],
    ]);
    expect(Object.values(state.toolCalls).map((call) => [call.id, call.status, call.error?.code])).toEqual([
      ['call_delete', 'failed', 'approval_rejected'],
    ]);
    expect(pageErrors).toEqual([]);
    expect(hostErrors).toEqual([]);
    await screenshotOf(page, 'use-chat-rejected');
  });

  it('reloaded mid-stream, resumes the running answer with resume: true and shows it once', async () => {
    const page = await openPage('reload');
    await send(page, 'Tell me something');
    await assistantText(page, FIRST_HALF, 'streaming');
    const [, before] = await messagesOf(page);

    requests.length = 0;
    const resumed = page.waitForResponse((response) => response.url().endsWith('/api/agent/chat/reload/stream'));
    await page.reload();
    const response = await resumed;
    expect([response.status(), response.headers()['x-vercel-ai-ui-message-stream']]).toEqual([200, 'v1']);
    // Loaded from the host's state, then replaced by the replayed stream: the same message id.
    await assistantText(page, FIRST_HALF, 'streaming');
    expect(await status(page)).toBe('streaming');
    held.open();
    await assistantText(page, ANSWER, 'done');
    await page.waitForSelector('#status:text-is("ready")');

    const messages = await messagesOf(page);
    expect(messages.map((message) => [message.id, message.role, textsOf(message)])).toEqual([
      [expect.any(String), 'user', ['Tell me something']],
      [before?.id, 'assistant', [ANSWER]],
    ]);
    // After the reload the message showed the host's half first; the replay starts it over (the
    // protocol replays from the start and useChat replaces the message by id), so it may be
    // empty for a render, but every text it had was a prefix of the answer: nothing shown twice.
    const history = await historyOf(page);
    const texts = history?.textsByMessage[before?.id as string] ?? [];
    expect(texts[0]).toBe(FIRST_HALF);
    expect(texts.at(-1)).toBe(ANSWER);
    for (const text of texts) expect(ANSWER.startsWith(text), `"${text}" is a prefix of the answer`).toBe(true);
    expect(history?.statuses.slice(-2)).toEqual(['streaming', 'ready']);
    expect(history?.statuses).not.toContain('error');
    // After the reload: the state, the resume, and no POST.
    expect(requests.map((request) => [request.method, request.path])).toEqual([
      ['GET', '/api/agent/sessions/reload/state'],
      ['GET', '/api/agent/chat/reload/stream'],
    ]);

    const follower = await followed('reload', (state) => completedRuns(state).length === 1);
    expect(Object.values(follower.messages).map((entry) => [entry.role, entry.content])).toEqual([
      ['user', 'Tell me something'],
      ['assistant', ANSWER],
    ]);
    expect(Object.keys(follower.runs)).toEqual([before?.id]);
    expect(pageErrors).toEqual([]);
    expect(hostErrors).toEqual([]);
    await screenshotOf(page, 'use-chat-reload-resume');
  });
});
