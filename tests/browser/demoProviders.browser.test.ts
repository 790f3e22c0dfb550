// Each of the demo page's four wire providers in Chromium, from a fresh conversation: the
// local runtime in the page, and the demo server's OpenAI-compatible, Anthropic and AG-UI
// endpoints replaying their recordings. For each, one prompt, and the page shows what the
// wire streamed: the answer's text growing in its bubble, the reasoning in the reasoning
// panel, and a tool card with its arguments in the tool calls panel.
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEMO_PROVIDER_LABELS, type DemoProviderId } from '../../examples/demo/app/demoProviders';
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

/** One tool card as the tool calls panel shows it. */
interface ToolCard {
  name: string;
  status: string;
  arguments: string;
  /** The result, parsed from the card; undefined when the card shows none. */
  result?: unknown;
  /** The error the card shows, if any. */
  error?: string;
}

interface ProviderScenario {
  providerId: Exclude<DemoProviderId, 'host'>;
  prompt: string;
  /** Every AI bubble once the scenario has played out, in order. */
  bubbles: string[];
  /** The bubble whose text streams in enough deltas to be seen part-way (the others may arrive in one commit). */
  watchedBubble: number;
  reasoning: string[];
  /** Newest first, as the panel lists them. */
  toolCards: ToolCard[];
  /** The runs panel's statuses at the end. */
  runs: string[];
  /** What the user does before the scenario ends (answering AG-UI's interrupt). */
  answer?: (page: Page) => Promise<void>;
}

const WEATHER_CARDS: ToolCard[] = [
  { name: 'get_weather', status: 'completed', arguments: '{"city":"Rome"}', result: { city: 'Rome', celsius: 21 } },
  { name: 'get_weather', status: 'completed', arguments: '{"city":"Paris"}', result: { city: 'Paris', celsius: 14 } },
];
const TOOL_ANSWERS = 'Thanks, the tools answered: {"city":"Paris","celsius":14}; {"city":"Rome","celsius":21}.';

const SCENARIOS: ProviderScenario[] = [
  {
    // The first turn of the page's local script; it stops at the retryable Rome lookup.
    providerId: 'local',
    prompt: 'What is the weather in Paris and Rome? Email it to the team.',
    bubbles: ['Let me check the weather in both cities.'],
    watchedBubble: 0,
    reasoning: ['The user wants two cities; call the weather tool twice, then email.'],
    toolCards: [
      { name: 'get_weather', status: 'failed', arguments: '{"city":"Rome"}', error: 'upstream timeout (timeout)' },
      {
        name: 'get_weather',
        status: 'completed',
        arguments: '{"city":"Paris"}',
        result: { city: 'Paris', celsius: 14 },
      },
    ],
    // Waiting for the user's Retry.
    runs: ['running'],
  },
  {
    // `reasoning_content` deltas, text, two `get_weather` calls the page runs, and the continuation.
    providerId: 'openai',
    prompt: 'Weather in Paris and Rome?',
    bubbles: ['Let me check both cities.', `${TOOL_ANSWERS} Both cities look fine for a walk today.`],
    watchedBubble: 1,
    reasoning: ['Two cities, two lookups.'],
    toolCards: WEATHER_CARDS,
    runs: ['completed', 'completed'],
  },
  {
    // A signed `thinking` block, a text block, two `tool_use` blocks, and the continuation.
    providerId: 'anthropic',
    prompt: 'Weather in Paris and Rome?',
    bubbles: ['Let me check both cities.', `${TOOL_ANSWERS} Pack a light jacket for Paris.`],
    watchedBubble: 1,
    reasoning: ['Two cities, two lookups.'],
    toolCards: WEATHER_CARDS,
    runs: ['completed', 'completed'],
  },
  {
    // REASONING_* events, text, a `delete_files` call behind an interrupt, then the resumed run.
    providerId: 'agui',
    prompt: 'Free some disk space',
    bubbles: [
      'I found 12 log files older than 30 days. Deleting them needs your approval.',
      'Done: 12 files matching logs/*.log deleted, 2.1 GB freed.',
    ],
    watchedBubble: 0,
    reasoning: ['Disk is 91% full; the logs folder is the largest. Deleting needs consent.'],
    toolCards: [
      {
        name: 'delete_files',
        status: 'completed',
        arguments: '{"glob":"logs/*.log"}',
        result: 'deleted 12 files matching logs/*.log',
      },
    ],
    runs: ['completed', 'completed'],
    answer: async (page) => {
      const approve = page.getByRole('button', { name: 'Approve', exact: true });
      await approve.waitFor({ timeout: 15_000 });
      await approve.click();
    },
  },
];

/** What the page showed over time: each AI bubble's and each reasoning block's distinct texts, in order. */
interface SeenTexts {
  bubbles: string[][];
  reasoning: string[][];
}

/**
 * Runs in the page before its scripts: a MutationObserver notes every distinct text each AI
 * bubble and each reasoning block shows, so a text seen only part-way is on record even if
 * no poll from the test caught it.
 */
function recordSeenTexts(): void {
  const seen: SeenTexts = { bubbles: [], reasoning: [] };
  (window as unknown as { seenTexts: SeenTexts }).seenTexts = seen;
  const note = (selector: string, histories: string[][]) => {
    document.querySelectorAll(selector).forEach((element, index) => {
      const history = histories[index] ?? [];
      histories[index] = history;
      const text = element.textContent ?? '';
      if (history.at(-1) !== text) history.push(text);
    });
  };
  new MutationObserver(() => {
    note('[data-testid="bubble"][data-role="ai"]', seen.bubbles);
    note('[data-testid="reasoning"] .ant-think-content', seen.reasoning);
  }).observe(document, { subtree: true, childList: true, characterData: true });
}

/** The cards of the tool calls panel, newest first. */
async function toolCardsOf(page: Page): Promise<ToolCard[]> {
  const cards = page.locator('.ant-thought-chain-node', { has: page.locator('[data-testid="tool-call"]') });
  return cards.evaluateAll((nodes) =>
    nodes.map((node) => {
      const title = node.querySelector<HTMLElement>('[data-testid="tool-call"]');
      const [args, result] = Array.from(node.querySelectorAll('pre.demo-code'), (pre) => pre.textContent ?? '');
      const error = node.querySelector('.ant-typography-danger')?.textContent;
      return {
        name: title?.textContent ?? '',
        status: title?.dataset.status ?? '',
        arguments: args ?? '',
        ...(result === undefined ? {} : { result: JSON.parse(result) as unknown }),
        ...(error == null ? {} : { error }),
      };
    }),
  );
}

describe.runIf(browserTestsEnabled)('each wire provider of the demo page in Chromium', () => {
  let demo: DemoPage;
  let server: DemoServer;
  let page: Page;
  const pageErrors: string[] = [];

  beforeAll(async () => {
    demo = await openDemoPage('agentstate-demo-providers-', pageErrors, (opened) => {
      void opened.addInitScript(recordSeenTexts);
    });
    ({ server, page } = demo);
  }, 120_000);

  afterAll(() => demo?.close());

  /** A fresh conversation with `providerId` selected. */
  async function startConversation(providerId: DemoProviderId): Promise<void> {
    // Cleared while no page of the demo's origin is open, so nothing saves the last
    // conversation back between the clear and the next load.
    await page.goto('about:blank');
    const devtools = await page.context().newCDPSession(page);
    await devtools.send('Storage.clearDataForOrigin', {
      origin: new URL(server.url).origin,
      storageTypes: 'local_storage',
    });
    await devtools.detach();
    await page.goto(server.url);
    await page.getByText(DEMO_PROVIDER_LABELS[providerId], { exact: true }).click();
    expect(await page.locator('.ant-segmented-item-selected').textContent()).toBe(DEMO_PROVIDER_LABELS[providerId]);
  }

  it.each(SCENARIOS)(
    '$providerId: the text streams in, the reasoning and the tool cards show',
    async (scenario) => {
      await startConversation(scenario.providerId);
      await sendPrompt(page, scenario.prompt);
      await scenario.answer?.(page);

      const bubbles = bubblesOf(page, 'ai');
      await expect.poll(() => bubbles.allTextContents(), { timeout: 15_000 }).toEqual(scenario.bubbles);
      await expect.poll(() => toolCardsOf(page), { timeout: 15_000 }).toEqual(scenario.toolCards);
      const reasoning = page.locator('[data-testid="reasoning"]');
      await expect
        .poll(() => reasoning.locator('.ant-think-status-text').allTextContents())
        .toEqual(scenario.reasoning.map(() => 'Thought'));
      expect(await reasoning.locator('.ant-think-content').allTextContents()).toEqual(scenario.reasoning);
      expect(await bubblesOf(page, 'user').allTextContents()).toEqual([scenario.prompt]);
      await expect.poll(() => page.locator('[data-testid="run"]').evaluateAll(runStatuses)).toEqual(scenario.runs);
      expect(await page.textContent('[data-testid="issues"]')).toBe('0 issues');

      // Mid-stream: the watched bubble showed its text part-way before the whole of it, growing
      // each time; the reasoning grew into its final text the same way.
      const seen = await page.evaluate(() => (window as unknown as { seenTexts: SeenTexts }).seenTexts);
      const final = scenario.bubbles[scenario.watchedBubble] ?? '';
      const watched = seen.bubbles[scenario.watchedBubble] ?? [];
      expect(watched.at(-1)).toBe(final);
      const partial = watched.slice(0, -1).filter((text) => text !== '');
      expect(partial.length).toBeGreaterThan(0);
      expect(
        partial.every((text, index) => final.startsWith(text) && text.length > (partial[index - 1]?.length ?? 0)),
      ).toBe(true);
      expect(seen.reasoning.map((history) => history.at(-1))).toEqual(scenario.reasoning);
      expect(seen.reasoning.flat().every((text) => scenario.reasoning.some((r) => r.startsWith(text)))).toBe(true);

      await screenshotOf(page, `providers-${scenario.providerId}`);
      await page
        .locator('[data-testid="reasoning"]')
        .first()
        .screenshot({ path: join(SCREENSHOTS, `providers-${scenario.providerId}-reasoning.png`) });
      expect(pageErrors).toEqual([]);
    },
    30_000,
  );
});
