// Debian's Chromium through playwright-core, as every browser test launches it, and where they
// leave their screenshots. Apart from demoPage.ts, which loads the demo server and Vite.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type Browser, chromium, type Page } from 'playwright-core';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const required = process.env.AGENT_MACHINES_BROWSER_TESTS === 'required';
const available = existsSync(CHROMIUM);
if (!available && !required) {
  console.warn(`Browser tests skipped: no Chromium at ${CHROMIUM} (apt-get install -y chromium).`);
}

/** Whether the browser tests run: Chromium is there, or `AGENT_MACHINES_BROWSER_TESTS=required` (then its absence fails them). */
export const browserTestsEnabled = available || required;

/** Headless Chromium, without a sandbox, a GPU or background requests. */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking'],
  });
}

/** The git-ignored folder the browser tests save their screenshots in. */
export const SCREENSHOTS = fileURLToPath(new URL('./screenshots/', import.meta.url));

/** Saves the whole page as `screenshots/<name>.png`. */
export const screenshotOf = (page: Page, name: string) =>
  page.screenshot({ path: join(SCREENSHOTS, `${name}.png`), fullPage: true });
