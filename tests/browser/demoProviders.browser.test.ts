// Each of the demo page's four wire providers in Chromium, from a fresh conversation: the
// local runtime in the page, and the demo server's OpenAI-compatible, Anthropic and AG-UI
// endpoints replaying their recordings. For each, one prompt, and the page shows what the
// wire streamed: the answer's text growing in its bubble, the reasoning in the reasoning
// panel, a tool card with its arguments in the tool calls panel, the tasks' progress. Then
// Reject on an approval, with the local runtime and with AG-UI's interrupt.
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
  /**
   * The bubble that must be seen part-way before its whole text: the local runtime's, whose
   * deltas come on the page's own timers. A wire's frames, 60 ms apart, may reach a page starved
   * of CPU in one read (seen in CI beside the other files), so for them only what was seen is
   * checked: every bubble's texts only ever grew into its final text.
   */
  watchedBubble?: number;
  reasoning: string[];
  /** Newest first, as the panel lists them. */
  toolCards: ToolCard[];
  /**
   * The final arguments of the tool calls whose cards must show them part-way first: the local
   * runtime's, whose deltas come on the page's own timers. A wire's frames, 50-60 ms apart, may
   * reach a busy page in one read, so for them only what was seen is checked.
   */
  streamedArguments: string[];
  /**
   * Each task's title and the percents its bar must show, in order (a wire's may show fewer
   * when its frames arrive together); every task ends completed.
   */
  tasks: Array<{ title: string; percents: number[] }>;
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
    streamedArguments: ['{"city":"Paris"}', '{"city":"Rome"}'],
    tasks: [{ title: 'Look up two forecasts', percents: [0, 25, 50, 75, 100] }],
    // Waiting for the user's Retry.
    runs: ['running'],
  },
  {
    // `reasoning_content` deltas, text, two `get_weather` calls the page runs, and the continuation.
    providerId: 'openai',
    prompt: 'Weather in Paris and Rome?',
    bubbles: ['Let me check both cities.', `${TOOL_ANSWERS} Both cities look fine for a walk today.`],
    reasoning: ['Two cities, two lookups.'],
    toolCards: WEATHER_CARDS,
    streamedArguments: [],
    tasks: [],
    runs: ['completed', 'completed'],
  },
  {
    // A signed `thinking` block, a text block, two `tool_use` blocks, and the continuation.
    providerId: 'anthropic',
    prompt: 'Weather in Paris and Rome?',
    bubbles: ['Let me check both cities.', `${TOOL_ANSWERS} Pack a light jacket for Paris.`],
    reasoning: ['Two cities, two lookups.'],
    toolCards: WEATHER_CARDS,
    streamedArguments: [],
    tasks: [],
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
    reasoning: ['Disk is 91% full; the logs folder is the largest. Deleting needs consent.'],
    toolCards: [
      {
        name: 'delete_files',
        status: 'completed',
        arguments: '{"glob":"logs/*.log"}',
        result: 'deleted 12 files matching logs/*.log',
      },
    ],
    streamedArguments: [],
    // An AG-UI step is a task without progress: 0 % while it runs (for 50 ms), 100 % once finished.
    tasks: [{ title: 'Scan the logs folder', percents: [100] }],
    runs: ['completed', 'completed'],
    answer: async (page) => {
      const approve = page.getByRole('button', { name: 'Approve', exact: true });
      await approve.waitFor({ timeout: 60_000 });
      await approve.click();
    },
  },
  {
    // The demo server's AI SDK backend: `streamText` from the `ai` package over a scripted model,
    // its UI message stream read by createAISDKAgentProvider. The weather runs on the server; the
    // email waits for the approval, which the continuation's POST carries (`approval-responded`).
    providerId: 'aisdk',
    prompt: 'What is the weather in Paris? Email it to the team.',
    bubbles: [
      'Let me check the weather in Paris.',
      'It is 14 °C in Paris. I will email the team.',
      'Email sent to team@example.com.',
    ],
    reasoning: ['Look the weather up, then ask before emailing the team.'],
    toolCards: [
      {
        name: 'send_email',
        status: 'completed',
        arguments: '{"to":"team@example.com","body":"Paris: 14 °C."}',
        result: { sent: true, to: 'team@example.com' },
      },
      {
        name: 'get_weather',
        status: 'completed',
        arguments: '{"city":"Paris"}',
        result: { city: 'Paris', celsius: 14 },
      },
    ],
    streamedArguments: [],
    // A step (`start-step` to `finish-step`) is a task, as an AG-UI step is: one for each model call.
    tasks: [
      { title: 'Step 1', percents: [100] },
      { title: 'Step 2', percents: [100] },
      { title: 'Step 1', percents: [100] },
    ],
    runs: ['completed', 'completed'],
    answer: async (page) => {
      const approve = page.getByRole('button', { name: 'Approve', exact: true });
      await approve.waitFor({ timeout: 60_000 });
      await approve.click();
    },
  },
];

/**
 * What the page showed over time, each element's distinct texts in order: the AI bubbles, the
 * reasoning blocks, the tool cards' arguments and the tasks' progress percents.
 */
interface SeenTexts {
  bubbles: string[][];
  reasoning: string[][];
  /** One history per tool card, in the order the cards appeared (the panel lists them newest first). */
  toolArguments: string[][];
  tasks: string[][];
}

/**
 * Runs in the page before its scripts: a MutationObserver notes every distinct text each
 * element of interest shows, so a text seen only part-way is on record even if no poll from
 * the test caught it.
 */
function recordSeenTexts(): void {
  const seen: SeenTexts = { bubbles: [], reasoning: [], toolArguments: [], tasks: [] };
  (window as unknown as { seenTexts: SeenTexts }).seenTexts = seen;
  const push = (history: string[], text: string) => {
    if (history.at(-1) !== text) history.push(text);
  };
  const note = (selector: string, histories: string[][], read = (element: Element) => element.textContent ?? '') => {
    document.querySelectorAll(selector).forEach((element, index) => {
      const history = histories[index] ?? [];
      histories[index] = history;
      push(history, read(element));
    });
  };
  // Tool cards are listed newest first, so a card's index moves: its history follows the element.
  const cardHistories = new Map<Element, string[]>();
  const noteArguments = () => {
    for (const card of Array.from(document.querySelectorAll('.ant-thought-chain-node'))) {
      const args = card.querySelector('pre.demo-code');
      if (args === null) continue;
      let history = cardHistories.get(card);
      if (history === undefined) {
        history = [];
        cardHistories.set(card, history);
        seen.toolArguments.push(history);
      }
      push(history, args.textContent ?? '');
    }
  };
  new MutationObserver(() => {
    note('[data-testid="bubble"][data-role="ai"]', seen.bubbles);
    note('[data-testid="reasoning"] .ant-think-content', seen.reasoning);
    note('[data-testid="task"] [role="progressbar"]', seen.tasks, (bar) => bar.getAttribute('aria-valuenow') ?? '');
    noteArguments();
  }).observe(document, { subtree: true, childList: true, characterData: true, attributes: true });
}

/** Whether `history` ends at `final` and each text before it (blanks aside) was a longer prefix of it. */
function onlyGrewInto(history: readonly string[], final: string): boolean {
  const partial = history.slice(0, -1).filter((text) => text.trim() !== '');
  return (
    history.at(-1) === final &&
    partial.every((text, index) => final.startsWith(text) && text.length > (partial[index - 1]?.length ?? 0))
  );
}

/** Whether `history` grew into `final` through at least one part shown before it. */
function grewInto(history: readonly string[], final: string): boolean {
  return onlyGrewInto(history, final) && history.slice(0, -1).some((text) => text.trim() !== '');
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
        name: title?.querySelector('code')?.textContent ?? '',
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
    demo = await openDemoPage('agent-machines-demo-providers-', pageErrors, (opened) => {
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
      await expect.poll(() => bubbles.allTextContents(), { timeout: 60_000 }).toEqual(scenario.bubbles);
      await expect.poll(() => toolCardsOf(page), { timeout: 60_000 }).toEqual(scenario.toolCards);
      const reasoning = page.locator('[data-testid="reasoning"]');
      await expect
        .poll(() => reasoning.locator('.ant-think-status-text').allTextContents())
        .toEqual(scenario.reasoning.map(() => 'Thought'));
      expect(await reasoning.locator('.ant-think-content').allTextContents()).toEqual(scenario.reasoning);
      expect(await bubblesOf(page, 'user').allTextContents()).toEqual([scenario.prompt]);
      await expect.poll(() => page.locator('[data-testid="run"]').evaluateAll(runStatuses)).toEqual(scenario.runs);
      expect(await page.textContent('[data-testid="issues"]')).toBe('0 issues');

      // Mid-stream: each bubble's text only ever grew into its final text, and the watched one
      // showed it part-way first; the reasoning grew into its final text the same way.
      const seen = await page.evaluate(() => (window as unknown as { seenTexts: SeenTexts }).seenTexts);
      expect(seen.bubbles.map((history) => history.at(-1))).toEqual(scenario.bubbles);
      for (const history of seen.bubbles) {
        const final = history.at(-1) ?? '';
        expect(onlyGrewInto(history, final), JSON.stringify(history)).toBe(true);
      }
      if (scenario.watchedBubble !== undefined) {
        const watched = seen.bubbles[scenario.watchedBubble] ?? [];
        expect(grewInto(watched, scenario.bubbles[scenario.watchedBubble] ?? ''), JSON.stringify(watched)).toBe(true);
      }
      expect(seen.reasoning.map((history) => history.at(-1))).toEqual(scenario.reasoning);
      expect(seen.reasoning.flat().every((text) => scenario.reasoning.some((r) => r.startsWith(text)))).toBe(true);

      // The tool cards' arguments only ever grew into their final text; the local runtime's
      // showed it part-way (`{"city":`) before the whole.
      // Cards of one turn may first show in either order: each card's history is its own.
      const finalArguments = seen.toolArguments.map((history) => history.at(-1) ?? '');
      expect(finalArguments.sort()).toEqual(scenario.toolCards.map((card) => card.arguments).sort());
      for (const history of seen.toolArguments) {
        const final = history.at(-1) ?? '';
        expect(history.every((text) => text.trim() === '' || final.startsWith(text))).toBe(true);
      }
      for (const args of scenario.streamedArguments) {
        expect(seen.toolArguments.some((history) => grewInto(history, args))).toBe(true);
      }
      // The tasks panel: each bar went up (part-way before the end where it has steps) through the task's percents,
      // and its task ended completed. Two updates that land in one frame are drawn once (the
      // hook renders once per frame), so which intermediate percents a loaded machine shows
      // varies (and a wire may show more than the scenario names); that the bar only rises and ends full does not.
      expect(seen.tasks).toHaveLength(scenario.tasks.length);
      scenario.tasks.forEach((task, index) => {
        const shown = (seen.tasks[index] ?? []).map(Number);
        expect(shown.every((percent, at) => at === 0 || percent > (shown[at - 1] ?? 0))).toBe(true);
        expect(shown.at(-1)).toBe(task.percents.at(-1));
        if (task.percents.length > 1) expect(shown.length).toBeGreaterThan(1);
      });
      const tasks = page.locator('[data-testid="task"]');
      expect(await tasks.allTextContents()).toEqual(scenario.tasks.map((task) => task.title));
      expect(await tasks.evaluateAll(runStatuses)).toEqual(scenario.tasks.map(() => 'completed'));

      await screenshotOf(page, `providers-${scenario.providerId}`);
      await page
        .locator('[data-testid="reasoning"]')
        .first()
        .screenshot({ path: join(SCREENSHOTS, `providers-${scenario.providerId}-reasoning.png`) });
      expect(pageErrors).toEqual([]);
    },
    180_000,
  );

  /** The approval card's decision tag, once it is resolved. */
  const decisionOf = async (page: Page) => {
    const approval = page.locator('[data-testid="approval"]');
    await expect.poll(() => approval.getAttribute('data-status'), { timeout: 60_000 }).toBe('resolved');
    return approval.locator('.ant-tag').textContent();
  };

  it('local: Reject stops the script at the approval; the run completes without the forecast or the email', async () => {
    await startConversation('local');
    await sendPrompt(page, 'What is the weather in Paris and Rome? Email it to the team.');
    const retry = page.getByRole('button', { name: 'Retry' });
    await retry.waitFor({ timeout: 60_000 });
    await retry.click();
    const reject = page.getByRole('button', { name: 'Reject' });
    await reject.waitFor({ timeout: 60_000 });
    await reject.click();

    expect(await decisionOf(page)).toBe('rejected');
    await expect.poll(() => page.locator('[data-testid="run"]').evaluateAll(runStatuses)).toEqual(['completed']);
    // No step after the approval ran: no second answer, no artifact, no send_email.
    expect(await bubblesOf(page, 'ai').allTextContents()).toEqual(['Let me check the weather in both cities.']);
    expect(await page.locator('[data-testid="artifact"]').count()).toBe(0);
    expect(await toolCardsOf(page)).toEqual([
      { name: 'get_weather', status: 'completed', arguments: '{"city":"Rome"}', result: { city: 'Rome', celsius: 21 } },
      { name: 'get_weather', status: 'failed', arguments: '{"city":"Rome"}', error: 'upstream timeout (timeout)' },
      {
        name: 'get_weather',
        status: 'completed',
        arguments: '{"city":"Paris"}',
        result: { city: 'Paris', celsius: 14 },
      },
    ]);
    expect(await page.textContent('[data-testid="issues"]')).toBe('0 issues');
    await screenshotOf(page, 'providers-local-rejected');
    expect(pageErrors).toEqual([]);
  }, 180_000);

  it('AG-UI: Reject answers the interrupt; the resumed run leaves the files alone', async () => {
    await startConversation('agui');
    await sendPrompt(page, 'Free some disk space');
    const reject = page.getByRole('button', { name: 'Reject' });
    await reject.waitFor({ timeout: 60_000 });
    await reject.click();

    expect(await decisionOf(page)).toBe('rejected');
    await expect
      .poll(() => bubblesOf(page, 'ai').allTextContents(), { timeout: 60_000 })
      .toEqual([
        'I found 12 log files older than 30 days. Deleting them needs your approval.',
        'OK, I left the files alone.',
      ]);
    await expect
      .poll(() => page.locator('[data-testid="run"]').evaluateAll(runStatuses))
      .toEqual(['completed', 'completed']);
    expect(await toolCardsOf(page)).toEqual([
      {
        name: 'delete_files',
        status: 'completed',
        arguments: '{"glob":"logs/*.log"}',
        result: 'not run: the user said no',
      },
    ]);
    expect(await page.textContent('[data-testid="issues"]')).toBe('0 issues');
    await screenshotOf(page, 'providers-agui-rejected');
    expect(pageErrors).toEqual([]);
  }, 180_000);
});
