// The demo page's `?inspect` in a real browser: the Stately inspector's popup, served by a
// stand-in (this machine cannot reach stately.ai), hears the conversation's one actor system.
// A file of its own: it needs a browser context of its own, and runs beside the demo's others.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DemoServer } from '../../examples/demo/server';
import {
  browserTestsEnabled,
  bubblesOf,
  type DemoPage,
  openDemoPage,
  runStatuses,
  screenshotOf,
  sendPrompt,
} from './demoPage';

describe.runIf(browserTestsEnabled)('the demo page with ?inspect in Chromium', () => {
  let demo: DemoPage;
  let server: DemoServer;
  const pageErrors: string[] = [];

  beforeAll(async () => {
    demo = await openDemoPage('agent-machines-demo-inspect-', pageErrors);
    ({ server } = demo);
  }, 120_000);

  afterAll(() => demo?.close());
  const page = { context: () => demo.page.context() };

  it('?inspect opens the Stately inspector, which hears the runtime and the store; the page works as without it', async () => {
    // A context of its own: a fresh conversation, and the stand-in served for the inspector's address.
    const context = await page
      .context()
      .browser()
      ?.newContext({ viewport: { width: 1440, height: 1000 } });
    if (context === undefined) throw new Error('the demo page has no browser');
    context.setDefaultTimeout(60_000);
    try {
      const inspectorRequests: string[] = [];
      await context.route('https://stately.ai/**', (route) => {
        inspectorRequests.push(route.request().url());
        return route.fulfill({ contentType: 'text/html', body: INSPECTOR_STAND_IN });
      });
      const inspected = await context.newPage();
      const errors: string[] = [];
      inspected.on('pageerror', (error) => errors.push(error.message));
      inspected.on('console', (message) => {
        if (message.type() === 'error') errors.push(message.text());
      });
      const popup = inspected.waitForEvent('popup', { timeout: 60_000 });
      await inspected.goto(`${server.url}?inspect`);
      const inspector = await popup;
      await inspector.waitForLoadState();
      expect(inspector.url()).toBe('https://stately.ai/inspect');
      expect(inspectorRequests).toEqual(['https://stately.ai/inspect']);
      // The page says the inspector is a popup on the internet: offline it shows only an error page.
      expect(await inspected.getByTestId('inspector-note').textContent()).toMatch(
        /popup.*needs the internet and popups allowed.*Offline, that window shows an error page/,
      );

      await sendPrompt(inspected, 'Oslo, slowly please?');
      await expect
        .poll(() => bubblesOf(inspected, 'ai').last().textContent(), { timeout: 60_000 })
        .toBe('Oslo is 9 °C.');
      await expect.poll(() => inspected.locator('[data-testid="run"]').evaluateAll(runStatuses)).toEqual(['completed']);
      await expect
        .poll(() =>
          inspected.locator('[data-testid="lifecycle"][data-machine="connection"]').getAttribute('data-state'),
        )
        .toBe('idle');
      expect(await inspected.textContent('[data-testid="issues"]')).toBe('0 issues');
      await screenshotOf(inspected, 'inspect');

      // The inspector window hears the page by postMessage, later than the page shows it: wait
      // until it has heard what is asserted below (the tool call's actor, the connection and the
      // view back at idle), then check all of it.
      await inspector.waitForFunction(
        () => {
          const heard = (window as unknown as { heard: HeardEvent[] }).heard;
          const names = new Map(heard.filter((e) => e.type === '@xstate.actor').map((e) => [e.sessionId, e.name]));
          const last = (name: string) =>
            heard.filter((e) => e.type === '@xstate.snapshot' && names.get(e.sessionId) === name).at(-1);
          return (
            [...names.values()].includes('toolCall:tool-1') &&
            last('connection')?.value === 'idle' &&
            last('toolCall:tool-1')?.value === 'completed'
          );
        },
        undefined,
        { timeout: 30_000, polling: 100 },
      );
      // The inspector heard the conversation's one system, the runtime's actors and the store's,
      // and followed the connection.
      const heard = await inspector.evaluate(() => (window as unknown as { heard: HeardEvent[] }).heard);
      const names = new Map(heard.filter((event) => event.type === '@xstate.actor').map((e) => [e.sessionId, e.name]));
      expect([...names.values()]).toEqual(
        expect.arrayContaining(['xChat', 'session', 'connection', 'toolCall:tool-1']),
      );
      const parents = new Map(heard.filter((event) => event.type === '@xstate.actor').map((e) => [e.name, e.parentId]));
      const idOf = (name: string) => [...names].find(([, actorName]) => actorName === name)?.[0];
      expect(parents.get('session')).toBe(idOf('xChat'));
      expect([...names.values()].some((name) => name?.startsWith('run:'))).toBe(true);
      const connectionValues = heard
        .filter((event) => event.type === '@xstate.snapshot' && names.get(event.sessionId) === 'connection')
        .map((event) => event.value);
      expect(connectionValues).toContain('connected');
      expect(connectionValues.at(-1)).toBe('idle');
      // Each entity reaches the inspector with its whole lifecycle, as sizes and statuses: the
      // tool call's last snapshot is its final state, and no snapshot carries whole texts.
      const toolCall = heard
        .filter((event) => event.type === '@xstate.snapshot' && names.get(event.sessionId) === 'toolCall:tool-1')
        .at(-1);
      expect(toolCall).toMatchObject({
        value: 'completed',
        context: { entity: { id: 'tool-1', status: 'completed' } },
      });
      for (const event of heard) expect(JSON.stringify(event.context ?? null).length).toBeLessThan(2_000);
      expect(errors).toEqual([]);
    } finally {
      await context.close();
    }
  }, 120_000);
});

/** What the stand-in inspector window kept of each message: the inspection event's essentials. */
interface HeardEvent {
  type: string;
  sessionId: string;
  /** An actor's name (`@xstate.actor`): its id, or its machine's id when it has none of its own. */
  name?: string;
  /** A snapshot's state value (`@xstate.snapshot`). */
  value?: unknown;
  /** The actor's context in a snapshot, as `sanitizeInspection` lets the inspector see it. */
  context?: unknown;
  /** The actor's parent (`@xstate.actor`). */
  parentId?: string;
}

/**
 * Stands in for https://stately.ai/inspect, which this machine cannot reach: it says
 * `@statelyai.connected` to the page that opened it, as the real inspector does, and keeps
 * what the page sends it.
 */
const INSPECTOR_STAND_IN = `<!doctype html><title>inspector stand-in</title><script>
  window.heard = [];
  addEventListener('message', ({ data }) => {
    if (typeof data !== 'object' || data === null || typeof data._version !== 'string') return;
    window.heard.push({
      type: data.type,
      sessionId: data.sessionId,
      name: data.name,
      value: data.snapshot?.value,
      context: data.snapshot?.context,
      parentId: data.parentId,
    });
  });
  window.opener.postMessage({ type: '@statelyai.connected' }, '*');
</script>`;
