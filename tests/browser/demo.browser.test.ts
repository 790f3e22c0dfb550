// The demo page (`npm start`) in a real browser: Debian's Chromium, driven by
// playwright-core, against the demo server started in this process on a free port.
import { join } from 'node:path';
import type { Frame, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DemoServer } from '../../examples/demo/server';
import {
  browserTestsEnabled,
  bubblesOf,
  type DemoPage,
  openDemoPage,
  runStatuses,
  SCREENSHOTS,
  screenshotOf,
  sendPrompt,
} from './demoPage';

describe.runIf(browserTestsEnabled)('the demo page in Chromium', () => {
  let demo: DemoPage;
  let server: DemoServer;
  let page: Page;
  const pageErrors: string[] = [];

  beforeAll(async () => {
    demo = await openDemoPage('agent-machines-demo-', pageErrors);
    ({ server, page } = demo);
  }, 120_000);

  afterAll(() => demo?.close());

  const send = (prompt: string) => sendPrompt(page, prompt);
  const bubbles = (role: 'user' | 'ai') => bubblesOf(page, role);
  const screenshot = (name: string) => screenshotOf(page, name);
  const lifecycleRows = (machineId: string) => page.locator(`[data-testid="lifecycle"][data-machine="${machineId}"]`);

  it('plays the local runtime: streamed text, Retry on the failed tool, Approve, the client tool, the answer', async () => {
    await page.goto(server.url);
    await page.evaluate(() => localStorage.clear());
    await page.reload();
    await send('What is the weather in Paris and Rome? Email it to the team.');
    await expect.poll(() => bubbles('ai').first().textContent()).toContain('in both cities.');

    const retry = page.getByRole('button', { name: 'Retry' });
    await retry.waitFor();
    expect(await page.locator('[data-testid="tool-call"][data-status="failed"]').textContent()).toContain(
      'get_weather',
    );
    // The run waits for the Retry with its stream open; it has had no command, so no lane yet.
    await expect.poll(() => lifecycleRows('connection').getAttribute('data-state')).toBe('connected');
    expect(await lifecycleRows('commandLane').count()).toBe(0);
    const firstRunId = await lifecycleRows('run').first().getAttribute('data-entity-key');
    await screenshot('local-retry');
    await retry.click();

    // The Retry is the run's first command: the runtime spawns the run's lane, which carries it out.
    await expect.poll(() => lifecycleRows('commandLane').evaluateAll(entityKeys)).toEqual([firstRunId]);
    await expect
      .poll(() => lifecycleRows('commandLane').getAttribute('data-visited'))
      .toBe(
        'admission.accepting,execution.idle admission.accepting,execution.executing admission.accepting,execution.idle',
      );
    const approve = page.getByRole('button', { name: 'Approve', exact: true });
    await approve.waitFor();
    expect(await lifecycleRows('commandLane').getAttribute('data-actor-status')).toBe('active');
    await screenshot('local-approval');
    await approve.click();

    // The page runs send_email itself; the continuation answers with its result.
    await expect
      .poll(() => bubbles('ai').allTextContents(), { timeout: 60_000 })
      .toContain('Email sent to team@example.com. Anything else?');
    expect(await bubbles('ai').allTextContents()).toEqual([
      'Let me check the weather in both cities.',
      'Paris is 14 °C, Rome 21 °C. Sending the email now.',
      'Email sent to team@example.com. Anything else?',
    ]);
    await expect
      .poll(() => page.locator('[data-testid="run"]').evaluateAll(runStatuses))
      .toEqual(['completed', 'completed']);
    expect(await page.locator('[data-testid="approval"]').getAttribute('data-status')).toBe('resolved');
    expect(await page.locator('[data-testid="tool-call"]').evaluateAll(runStatuses)).toEqual([
      // Newest first.
      'completed',
      'completed',
      'failed',
      'completed',
    ]);
    expect(await page.locator('[data-testid="artifact"]').textContent()).toContain('# Rome\n21 °C');
    expect(await page.textContent('[data-testid="issues"]')).toBe('0 issues');
    // Every stream has closed.
    await expect.poll(() => lifecycleRows('connection').getAttribute('data-state')).toBe('idle');
    await screenshot('local-done');
    // Without ?inspect, no word of the inspector.
    expect(await page.getByTestId('inspector-note').count()).toBe(0);
    expect(pageErrors).toEqual([]);
  }, 180_000);

  it('the lifecycle panel draws each machine from its definition; the tool calls stay on their final states', async () => {
    const toolCalls = page.locator('[data-testid="lifecycle"][data-machine="toolCall"]');
    // The nodes of toolCallMachine's definition, compound ones around their children.
    expect(await toolCalls.first().locator('[data-testid="lifecycle-state"]').evaluateAll(statePaths)).toEqual([
      'restoring',
      'open',
      'open.streaming_arguments',
      'open.awaiting_execution',
      'open.awaiting_execution.idle',
      'open.awaiting_execution.submitting',
      'open.running',
      'open.running.idle',
      'open.running.submitting',
      'retryable',
      'retryable.idle',
      'retryable.submitting',
      'completed',
      'failed',
      'cancelled',
    ]);
    // Newest first, as the tool calls panel lists them; the actors are gone, their last states stay.
    expect(await toolCalls.evaluateAll(lifecycleStates)).toEqual(['completed', 'completed', 'failed', 'completed']);
    expect(await toolCalls.evaluateAll((rows) => rows.map((row) => (row as HTMLElement).dataset.source))).toEqual(
      Array(4).fill('live'),
    );
    expect(await toolCalls.first().locator('[data-active="true"]').evaluateAll(statePaths)).toEqual(['completed']);
    // What the inspector saw the Paris lookup (the oldest) go through, and the Rome one until its retry.
    expect(await toolCalls.last().getAttribute('data-visited')).toBe(
      'open.streaming_arguments open.awaiting_execution.idle open.running.idle completed',
    );
    expect(await toolCalls.nth(2).getAttribute('data-visited')).toBe(
      'open.streaming_arguments open.awaiting_execution.idle open.running.idle retryable.idle retryable.submitting retryable.idle failed',
    );
    expect(await page.locator('[data-testid="lifecycle"][data-machine="run"]').evaluateAll(lifecycleStates)).toEqual([
      'completed',
      'completed',
    ]);

    // The runtime's connection: one row, from connectionMachine's definition, idle again.
    const connection = lifecycleRows('connection');
    expect(await connection.count()).toBe(1);
    expect(await connection.locator('[data-testid="lifecycle-state"]').evaluateAll(statePaths)).toEqual([
      'idle',
      'restoring',
      'connecting',
      'connected',
      'reconnecting',
      'unrecoverable',
      'failed',
    ]);
    expect(await connection.locator('[data-active="true"]').evaluateAll(statePaths)).toEqual(['idle']);
    expect(await connection.getAttribute('data-source')).toBe('live');
    // Restored (from an empty checkpoint), then one stream for each of the two runs.
    expect(await connection.getAttribute('data-visited')).toBe(
      'idle restoring idle connecting connected idle connecting connected idle',
    );

    // One command lane, the first run's: both parallel regions drawn from commandLaneMachine and
    // highlighted. Its three commands (Retry, Approve, send_email's result) went through it one
    // at a time; it was stopped once its run had finished. The second run had no command.
    const lanes = lifecycleRows('commandLane');
    const runIds = await lifecycleRows('run').evaluateAll(entityKeys);
    expect(await lanes.evaluateAll(entityKeys)).toEqual([runIds.at(-1)]);
    expect(await lanes.locator('[data-testid="lifecycle-state"]').evaluateAll(statePaths)).toEqual([
      'admission',
      'admission.accepting',
      'admission.cancelling',
      'execution',
      'execution.idle',
      'execution.executing',
    ]);
    const idle = 'admission.accepting,execution.idle';
    const executing = 'admission.accepting,execution.executing';
    expect((await lanes.getAttribute('data-visited'))?.split(' ').slice(0, 6)).toEqual([
      idle,
      executing,
      idle,
      executing,
      idle,
      executing,
    ]);
    const active = await lanes.locator('[data-active="true"]').evaluateAll(statePaths);
    expect(active.slice(0, 3)).toEqual(['admission', 'admission.accepting', 'execution']);
    expect(active).toHaveLength(4);
    expect(await lanes.getAttribute('data-actor-status')).toBe('stopped');
    expect(await lanes.textContent()).toContain('actor stopped');
    await page.locator('[data-testid="lifecycle-panel"]').screenshot({ path: join(SCREENSHOTS, 'lifecycle-done.png') });
    expect(pageErrors).toEqual([]);
  }, 180_000);

  it('switches to the OpenAI-compatible provider without a reload: its answer joins the conversation', async () => {
    // A reload would drop this mark and navigate the main frame.
    await page.evaluate(() => {
      (window as unknown as { loadedBeforeSwitch: boolean }).loadedBeforeSwitch = true;
    });
    let navigations = 0;
    const countNavigation = (frame: Frame) => {
      if (frame === page.mainFrame()) navigations += 1;
    };
    page.on('framenavigated', countNavigation);
    await page.getByText('OpenAI-compatible', { exact: true }).click();
    await expect.poll(() => page.locator('.ant-segmented-item-selected').textContent()).toBe('OpenAI-compatible');
    await send('And tomorrow?');
    // The recorded turn calls get_weather twice; the page runs both, and the continuation quotes them.
    await expect
      .poll(() => bubbles('ai').last().textContent(), { timeout: 60_000 })
      .toContain('Both cities look fine for a walk today.');
    const texts = await bubbles('ai').allTextContents();
    expect(texts.slice(0, 3)).toEqual([
      'Let me check the weather in both cities.',
      'Paris is 14 °C, Rome 21 °C. Sending the email now.',
      'Email sent to team@example.com. Anything else?',
    ]);
    expect(texts.slice(3)).toEqual([
      'Let me check both cities.',
      'Thanks, the tools answered: {"city":"Paris","celsius":14}; {"city":"Rome","celsius":21}. Both cities look fine for a walk today.',
    ]);
    await expect
      .poll(() => page.locator('[data-testid="run"]').evaluateAll(runStatuses))
      .toEqual(Array(4).fill('completed'));
    expect(await page.textContent('[data-testid="issues"]')).toBe('0 issues');
    page.off('framenavigated', countNavigation);
    expect(navigations).toBe(0);
    expect(await page.evaluate(() => (window as unknown as { loadedBeforeSwitch?: boolean }).loadedBeforeSwitch)).toBe(
      true,
    );
    await screenshot('openai');
    expect(pageErrors).toEqual([]);
  }, 180_000);

  it('Anthropic: the recorded tool uses run on the page, and the answer quotes them', async () => {
    await page.getByText('Anthropic', { exact: true }).click();
    await send('Paris and Rome again?');
    await expect
      .poll(() => bubbles('ai').last().textContent(), { timeout: 60_000 })
      .toContain('Pack a light jacket for Paris.');
    await expect
      .poll(() => page.locator('[data-testid="run"]').evaluateAll(runStatuses))
      .toEqual(Array(6).fill('completed'));
    expect(await page.textContent('[data-testid="issues"]')).toBe('0 issues');
    await screenshot('anthropic');
    expect(pageErrors).toEqual([]);
  }, 180_000);

  it('AG-UI: the run ends with an interrupt; Approve resumes it and the agent carries it out', async () => {
    await page.getByText('AG-UI', { exact: true }).click();
    await send('Free some disk space');
    const approve = page.getByRole('button', { name: 'Approve', exact: true });
    await approve.waitFor({ timeout: 60_000 });
    expect(await page.locator('[data-testid="approval"][data-status="waiting"]').textContent()).toContain(
      'Delete 12 log files?',
    );
    await screenshot('agui-interrupt');
    await approve.click();
    await expect
      .poll(() => bubbles('ai').last().textContent(), { timeout: 60_000 })
      .toBe('Done: 12 files matching logs/*.log deleted, 2.1 GB freed.');
    await expect
      .poll(() => page.locator('[data-testid="run"]').evaluateAll(runStatuses))
      .toEqual(Array(8).fill('completed'));
    expect(await page.locator('[data-testid="tool-call"]').first().getAttribute('data-status')).toBe('completed');
    expect(await page.textContent('[data-testid="issues"]')).toBe('0 issues');
    await screenshot('agui-resumed');
    expect(pageErrors).toEqual([]);
  }, 180_000);

  it('AG-UI: Edit and approve sends the edited data with a modified decision', async () => {
    await send('Free more space');
    await page.getByRole('button', { name: 'Edit and approve' }).click();
    await page.getByLabel('Edited data (JSON)').fill('{"glob":"logs/2023-*.log"}');
    await page.getByRole('button', { name: 'Approve edited' }).click();
    await expect
      .poll(() => bubbles('ai').last().textContent(), { timeout: 60_000 })
      .toBe('Done: 12 files matching logs/2023-*.log deleted, 2.1 GB freed.');
    expect(await page.locator('[data-testid="approval"]').first().textContent()).toContain('modified');
    await screenshot('agui-edited');
    expect(pageErrors).toEqual([]);
  }, 180_000);

  it('Cancel run asks the local runtime to stop the run waiting for a retry; it ends cancelled', async () => {
    await page.getByText('Local runtime', { exact: true }).click();
    await send('Once more, please.');
    await page.getByRole('button', { name: 'Retry' }).waitFor({ timeout: 60_000 });
    await page.getByRole('button', { name: 'Cancel run' }).click();
    await expect.poll(() => page.locator('[data-testid="run"]').last().getAttribute('data-status')).toBe('cancelled');
    expect(await page.getByRole('button', { name: 'Retry' }).isDisabled()).toBe(true);
    expect(await page.textContent('[data-testid="issues"]')).toBe('0 issues');
    await screenshot('local-cancelled');
    expect(pageErrors).toEqual([]);
  }, 180_000);

  it('restores the conversation from localStorage after a reload', async () => {
    const before = await bubbles('ai').allTextContents();
    const runs = await page.locator('[data-testid="run"]').evaluateAll(runStatuses);
    expect(runs.length).toBe(11);
    await page.reload();
    await expect.poll(() => bubbles('ai').allTextContents()).toEqual(before);
    expect(await page.locator('[data-testid="run"]').evaluateAll(runStatuses)).toEqual(runs);
    expect(await page.locator('.ant-segmented-item-selected').textContent()).toBe('Local runtime');
    expect(await page.textContent('[data-testid="issues"]')).toBe('0 issues');
    await screenshot('reloaded');
    expect(pageErrors).toEqual([]);
  }, 180_000);
  it('a slow local tool call: the panel highlights streaming_arguments, running, then completed, as they happen', async () => {
    // Every highlighted leaf each tool call row and the connection row commit to the page, in
    // order, by machine and entity key.
    await page.evaluate(() => {
      const seen: Record<string, string[]> = {};
      const record = () => {
        const rows = Array.from(
          document.querySelectorAll<HTMLElement>(
            '[data-testid="lifecycle"]:is([data-machine="toolCall"],[data-machine="connection"])',
          ),
        );
        for (const row of rows) {
          const key = `${row.dataset.machine}/${row.dataset.entityKey}`;
          const highlighted = row.querySelector<HTMLElement>('.lifecycle-state[data-active="true"]')?.dataset.path;
          const states = seen[key] ?? [];
          seen[key] = states;
          if (highlighted !== undefined && states.at(-1) !== highlighted) states.push(highlighted);
        }
      };
      new MutationObserver(record).observe(document.body, { subtree: true, childList: true, attributes: true });
      (window as unknown as { highlightedStates: Record<string, string[]> }).highlightedStates = seen;
    });
    await send('Oslo, slowly please?');
    await expect.poll(() => bubbles('ai').last().textContent(), { timeout: 60_000 }).toBe('Oslo is 9 °C.');
    const newest = page.locator('[data-testid="lifecycle"][data-machine="toolCall"]').first();
    await expect.poll(() => newest.getAttribute('data-state')).toBe('completed');
    await expect.poll(() => page.locator('[data-testid="run"]').last().getAttribute('data-status')).toBe('completed');
    const key = await newest.getAttribute('data-entity-key');
    const seen = await page.evaluate(
      () => (window as unknown as { highlightedStates: Record<string, string[]> }).highlightedStates,
    );
    expect(seen[`toolCall/${key}`]).toEqual([
      'open.streaming_arguments',
      'open.awaiting_execution.idle',
      'open.running.idle',
      'completed',
    ]);
    // The connection row: connected while the run streamed, idle once it ended (`connecting`
    // may last less than a frame).
    expect(seen['connection/connection']?.filter((state) => state !== 'connecting')).toEqual([
      'idle',
      'connected',
      'idle',
    ]);
    await page.locator('[data-testid="lifecycle-panel"]').screenshot({ path: join(SCREENSHOTS, 'lifecycle-slow.png') });
    expect(pageErrors).toEqual([]);
  }, 180_000);

  it('Stop during a local run drops the stream: the run ends cancelled, in the runs panel and its machine', async () => {
    await send('Once more, slowly.');
    await page
      .locator('[data-testid="lifecycle"][data-machine="toolCall"][data-state="open.streaming_arguments"]')
      .waitFor({ timeout: 60_000 });
    await page.locator('.ant-sender-actions-btn-loading-button').click();
    await expect.poll(() => page.locator('[data-testid="run"]').last().getAttribute('data-status')).toBe('cancelled');
    const runRow = page.locator('[data-testid="lifecycle"][data-machine="run"]').first();
    await expect.poll(() => runRow.getAttribute('data-state')).toBe('cancelled');
    // The lookup streams its arguments for one 400 ms step and then runs: a Stop that a loaded
    // machine delivers after that step finds it done. Its machine shows what its card says.
    const card = page.locator('[data-testid="tool-call"]').first();
    await expect.poll(() => card.getAttribute('data-status')).toMatch(/^(cancelled|completed)$/);
    const lookup = await card.getAttribute('data-status');
    await expect
      .poll(() => page.locator('[data-testid="lifecycle"][data-machine="toolCall"]').first().getAttribute('data-state'))
      .toBe(lookup);
    await screenshot('local-stopped');
    await page
      .locator('[data-testid="lifecycle-panel"]')
      .screenshot({ path: join(SCREENSHOTS, 'lifecycle-stopped.png') });
    expect(pageErrors).toEqual([]);
  }, 180_000);

  it('reload mid-stream: the conversation comes back, and the page shows what the runtime reports', async () => {
    await send('And Oslo again, slowly.');
    await page
      .locator('[data-testid="lifecycle"][data-machine="toolCall"][data-state="open.streaming_arguments"]')
      .waitFor({ timeout: 60_000 });
    const before = await bubbles('ai').allTextContents();
    await page.reload();
    await expect.poll(() => bubbles('user').last().textContent()).toBe('And Oslo again, slowly.');
    // The local runtime cannot resume a stream: the runtime says so, and the page with it.
    await expect.poll(() => page.textContent('[data-testid="connection"]')).toMatch(/^(unrecoverable|idle)$/);
    expect(await bubbles('ai').allTextContents()).toEqual(before);
    // The run's machine and the runs panel agree on where the restored run stands.
    const runStatus = await page.locator('[data-testid="run"]').last().getAttribute('data-status');
    const runState = await page
      .locator('[data-testid="lifecycle"][data-machine="run"]')
      .first()
      .getAttribute('data-state');
    expect(runState?.split('.')[0]).toBe(runStatus);
    await screenshot('reloaded-mid-stream');
    await page
      .locator('[data-testid="lifecycle-panel"]')
      .screenshot({ path: join(SCREENSHOTS, 'lifecycle-reloaded.png') });
    expect(pageErrors).toEqual([]);
  }, 180_000);
});

function statePaths(items: Element[]): Array<string | undefined> {
  return items.map((item) => (item as HTMLElement).dataset.path);
}

function entityKeys(items: Element[]): Array<string | undefined> {
  return items.map((item) => (item as HTMLElement).dataset.entityKey);
}

function lifecycleStates(items: Element[]): Array<string | undefined> {
  return items.map((item) => (item as HTMLElement).dataset.state);
}
