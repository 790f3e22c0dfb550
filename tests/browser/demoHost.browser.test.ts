// The demo page's "agent-machines host" provider in a real browser: Debian's Chromium, driven by
// playwright-core, against the demo server started in this process. The page's hook is the
// same as for the local runtime; the runs are an agent's (createAgent, on its scripted model:
// no key) that the server's host (`/api/agent`) runs with its tools, and the page only streams
// their events, sends commands and continues with the user's approval.
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEMO_CONVERSATION_KEY, DEMO_HOST_PATH, DEMO_PROVIDER_LABELS } from '../../examples/demo/app/demoProviders';
import type { DemoServer } from '../../examples/demo/server';
import type { AgentState } from '../../machines/agentState';
import {
  browserTestsEnabled,
  bubblesOf,
  type DemoPage,
  openDemoPage,
  runStatuses,
  screenshotOf,
  sendPrompt,
} from './demoPage';

const SESSION_PATH = `${DEMO_HOST_PATH}/sessions/${encodeURIComponent(DEMO_CONVERSATION_KEY)}`;

describe.runIf(browserTestsEnabled)('the demo page on the agent-machines host, in Chromium', () => {
  let demo: DemoPage;
  let server: DemoServer;
  let page: Page;
  const pageErrors: string[] = [];
  /** The `Last-Event-ID` of every request the page made for the session's events (undefined: none). */
  const eventRequests: Array<string | undefined> = [];

  beforeAll(async () => {
    demo = await openDemoPage('agent-machines-demo-host-', pageErrors, (opened) => {
      opened.on('request', (request) => {
        if (new URL(request.url()).pathname === `${SESSION_PATH}/events`) {
          eventRequests.push(request.headers()['last-event-id']);
        }
      });
    });
    ({ server, page } = demo);
  }, 120_000);

  afterAll(() => demo?.close());

  const send = (prompt: string) => sendPrompt(page, prompt);
  const bubbles = (role: 'user' | 'ai') => bubblesOf(page, role);
  const pageRunStatuses = () => page.locator('[data-testid="run"]').evaluateAll(runStatuses);
  const screenshot = (name: string) => screenshotOf(page, name);
  /** The host's state of the page's session, as any client of it would start from. */
  const hostState = async (): Promise<AgentState> => {
    const response = await fetch(new URL(`${SESSION_PATH}/state`, server.url));
    expect(response.status).toBe(200);
    return ((await response.json()) as { state: AgentState }).state;
  };
  const hostRunStatuses = async () => Object.values((await hostState()).runs).map((run) => run.status);

  it("streams a host agent's run, whose tools run on the host; Approve continues it there, and the host sends the email", async () => {
    await page.goto(server.url);
    await page.evaluate(() => localStorage.clear());
    await page.reload();
    await page.getByText(DEMO_PROVIDER_LABELS.host, { exact: true }).click();
    await send('What is the weather in Paris and Rome? Email it to the team.');
    await expect.poll(() => bubbles('ai').first().textContent()).toContain('in both cities.');
    await expect
      .poll(() => page.locator('[data-testid="reasoning"]').textContent())
      .toContain('The user wants two cities; call the weather tool twice, then email.');
    expect(await bubbles('user').allTextContents()).toEqual([
      'What is the weather in Paris and Rome? Email it to the team.',
    ]);

    // The host ran both lookups; the model wrote what they said and asked to send the email:
    // the run ends waiting for the user's approval.
    const approve = page.getByRole('button', { name: 'Approve', exact: true });
    await approve.waitFor({ timeout: 60_000 });
    expect(await bubbles('ai').allTextContents()).toEqual([
      'Let me check the weather in both cities.',
      'Paris is 14 °C, Rome 21 °C. Sending the email now.',
    ]);
    expect(await page.locator('[data-testid="tool-call"][data-status="completed"]').count()).toBe(2);
    expect(await hostRunStatuses()).toEqual(['completed']);
    await screenshot('host-approval');
    await approve.click();

    // The run that continues it runs send_email on the host, and the model says it was sent.
    await expect
      .poll(() => bubbles('ai').allTextContents(), { timeout: 60_000 })
      .toContain('Email sent to team@example.com. Anything else?');
    expect(await bubbles('ai').allTextContents()).toEqual([
      'Let me check the weather in both cities.',
      'Paris is 14 °C, Rome 21 °C. Sending the email now.',
      'Email sent to team@example.com. Anything else?',
    ]);
    await expect.poll(pageRunStatuses).toEqual(['completed', 'completed']);
    expect(await page.locator('[data-testid="approval"]').getAttribute('data-status')).toBe('resolved');
    await expect
      .poll(() => page.locator('[data-testid="tool-call"]').evaluateAll(runStatuses))
      .toEqual(['completed', 'completed', 'completed']);
    expect(await page.textContent('[data-testid="issues"]')).toBe('0 issues');

    // The host holds the same conversation: both runs, the resolved approval, the tools' results.
    const state = await hostState();
    const [first, second] = Object.values(state.runs);
    expect([first?.status, second?.status]).toEqual(['completed', 'completed']);
    expect(second?.continuesRunId).toBe(first?.id);
    expect(Object.values(state.approvals).map(({ status, decision }) => ({ status, decision }))).toEqual([
      { status: 'resolved', decision: 'approved' },
    ]);
    expect(Object.values(state.toolCalls).map((call) => [call.name, call.result])).toEqual([
      ['get_weather', { city: 'Paris', celsius: 14 }],
      ['get_weather', { city: 'Rome', celsius: 21 }],
      ['send_email', { sent: true, to: 'team@example.com' }],
    ]);
    // The page shows the runs the host ran: the same run ids.
    const pageRunLabels = (await page.locator('[data-testid="run"]').allTextContents()).map((text) =>
      text.slice(0, 12),
    );
    expect(pageRunLabels).toEqual([`Run ${first?.id.slice(0, 8)}`, `Run ${second?.id.slice(0, 8)}`]);
    await screenshot('host-done');
    expect(pageErrors).toEqual([]);
  }, 180_000);

  it('Cancel run during the slow turn: the host cancels the run, and the page shows it cancelled', async () => {
    await send('Oslo, slowly please?');
    await page
      .locator('[data-testid="lifecycle"][data-machine="toolCall"][data-state="open.streaming_arguments"]')
      .waitFor({ timeout: 60_000 });
    expect(await hostRunStatuses()).toEqual(['completed', 'completed', 'running']);
    await page.getByRole('button', { name: 'Cancel run' }).click();
    await expect.poll(() => page.locator('[data-testid="run"]').last().getAttribute('data-status')).toBe('cancelled');
    expect(await hostRunStatuses()).toEqual(['completed', 'completed', 'cancelled']);
    // The lookup streams its arguments for one 400 ms step, then runs on the host at once: a
    // cancel that a loaded machine delivers after that step finds it done. Either way the page
    // shows the tool call as the host ended it, and a cancelled lookup never reached the answer.
    const lookup = Object.values((await hostState()).toolCalls).at(-1);
    expect(['cancelled', 'completed']).toContain(lookup?.status);
    await expect
      .poll(() => page.locator('[data-testid="lifecycle"][data-machine="toolCall"]').first().getAttribute('data-state'))
      .toBe(lookup?.status);
    if (lookup?.status === 'cancelled') {
      expect(await bubbles('ai').last().textContent()).not.toContain('Oslo is 9 °C.');
    }
    expect(await page.textContent('[data-testid="issues"]')).toBe('0 issues');
    await screenshot('host-cancelled');
    expect(pageErrors).toEqual([]);
  }, 180_000);

  it('reload mid-stream: the conversation is restored and the run, going on on the host, resumes from its cursor', async () => {
    await send('And Oslo again, slowly.');
    await page
      .locator('[data-testid="lifecycle"][data-machine="toolCall"][data-state="open.streaming_arguments"]')
      .waitFor({ timeout: 60_000 });
    const before = await bubbles('ai').allTextContents();
    expect(before.at(-1)).toBe('Looking it up, slowly.');
    const requestsBefore = eventRequests.length;
    await page.reload();

    // Restored from the checkpoint, with the host still selected.
    expect(await page.locator('.ant-segmented-item-selected').textContent()).toBe(DEMO_PROVIDER_LABELS.host);
    await expect.poll(() => bubbles('user').last().textContent()).toBe('And Oslo again, slowly.');
    // The run went on on the host meanwhile; the page follows it to its end, without a word twice.
    await expect.poll(() => bubbles('ai').last().textContent(), { timeout: 60_000 }).toBe('Oslo is 9 °C.');
    expect(await bubbles('ai').allTextContents()).toEqual([...before, 'Oslo is 9 °C.']);
    await expect.poll(() => page.locator('[data-testid="run"]').last().getAttribute('data-status')).toBe('completed');
    expect(await page.locator('[data-testid="tool-call"]').first().getAttribute('data-status')).toBe('completed');
    // The page asked for the run's events after its saved cursor, not from the start.
    const resumed = eventRequests.slice(requestsBefore);
    expect(resumed.length).toBeGreaterThan(0);
    expect(resumed.every((lastEventId) => lastEventId !== undefined)).toBe(true);
    expect(await hostRunStatuses()).toEqual(['completed', 'completed', 'cancelled', 'completed']);
    expect(await pageRunStatuses()).toEqual(['completed', 'completed', 'cancelled', 'completed']);
    expect(await page.textContent('[data-testid="issues"]')).toBe('0 issues');
    await screenshot('host-reloaded-mid-stream');
    expect(pageErrors).toEqual([]);
  }, 180_000);
});
