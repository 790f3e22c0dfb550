import type { ServerResponse } from 'node:http';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type RecordedRequest, startHttpServer, type TestServer } from '../support/httpServer';
import { browserTestsEnabled, launchChromium, screenshotOf } from './chromium';

const chunk = (delta: object, finish: string | null = null) =>
  `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Answers an agent that has tools by calling get_location, then by saying where the tool's
 * result says the user is; "slow" with a word every 40 ms until the client goes away;
 * anything else in three words.
 */
async function completions(request: RecordedRequest, response: ServerResponse): Promise<void> {
  const body = JSON.parse(request.body) as { messages: Array<{ role: string; content: string }>; tools?: unknown[] };
  const prompt = body.messages.at(-1)?.content ?? '';
  response.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  response.write(chunk({ role: 'assistant' }));
  if (body.tools !== undefined) {
    const result = body.messages.find((message) => message.role === 'tool');
    if (result === undefined) {
      const call = { index: 0, id: 'call_loc', type: 'function', function: { name: 'get_location', arguments: '' } };
      response.write(chunk({ tool_calls: [call] }));
      response.write(chunk({ tool_calls: [{ index: 0, function: { arguments: '{"precision":"city"}' } }] }));
      response.end(`${chunk({}, 'tool_calls')}data: [DONE]\n\n`);
      return;
    }
    const { host } = JSON.parse(result.content) as { host: string };
    response.write(chunk({ content: `You are on ${host}.` }));
    response.end(`${chunk({}, 'stop')}data: [DONE]\n\n`);
    return;
  }
  if (prompt === 'slow') {
    for (let word = 0; !response.destroyed && word < 500; word += 1) {
      response.write(chunk({ content: `word${word} ` }));
      await pause(40);
    }
    response.end();
    return;
  }
  for (const content of ['You ', 'said: ', prompt]) {
    response.write(chunk({ content }));
    await pause(30);
  }
  response.end(`${chunk({}, 'stop')}data: [DONE]\n\n`);
}

describe.runIf(browserTestsEnabled)('useXChat in Chromium', () => {
  let server: TestServer;
  let browser: Browser;
  let page: Page;
  const pageErrors: string[] = [];

  beforeAll(async () => {
    const bundled = await build({
      entryPoints: [fileURLToPath(new URL('./chatApp.tsx', import.meta.url))],
      bundle: true,
      format: 'esm',
      platform: 'browser',
      jsx: 'automatic',
      define: { 'process.env.NODE_ENV': '"development"' },
      write: false,
      logLevel: 'silent',
    });
    const script = bundled.outputFiles[0]?.text ?? '';
    server = await startHttpServer((request, response) => {
      if (request.url === '/v1/chat/completions') return completions(request, response);
      if (request.url === '/app.js') {
        response.writeHead(200, { 'content-type': 'text/javascript' });
        return void response.end(script);
      }
      response.writeHead(200, { 'content-type': 'text/html' });
      response.end(
        '<!doctype html><title>chat</title><div id="root"></div><script type="module" src="/app.js"></script>',
      );
    });
    browser = await launchChromium();
    page = await browser.newPage();
    // Waits for the page are ceilings: a loaded machine only makes them slower.
    page.setDefaultTimeout(60_000);
    page.on('pageerror', (error) => pageErrors.push(error.message));
    page.on('console', (message) => {
      if (message.type() === 'error') pageErrors.push(message.text());
    });
  }, 180_000);

  afterAll(async () => {
    await browser?.close();
    await server?.close();
  });

  beforeEach(() => {
    pageErrors.length = 0;
  });

  const completionRequests = () => server.requests.filter((request) => request.url === '/v1/chat/completions');
  const send = async (prompt: string) => {
    await page.fill('#prompt', prompt);
    await page.click('#send');
  };
  const texts = (selector: string) => page.locator(selector).allTextContents();

  it('streams an answer into messages, parsed messages and AgentState', async () => {
    await page.goto(server.url);
    await send('Weather in Paris?');
    // No wait for `requesting` to show true: the hook renders once per frame, and a run that
    // streams within one frame goes from idle to done without a frame in between.
    await page.waitForSelector('#messages li[data-role="assistant"][data-status="success"]');
    expect(await texts('#messages li')).toEqual(['Weather in Paris?', 'You said: Weather in Paris?']);
    expect(await page.locator('#messages li').evaluateAll((items) => items.map((item) => item.dataset.status))).toEqual(
      ['local', 'success'],
    );
    expect(await texts('#parsed li')).toEqual(['WEATHER IN PARIS?', 'YOU SAID: WEATHER IN PARIS?']);
    await page.waitForSelector('#requesting:text("false")');
    expect(await page.locator('#runs li').getAttribute('data-status')).toBe('completed');
    expect(await page.textContent('#issues')).toBe('0');
    const request = completionRequests().at(-1);
    expect(request?.headers.authorization).toBe('Bearer sk-browser');
    expect(JSON.parse(request?.body ?? '{}')).toMatchObject({
      model: 'gpt-4o-mini',
      stream: true,
      messages: [{ role: 'user', content: 'Weather in Paris?' }],
    });
    expect(pageErrors).toEqual([]);
    await screenshotOf(page, 'usexchat-streamed');
  });

  it('Stop cancels the run: the streamed text stays, the request is closed', async () => {
    await page.goto(server.url);
    await send('slow');
    await page.waitForSelector('#messages li[data-role="assistant"]:text("word2")');
    const index = server.requests.length - 1;
    await page.click('#stop');
    await page.waitForSelector('#messages li[data-role="assistant"][data-status="abort"]');
    await server.closed(index);
    expect(await page.locator('#runs li').getAttribute('data-status')).toBe('cancelled');
    expect(await page.textContent('#requesting')).toBe('false');
    const answer = await page.textContent('#messages li[data-role="assistant"]');
    expect(answer).toMatch(/^word0 word1 word2 /);
    expect(await page.textContent('#issues')).toBe('0');
    expect(pageErrors).toEqual([]);
    await screenshotOf(page, 'usexchat-stopped');
  });

  it('unmounting the chat cancels its run and closes the request', async () => {
    await page.goto(server.url);
    await send('slow');
    await page.waitForSelector('#messages li[data-role="assistant"]:text("word1")');
    const index = server.requests.length - 1;
    await page.click('#toggle');
    await server.closed(index);
    expect(await page.locator('#messages').count()).toBe(0);
    expect(pageErrors).toEqual([]);
    await screenshotOf(page, 'usexchat-unmounted');
  });

  it('a conversationKey keeps the conversation across unmount and mount, as its session', async () => {
    await page.goto(`${server.url}/?conversation=trip-1`);
    await send('first');
    await page.waitForSelector('#messages li[data-role="assistant"][data-status="success"]');
    await page.click('#toggle');
    await page.click('#toggle');
    expect(await texts('#messages li')).toEqual(['first', 'You said: first']);
    await send('second');
    await page.waitForSelector('#messages li[data-role="assistant"][data-status="success"] >> nth=1');
    expect(await texts('#messages li')).toEqual(['first', 'You said: first', 'second', 'You said: second']);
    expect(await texts('#runs li')).toEqual(['trip-1', 'trip-1']);
    expect(pageErrors).toEqual([]);
    await screenshotOf(page, 'usexchat-conversation-key');
  });

  it('runs a client tool given to useXChat({ tools }) in the page, and the agent answers with its result', async () => {
    await page.goto(`${server.url}/?tools=1`);
    const before = completionRequests().length;
    await send('Where am I?');
    await page.waitForSelector('#messages li[data-role="assistant"][data-status="success"]');
    const host = new URL(server.url).host;
    expect(await texts('#messages li')).toEqual(['Where am I?', `You are on ${host}.`]);
    // The tool's definition, looked up by name in chat.tools, and its call settled by the page.
    expect(await texts('#tool-calls li')).toEqual(['get_location: Where the user is']);
    expect(await page.locator('#tool-calls li').getAttribute('data-status')).toBe('completed');
    const runs = await page
      .locator('#runs li')
      .evaluateAll((items) => items.map((item) => [item.dataset.status, item.textContent]));
    expect(runs).toEqual([
      ['completed', 'request'],
      ['completed', 'continuation'],
    ]);
    const requests = completionRequests().slice(before);
    expect(requests).toHaveLength(2);
    const second = JSON.parse(requests[1]?.body ?? '{}') as { messages: Array<Record<string, unknown>> };
    expect(second.messages.at(-1)).toEqual({
      role: 'tool',
      tool_call_id: 'call_loc',
      content: JSON.stringify({ host, precision: 'city' }),
    });
    expect(await page.textContent('#issues')).toBe('0');
    expect(pageErrors).toEqual([]);
    await screenshotOf(page, 'usexchat-client-tool');
  });

  it('a provider made anew on every render keeps the conversation', async () => {
    await page.goto(`${server.url}/?inline=1`);
    await send('one');
    await page.waitForSelector('#messages li[data-role="assistant"][data-status="success"]');
    await send('two');
    await page.waitForSelector('#messages li[data-role="assistant"][data-status="success"] >> nth=1');
    expect(await texts('#messages li')).toEqual(['one', 'You said: one', 'two', 'You said: two']);
    await send('slow');
    await page.waitForSelector('#messages li[data-role="assistant"]:text("word1")');
    const index = server.requests.length - 1;
    await page.click('#stop');
    await server.closed(index);
    await page.waitForSelector('#messages li[data-role="assistant"][data-status="abort"]');
    expect(await page.locator('#runs li').evaluateAll((items) => items.map((item) => item.dataset.status))).toEqual([
      'completed',
      'completed',
      'cancelled',
    ]);
    expect(pageErrors).toEqual([]);
    await screenshotOf(page, 'usexchat-inline-provider');
  });
});
