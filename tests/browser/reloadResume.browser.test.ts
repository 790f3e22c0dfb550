import type { ServerResponse } from 'node:http';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { AgentCheckpoint } from '../../checkpoint/AgentCheckpoint';
import { createAgentEventFactory } from '../../protocol/createAgentEventFactory';
import type { AgentEvent } from '../../protocol/eventSchemas';
import { getAgentEntityKey } from '../../protocol/getAgentEntityKey';
import { type RecordedRequest, startHttpServer, type TestServer } from '../support/httpServer';
import { browserTestsEnabled, launchChromium, screenshotOf } from './chromium';
import type { ResumeAppRequest } from './resumeApp';

const CHECKPOINT_KEY = 'agent-machines:checkpoint:reload-test';
/** The slow answer: 60 distinct words, so a word shown twice or a restart cannot hide. */
const SLOW_WORDS = Array.from({ length: 60 }, (_, index) => `word${index} `);
const SLOW_ANSWER = SLOW_WORDS.join('');
const WORD_PAUSE_MS = 40;
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Every event of a run, the same for every request of it: the user's message, then the
 * answer (60 words for "slow", three pieces otherwise), then the run's end. Sequences count
 * from 1 and are the frames' ids.
 */
function runEventsOf({ sessionId, runId, prompt }: ResumeAppRequest): AgentEvent[] {
  const events = createAgentEventFactory({
    sessionId,
    runId,
    now: () => 1_700_000_000_000,
    createEventId: (sequence) => `${runId}-e${sequence}`,
  });
  const answer = prompt === 'slow' ? SLOW_WORDS : ['You ', 'said: ', prompt];
  return [
    events.create('run.started', { input: { prompt } }),
    events.create('message.started', { messageId: 'prompt', role: 'user' }),
    events.create('message.delta', { messageId: 'prompt', delta: prompt }),
    events.create('message.completed', { messageId: 'prompt' }),
    events.create('message.started', { messageId: 'answer', role: 'assistant' }),
    ...answer.map((delta) => events.create('message.delta', { messageId: 'answer', delta })),
    events.create('message.completed', { messageId: 'answer' }),
    events.create('run.completed', {}),
  ];
}

/** A word of the answer: the server waits after each one of the slow answer. */
const isAnswerDelta = (event: AgentEvent) => event.type === 'message.delta' && event.payload.messageId === 'answer';

/** The answer's text as the events up to and including `sequence` leave it. */
function answerUpTo(events: readonly AgentEvent[], sequence: number): string {
  return events
    .flatMap((event) =>
      event.type === 'message.delta' && isAnswerDelta(event) && event.sequence <= sequence ? [event.payload.delta] : [],
    )
    .join('');
}

/** What the server wrote for one request to /agent. */
interface ServedStream {
  lastEventId: string | undefined;
  body: ResumeAppRequest;
  sequences: number[];
}

/** Streams a run's events after `Last-Event-ID` (all of them without it), a word every 40 ms for "slow". */
async function agent(request: RecordedRequest, response: ServerResponse, served: ServedStream[]): Promise<void> {
  const body = JSON.parse(request.body) as ResumeAppRequest;
  const header = request.headers['last-event-id'];
  const lastEventId = Array.isArray(header) ? header[0] : header;
  const events = runEventsOf(body);
  const after = lastEventId === undefined ? 0 : Number(lastEventId);
  if (!Number.isSafeInteger(after) || after < 0 || after > events.length) {
    response.writeHead(409, { 'content-type': 'text/plain' });
    return void response.end(`unknown cursor ${lastEventId}`);
  }
  const stream: ServedStream = { lastEventId, body, sequences: [] };
  served.push(stream);
  response.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  for (const event of events) {
    if (event.sequence <= after) continue;
    if (response.destroyed) return;
    response.write(`id: ${event.sequence}\ndata: ${JSON.stringify(event)}\n\n`);
    stream.sequences.push(event.sequence);
    await pause(body.prompt === 'slow' && isAnswerDelta(event) ? WORD_PAUSE_MS : 2);
  }
  response.end();
}

/** What the page rendered over its life: every connection state, and every text of each message. */
interface PageHistory {
  connectionStates: string[];
  textsByMessage: Record<string, string[]>;
}

describe.runIf(browserTestsEnabled)('a page reloaded mid-stream, in Chromium', () => {
  let server: TestServer;
  let browser: Browser;
  let context: BrowserContext | undefined;
  const served: ServedStream[] = [];
  const pageErrors: string[] = [];

  beforeAll(async () => {
    const bundled = await build({
      entryPoints: [fileURLToPath(new URL('./resumeApp.tsx', import.meta.url))],
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
      if (request.url === '/agent') return agent(request, response, served);
      if (request.url === '/app.js') {
        response.writeHead(200, { 'content-type': 'text/javascript' });
        return void response.end(script);
      }
      response.writeHead(200, { 'content-type': 'text/html' });
      response.end(
        '<!doctype html><title>resume</title><div id="root"></div><script type="module" src="/app.js"></script>',
      );
    });
    browser = await launchChromium();
  }, 180_000);

  afterEach(async () => {
    await context?.close();
    context = undefined;
  });

  afterAll(async () => {
    await browser?.close();
    await server?.close();
  });

  /** A page of its own (fresh localStorage) that keeps, at each load, the checkpoint it restores from. */
  async function openPage(path = '/', initScript?: () => void): Promise<Page> {
    served.length = 0;
    pageErrors.length = 0;
    context = await browser.newContext();
    context.setDefaultTimeout(60_000);
    await context.addInitScript((key) => {
      (globalThis as { restoredFrom?: string | null }).restoredFrom = localStorage.getItem(key);
    }, CHECKPOINT_KEY);
    if (initScript !== undefined) await context.addInitScript(initScript);
    const page = await context.newPage();
    page.on('pageerror', (error) => pageErrors.push(error.message));
    page.on('console', (message) => {
      if (message.type() === 'error') pageErrors.push(message.text());
    });
    await page.goto(`${server.url}${path}`);
    await page.waitForSelector('#connection:text-is("idle")');
    return page;
  }

  const send = async (page: Page, prompt: string) => {
    await page.fill('#prompt', prompt);
    await page.click('#send');
  };
  const message = (page: Page, index: number) => page.getByTestId(`message-${index}`);
  const messages = (page: Page) =>
    page
      .locator('#messages li')
      .evaluateAll((items) => items.map((item) => [item.dataset.role, item.dataset.status, item.textContent]));
  const restoredCheckpoint = async (page: Page): Promise<AgentCheckpoint> => {
    const text = await page.evaluate(() => (globalThis as { restoredFrom?: string | null }).restoredFrom);
    expect(text, 'the page loaded again with a checkpoint').toEqual(expect.any(String));
    return JSON.parse(text as string) as AgentCheckpoint;
  };
  const history = async (page: Page) => JSON.parse((await page.textContent('#history')) ?? '{}') as PageHistory;

  /** The first exchange, completed: the history a reload must keep. */
  async function firstExchange(page: Page): Promise<void> {
    await send(page, 'hello');
    await page.waitForSelector('[data-testid="message-1"][data-status="success"]');
    await page.waitForSelector('#requesting:text-is("false")');
    expect(await messages(page)).toEqual([
      ['user', 'local', 'hello'],
      ['assistant', 'success', 'You said: hello'],
    ]);
  }

  /** After the reload: the run went on from `checkpoint`'s cursor to the end, each word once. */
  async function expectResumedFrom(page: Page, checkpoint: AgentCheckpoint, shownBeforeReload: string) {
    const [runId, cursor] = Object.entries(checkpoint.cursorByRun)[0] ?? [];
    expect(Object.keys(checkpoint.cursorByRun)).toHaveLength(1);
    const runEvents = runEventsOf({ sessionId: 'reload-test', runId: runId as string, prompt: 'slow' });
    const answerKey = getAgentEntityKey(runId as string, 'answer');
    const savedText = String(checkpoint.state.messages[answerKey]?.content);
    // The cursor is the sequence of the last event the saved state holds: state and cursor agree.
    expect(cursor).toBe(String(checkpoint.state.lastSequenceByRun[runId as string]));
    expect(savedText).toBe(answerUpTo(runEvents, Number(cursor)));
    expect(savedText.split(' ').length - 1, 'words saved before the reload').toBeGreaterThanOrEqual(3);

    await page.waitForSelector('[data-testid="message-3"][data-status="success"]', { timeout: 60_000 });
    await page.waitForSelector('#connection:text-is("idle")');
    expect(await page.textContent('#requesting')).toBe('false');
    expect(await messages(page)).toEqual([
      ['user', 'local', 'hello'],
      ['assistant', 'success', 'You said: hello'],
      ['user', 'local', 'slow'],
      ['assistant', 'success', SLOW_ANSWER],
    ]);

    // The server: the first stream of the slow run was left, one resume came after the saved cursor.
    expect(served.map((stream) => [stream.body.prompt, stream.lastEventId])).toEqual([
      ['hello', undefined],
      ['slow', undefined],
      ['slow', cursor],
    ]);
    const [, first, resumed] = served;
    expect(first?.body).toEqual({ sessionId: 'reload-test', runId, prompt: 'slow' });
    expect(resumed?.body).toEqual(first?.body);
    expect(first?.sequences.at(-1)).toBeLessThan(runEvents.length);
    expect(resumed?.sequences).toEqual(
      runEvents.filter((event) => event.sequence > Number(cursor)).map((event) => event.sequence),
    );

    // What the page showed after the reload: the saved text (the first frame may already hold
    // the first resumed words: renders are batched per frame), growing word by word to the answer.
    const { connectionStates, textsByMessage } = await history(page);
    const texts = textsByMessage[answerKey] ?? [];
    expect(texts[0]?.startsWith(savedText), `the first text after the reload starts with "${savedText}"`).toBe(true);
    expect(texts.at(-1)).toBe(SLOW_ANSWER);
    for (const [index, text] of texts.entries()) {
      expect(SLOW_ANSWER.startsWith(text), `text ${index} is a prefix of the answer: ${text}`).toBe(true);
      if (index > 0) expect(text.length).toBeGreaterThan(texts[index - 1]?.length ?? 0);
    }
    expect(shownBeforeReload.length).toBeGreaterThan(0);
    expect(SLOW_ANSWER.startsWith(shownBeforeReload)).toBe(true);
    // Restoring, resuming, streaming, done. Whether a render catches `reconnecting` between
    // the restore and the first frame is timing.
    expect(connectionStates.filter((state) => state !== 'reconnecting')).toEqual(['restoring', 'connected', 'idle']);
    expect(pageErrors).toEqual([]);
    return { savedText };
  }

  /** The first exchange, then the slow prompt, and the reload once the page shows `word`. */
  async function reloadDuringSlowAnswer(page: Page, word: string): Promise<string> {
    await firstExchange(page);
    await send(page, 'slow');
    await page.waitForSelector(`[data-testid="message-3"]:text("${word}")`);
    const shownBeforeReload = (await message(page, 3).textContent()) ?? '';
    await page.reload();
    return shownBeforeReload;
  }

  it('continues the run from the cursor saved when the page was hidden, with the history intact', async () => {
    const page = await openPage();
    const shownBeforeReload = await reloadDuringSlowAnswer(page, 'word4 ');
    const checkpoint = await restoredCheckpoint(page);
    // Saved as the page turned hidden: at least what the page showed just before the reload.
    const { savedText } = await expectResumedFrom(page, checkpoint, shownBeforeReload);
    expect(savedText.startsWith(shownBeforeReload)).toBe(true);
    await screenshotOf(page, 'reload-resume-hidden-save');
  });

  it('continues from an older cursor when the latest words were never saved, without doubling them', async () => {
    const page = await openPage('/', () => {
      // The page is closed without its save on `hidden` (a crash, a killed tab): the
      // checkpoint is the last throttled save. Every save is recorded, to know which that is.
      const saves: string[] = [];
      (globalThis as { checkpointSaves?: string[] }).checkpointSaves = saves;
      window.addEventListener('visibilitychange', (event) => event.stopImmediatePropagation(), { capture: true });
      const setItem = Storage.prototype.setItem;
      Storage.prototype.setItem = function (key: string, value: string) {
        if (key === 'agent-machines:checkpoint:reload-test') saves.push(value);
        setItem.call(this, key, value);
      };
    });
    await firstExchange(page);
    await send(page, 'slow');
    // A throttled save of the slow run while it streams, with a few words (sequence 8 is the third)...
    const saved = await page.waitForFunction(() => {
      const last = (globalThis as { checkpointSaves?: string[] }).checkpointSaves?.at(-1);
      const cursors: string[] = last === undefined ? [] : Object.values(JSON.parse(last).cursorByRun);
      return cursors.length === 1 && Number(cursors[0]) >= 8 ? last : undefined;
    });
    const lastSave = JSON.parse((await saved.jsonValue()) as string) as AgentCheckpoint;
    const [runId] = Object.keys(lastSave.cursorByRun);
    const savedWords = String(lastSave.state.messages[getAgentEntityKey(runId as string, 'answer')]?.content)
      .split(' ')
      .filter(Boolean).length;
    // ...then two words it does not hold, and the reload well within the throttle window.
    await page.waitForSelector(`[data-testid="message-3"]:text("word${savedWords + 1} ")`);
    const shownBeforeReload = (await message(page, 3).textContent()) ?? '';
    await page.reload();

    const checkpoint = await restoredCheckpoint(page);
    expect(checkpoint).toEqual(lastSave);
    const { savedText } = await expectResumedFrom(page, checkpoint, shownBeforeReload);
    expect(shownBeforeReload.length).toBeGreaterThan(savedText.length);
    expect(shownBeforeReload.startsWith(savedText)).toBe(true);
    await screenshotOf(page, 'reload-resume-older-cursor');
  });

  // StrictMode's unmount releases the conversation's last holder before the mount that
  // follows holds it again: the release must not abort the run resumed from the checkpoint
  // (it once did, whenever the restore won the race with React's effects).
  it('a run resumed as the page loads survives StrictMode mounting the chat twice', async () => {
    const page = await openPage('/?strict=1');
    await reloadDuringSlowAnswer(page, 'word4 ');
    await page.waitForSelector('[data-testid="message-3"]:is([data-status="success"], [data-status="abort"])', {
      timeout: 60_000,
    });
    expect(await message(page, 3).getAttribute('data-status')).toBe('success');
    expect(await message(page, 3).textContent()).toBe(SLOW_ANSWER);
    await screenshotOf(page, 'reload-resume-strict-mode');
  });
});
