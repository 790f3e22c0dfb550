// The demo page tells the truth (issue 24): a run a reload stranded is shown as such, with
// Start again; the thread tells each run's tool calls, approvals and how it ended, in words;
// the recorded providers say they are recordings and list what they answer; the page fits
// 800 px and its script comes compressed. One Chromium for the file, against the demo server.
import type { Page, Response } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DemoServer } from '../../examples/demo/server';
import { browserTestsEnabled, bubblesOf, type DemoPage, openDemoPage, screenshotOf, sendPrompt } from './demoPage';

const EMAIL_PROMPT = 'What is the weather in Paris and Rome? Email it to the team.';
const SLOW_PROMPT = 'What is the weather in Oslo? Answer slowly.';

describe.runIf(browserTestsEnabled)('the demo page tells the truth', () => {
  let demo: DemoPage;
  let server: DemoServer;
  let page: Page;
  const pageErrors: string[] = [];
  const scripts: Response[] = [];

  beforeAll(async () => {
    demo = await openDemoPage('agent-machines-demo-truth-', pageErrors, (opened) =>
      opened.on('response', (response) => {
        if (/\/assets\/index-[\w-]+\.js$/.test(response.url())) scripts.push(response);
      }),
    );
    ({ server, page } = demo);
  }, 120_000);

  afterAll(() => demo?.close());

  /** A fresh conversation on `provider` (its switcher label). */
  const startConversation = async (provider: string) => {
    await page.goto(server.url);
    await page.evaluate(() => localStorage.clear());
    await page.reload();
    await page.getByText(provider, { exact: true }).click();
  };
  /** The text of each line of the thread's run activity, for the run at `index` (-1: the last). */
  const activityOf = (index: number) =>
    page
      .locator('[data-testid="run-activity"]')
      .nth(index)
      .locator('[data-testid="activity-title"], [data-testid="activity-description"]')
      .allTextContents();

  it('reload mid-run on the Local runtime: the run is shown interrupted, no raw error, and Start again runs it anew', async () => {
    await startConversation('Local runtime');
    await sendPrompt(page, SLOW_PROMPT);
    await expect.poll(() => bubblesOf(page, 'ai').first().textContent()).toContain('Looking it up');
    await page.reload();

    await expect.poll(() => page.textContent('[data-testid="connection"]')).toBe('unrecoverable');
    await expect
      .poll(() => activityOf(-1))
      .toEqual(
        expect.arrayContaining([
          'Interrupted by the reload',
          'This run cannot be resumed: its stream ended with the page.',
        ]),
      );
    // Nothing will end the stranded run: Cancel run is not offered for it, nor is the Sender busy.
    expect(await page.getByRole('button', { name: 'Cancel run' }).isDisabled()).toBe(true);
    const body = (await page.textContent('body')) ?? '';
    expect(body).not.toContain('AgentCommandError');
    expect(await page.locator('[data-testid="error"]').count()).toBeLessThanOrEqual(1);
    // The message box stays on screen.
    const sender = await page.locator('.ant-sender').boundingBox();
    expect((sender?.y ?? Number.POSITIVE_INFINITY) + (sender?.height ?? 0)).toBeLessThanOrEqual(1000);
    await screenshotOf(page, 'truth-stranded');

    await page.getByTestId('start-again').click();
    await expect.poll(() => bubblesOf(page, 'ai').allTextContents(), { timeout: 60_000 }).toContain('Oslo is 9 °C.');
    expect(await bubblesOf(page, 'user').allTextContents()).toEqual([SLOW_PROMPT, SLOW_PROMPT]);
    await expect.poll(() => activityOf(-1)).toEqual(['get_weather(city: Oslo)', 'Answered: city: Oslo, celsius: 9']);
    // The stranded run keeps its note; the new one needs no Start again.
    expect(await page.getByTestId('start-again').count()).toBe(1);
    expect(await page.textContent('body')).not.toContain('AgentCommandError');
    expect(pageErrors).toEqual([]);
  }, 180_000);

  it('the thread shows the tool calls, the retry, the approval, the rejection and the cancel, in words', async () => {
    await startConversation('Local runtime');
    await sendPrompt(page, EMAIL_PROMPT);
    const retry = page.getByRole('button', { name: 'Retry' });
    await retry.waitFor({ timeout: 60_000 });
    await expect
      .poll(() => activityOf(0))
      .toEqual([
        'get_weather(city: Paris)',
        'Answered: city: Paris, celsius: 14',
        'get_weather(city: Rome)',
        'Failed: upstream timeout',
      ]);
    await retry.click();
    const approve = page.getByRole('button', { name: 'Approve', exact: true });
    await approve.waitFor({ timeout: 60_000 });
    await expect.poll(() => activityOf(0)).toContain('Asked: Email the forecast to the team?');
    expect(await activityOf(0)).toContain('Waiting for your decision');
    await approve.click();
    // The page runs send_email; the next run answers in words, not JSON.
    await expect
      .poll(() => bubblesOf(page, 'ai').allTextContents(), { timeout: 60_000 })
      .toContain('Email sent to team@example.com. Anything else?');
    expect((await bubblesOf(page, 'ai').allTextContents()).join(' ')).not.toMatch(/[{}]/);
    const first = await activityOf(0);
    expect(first).toEqual(
      expect.arrayContaining([
        'Failed: upstream timeout (retried)',
        'Answered: city: Rome, celsius: 21',
        'You approved it.',
        'send_email(to: team@example.com, subject: Forecast)',
        'Answered: sent: true, to: team@example.com',
        'Run paused for tools this page runs',
      ]),
    );

    await sendPrompt(page, EMAIL_PROMPT);
    await page.getByRole('button', { name: 'Retry' }).waitFor({ timeout: 60_000 });
    await page.getByRole('button', { name: 'Retry' }).click();
    const reject = page.getByRole('button', { name: 'Reject' });
    await reject.waitFor({ timeout: 60_000 });
    await reject.click();
    await expect
      .poll(() => activityOf(-1))
      .toEqual(
        expect.arrayContaining([
          'Asked: Email the forecast to the team?',
          'You rejected it.',
          'Run ended',
          'Nothing was done after your rejection.',
        ]),
      );
    await screenshotOf(page, 'truth-rejected');

    await sendPrompt(page, EMAIL_PROMPT);
    await page.getByRole('button', { name: 'Retry' }).waitFor({ timeout: 60_000 });
    await page.getByRole('button', { name: 'Cancel run' }).click();
    await expect.poll(() => activityOf(-1)).toEqual(expect.arrayContaining(['Run cancelled', 'cancelled in the demo']));
    expect(await page.locator('[data-testid="error"]').count()).toBe(0);
    expect(pageErrors).toEqual([]);
  }, 240_000);

  it('the recorded providers are labelled recorded and list the prompts they answer; a chip asks one', async () => {
    await startConversation('AG-UI');
    const marks = await page
      .locator('[data-testid="provider-option"]')
      .evaluateAll((options) =>
        options.map((option) => [(option as HTMLElement).dataset.provider, (option as HTMLElement).dataset.mark]),
      );
    expect(marks).toEqual([
      ['local', ''],
      ['openai', 'recorded'],
      ['anthropic', 'recorded'],
      ['agui', 'recorded'],
      ['aisdk', 'scripted'],
      ['host', ''],
    ]);
    // The mark is drawn after the name (CSS), so the option's text is the name alone.
    const agui = page.locator('[data-testid="provider-option"][data-provider="agui"]');
    expect(await agui.textContent()).toBe('AG-UI');
    expect(await agui.evaluate((option) => getComputedStyle(option, '::after').content)).toBe('"recorded"');
    const local = page.locator('[data-testid="provider-option"][data-provider="local"]');
    expect(await local.evaluate((option) => getComputedStyle(option, '::after').content)).toBe('none');
    expect(await page.getByTestId('scenario-note').textContent()).toBe(
      'Recorded scenario: this provider replays a recording, whatever you ask. It answers:',
    );
    const chips = page.locator('[data-testid="scenario"] .ant-prompts-item');
    expect(await chips.allTextContents()).toEqual(['Clean up the old log files to free some disk space.']);
    await chips.first().click();
    await expect
      .poll(() => bubblesOf(page, 'user').allTextContents())
      .toEqual(['Clean up the old log files to free some disk space.']);
    await page.getByRole('button', { name: 'Reject' }).waitFor({ timeout: 60_000 });

    await page.getByText('OpenAI-compatible', { exact: true }).click();
    expect(await chips.allTextContents()).toEqual(['What is the weather in Paris and Rome?']);
    await page.getByText('AI SDK backend', { exact: true }).click();
    expect(await page.getByTestId('scenario-note').textContent()).toBe(
      'Scripted scenario: a scripted model plays its script, whatever you ask. It answers:',
    );
    expect(await chips.allTextContents()).toEqual(['What is the weather in Paris? Email it to the team.']);
    await page.getByText('Local runtime', { exact: true }).click();
    expect(await page.getByTestId('scenario').getAttribute('data-recorded')).toBe('false');
    expect(await chips.allTextContents()).toEqual([EMAIL_PROMPT, SLOW_PROMPT]);
    expect(pageErrors).toEqual([]);
  }, 180_000);

  it('at 800 px wide nothing overflows, and the page script came compressed', async () => {
    await page.setViewportSize({ width: 800, height: 900 });
    await page.goto(server.url);
    await page.locator('.ant-sender').waitFor();
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(800);
    const header = await page.locator('.ant-layout-header').boundingBox();
    expect((header?.x ?? -1) + (header?.width ?? Number.POSITIVE_INFINITY)).toBeLessThanOrEqual(800);
    const title = await page.getByRole('heading', { name: 'agent-machines' }).boundingBox();
    expect(title?.x).toBeGreaterThanOrEqual(0);
    const sender = await page.locator('.ant-sender').boundingBox();
    expect((sender?.x ?? 0) + (sender?.width ?? Number.POSITIVE_INFINITY)).toBeLessThanOrEqual(800);
    // The chat keeps the width: the side panel goes under it.
    expect(sender?.width).toBeGreaterThan(600);
    expect((sender?.y ?? Number.POSITIVE_INFINITY) + (sender?.height ?? 0)).toBeLessThanOrEqual(900);
    await screenshotOf(page, 'truth-800');

    expect(scripts.length).toBeGreaterThan(0);
    for (const script of scripts) {
      expect(['br', 'gzip']).toContain((await script.allHeaders())['content-encoding']);
    }
    expect(pageErrors).toEqual([]);
  }, 120_000);
});
