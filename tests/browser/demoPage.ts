import { mkdir } from 'node:fs/promises';
import type { Browser, Page } from 'playwright-core';
import { type DemoServer, startDemoServer } from '../../examples/demo/server';
import { sharedDemoPage } from '../support/sharedDemoPage';

import { launchChromium, SCREENSHOTS } from './chromium';

export { browserTestsEnabled, SCREENSHOTS, screenshotOf } from './chromium';

export interface DemoPage {
  server: DemoServer;
  page: Page;
  close(): Promise<void>;
}

/**
 * Starts the demo server on the page built for this run (recorded endpoints, never a real
 * service, whatever this shell's environment holds) and opens one Chromium page. Page errors
 * and console errors go to `pageErrors`; `onPage` can listen to more.
 */
export async function openDemoPage(
  prefix: string,
  pageErrors: string[],
  onPage: (page: Page) => void = () => {},
): Promise<DemoPage> {
  const demoPage = await sharedDemoPage(prefix);
  await mkdir(SCREENSHOTS, { recursive: true });
  const server = await startDemoServer({ port: 0, outDir: demoPage.directory, build: false, env: {} });
  let browser: Browser | undefined;
  try {
    browser = await launchChromium();
    const page = await browser.newPage({ viewport: { width: 1440, height: 1000 } });
    // Waits for the page are ceilings: a loaded machine only makes them slower.
    page.setDefaultTimeout(60_000);
    page.on('pageerror', (error) => pageErrors.push(error.message));
    page.on('console', (message) => {
      if (message.type() === 'error') pageErrors.push(message.text());
    });
    onPage(page);
    const opened = browser;
    return {
      server,
      page,
      async close() {
        await opened.close();
        await server.close();
        await demoPage.release();
      },
    };
  } catch (error) {
    await browser?.close();
    await server.close();
    await demoPage.release();
    throw error;
  }
}

/** Types a prompt into the page's Sender and sends it. */
export async function sendPrompt(page: Page, prompt: string): Promise<void> {
  await page.fill('.ant-sender textarea', prompt);
  await page.press('.ant-sender textarea', 'Enter');
}

/** The page's chat bubbles of one role. */
export const bubblesOf = (page: Page, role: 'user' | 'ai') =>
  page.locator(`[data-testid="bubble"][data-role="${role}"]`);

/** The `data-status` of each element (runs, tool calls), for `locator.evaluateAll`. */
export function runStatuses(items: Element[]): Array<string | undefined> {
  return items.map((item) => (item as HTMLElement).dataset.status);
}
