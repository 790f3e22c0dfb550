// Per-token render cost of useXChat with 10 and with 1,000 earlier messages in the thread,
// in Chromium (playwright-core), timed by React's Profiler in a production build
// (react-dom/profiling). The page (tokenCost.tsx) is bundled with esbuild and served from a
// loopback server; every run is a fresh load of it. The thread sizes take turns run by run,
// so a noisy moment of the machine falls on both alike; the first round is the warm-up.
//
// Two streams: 5,000 tokens in bursts, one burst per animation frame as a network delivers
// them, for the Profiler's figures and the commit count; and the same tokens all at once,
// for the wall time per token (store, flush and commit, without the frame pacing).
//
// `node --import tsx bench/browser/tokenCost.ts` prints a table; `--json` prints the
// figures as JSON (what bench/run.ts reads). CHROMIUM_PATH overrides /usr/bin/chromium.
import { existsSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { chromium } from 'playwright-core';
import type { TokenCostResult } from './tokenCost.tsx';

export const TOKEN_COST_THREADS = [10, 1_000] as const;
export const TOKEN_COST_TOKENS = 5_000;
/** Tokens a burst: one burst per animation frame, 600 tokens a second at 60 frames. */
export const TOKEN_COST_PER_FRAME = 10;
export const TOKEN_COST_RUNS = 5;
/** The target: per-token cost with 1,000 earlier messages at most this times the cost with 10. */
export const TOKEN_COST_TARGET = 1.2;
/**
 * The list variants `npm run bench` measures (`--lists=grouped` picks some): `grouped` is the
 * recommended way, the flat lists are there to compare.
 */
export const TOKEN_COST_LISTS: readonly TokenCostList[] = ['grouped', 'subscribed', 'props'];

export type TokenCostList = 'subscribed' | 'props' | 'grouped';

/** The medians of one list and thread size. */
export interface TokenCostRow {
  list: TokenCostList;
  n: number;
  runs: number;
  /** Profiler actualDuration / tokens, µs, paced stream. */
  actualMicrosPerToken: number;
  commits: number;
  /** Chromium's main-thread task time (script, style, layout, paint) / tokens, µs, paced stream. */
  taskMicrosPerToken: number;
  /** Chromium's script time / tokens, µs, paced stream: the store, the flushes, the selectors and React. */
  scriptMicrosPerToken: number;
  /** Renders a commit, paced stream. */
  listRendersPerCommit: number;
  bubbleRendersPerCommit: number;
  /** Wall time / tokens, µs, the tokens all at once. */
  wallMicrosPerToken: number;
  /** Profiler actualDuration / tokens, µs, the tokens all at once. */
  burstActualMicrosPerToken: number;
  burstCommits: number;
}

export interface TokenCostReport {
  tokens: number;
  perFrame: number;
  chromium: string;
  rows: TokenCostRow[];
  /** cost(1,000) / cost(10) of each list measured, from the paced stream's Profiler medians. */
  ratios: Partial<Record<TokenCostList, number>>;
}

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

function median(values: readonly number[]): number {
  return [...values].sort((a, b) => a - b)[Math.floor((values.length - 1) / 2)] as number;
}

async function bundlePage(): Promise<string> {
  const bundled = await build({
    entryPoints: [fileURLToPath(new URL('./tokenCost.tsx', import.meta.url))],
    bundle: true,
    format: 'esm',
    platform: 'browser',
    jsx: 'automatic',
    minify: true,
    // The production build of react-dom that keeps <Profiler> timing.
    alias: { 'react-dom/client': 'react-dom/profiling' },
    define: { 'process.env.NODE_ENV': '"production"' },
    write: false,
    logLevel: 'silent',
  });
  return bundled.outputFiles[0]?.text ?? '';
}

type TimedResult = TokenCostResult & { taskMs: number; scriptMs: number };

export async function measureTokenCost(
  runs = TOKEN_COST_RUNS,
  lists: readonly TokenCostList[] = TOKEN_COST_LISTS,
): Promise<TokenCostReport> {
  const script = await bundlePage();
  const server = createServer((request, response) => {
    if (request.url === '/app.js') {
      response.writeHead(200, { 'content-type': 'text/javascript' });
      return void response.end(script);
    }
    response.writeHead(200, { 'content-type': 'text/html' });
    response.end(
      '<!doctype html><title>token cost</title><div id="root"></div><script type="module" src="/app.js"></script>',
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking'],
  });
  try {
    const page = await browser.newPage();
    const cdp = await page.context().newCDPSession(page);
    await cdp.send('Performance.enable');
    /** Chromium's cumulative main-thread task and script time, ms. */
    const mainThread = async () => {
      const { metrics } = await cdp.send('Performance.getMetrics');
      const metric = (name: string) => (metrics.find((entry) => entry.name === name)?.value ?? 0) * 1000;
      return { taskMs: metric('TaskDuration'), scriptMs: metric('ScriptDuration') };
    };
    const load = async (list: TokenCostList, n: number, perFrame: number): Promise<TimedResult> => {
      const query = new URLSearchParams({
        list,
        n: String(n),
        tokens: String(TOKEN_COST_TOKENS),
        perFrame: String(perFrame),
      });
      await page.goto(`${origin}/?${query}`);
      await page.waitForFunction(() => window.tokenCostStart !== undefined || window.tokenCostError !== undefined, {
        timeout: 60_000,
      });
      const error = await page.evaluate(() => window.tokenCostError);
      if (error !== undefined) throw new Error(`token cost page (${query}): ${error}`);
      const before = await mainThread();
      const result = await page.evaluate(() => window.tokenCostStart?.());
      const after = await mainThread();
      if (result === undefined) throw new Error(`token cost page (${query}): no result`);
      if (result.shownLength !== result.expectedLength)
        throw new Error(
          `token cost page (${query}): shows ${result.shownLength} characters of ${result.expectedLength}`,
        );
      return { ...result, taskMs: after.taskMs - before.taskMs, scriptMs: after.scriptMs - before.scriptMs };
    };
    const paced = new Map<string, TimedResult[]>();
    const burst = new Map<string, TimedResult[]>();
    const keep = (samples: Map<string, TimedResult[]>, result: TimedResult) => {
      const key = `${result.list}:${result.n}`;
      samples.set(key, [...(samples.get(key) ?? []), result]);
    };
    for (let round = 0; round < runs + 1; round += 1) {
      // Which size goes first alternates round by round.
      const threads = round % 2 === 0 ? [...TOKEN_COST_THREADS] : [...TOKEN_COST_THREADS].reverse();
      for (const list of lists) {
        for (const n of threads) {
          const pacedResult = await load(list, n, TOKEN_COST_PER_FRAME);
          const burstResult = await load(list, n, 0);
          if (round === 0) continue;
          keep(paced, pacedResult);
          keep(burst, burstResult);
        }
      }
    }
    const rows: TokenCostRow[] = [];
    for (const list of lists) {
      for (const n of TOKEN_COST_THREADS) {
        const pacedRuns = paced.get(`${list}:${n}`) ?? [];
        const burstRuns = burst.get(`${list}:${n}`) ?? [];
        const perToken = (milliseconds: number) => (milliseconds * 1000) / TOKEN_COST_TOKENS;
        rows.push({
          list,
          n,
          runs: pacedRuns.length,
          actualMicrosPerToken: median(pacedRuns.map((result) => perToken(result.actualMs))),
          commits: median(pacedRuns.map((result) => result.commits)),
          taskMicrosPerToken: median(pacedRuns.map((result) => perToken(result.taskMs))),
          scriptMicrosPerToken: median(pacedRuns.map((result) => perToken(result.scriptMs))),
          listRendersPerCommit: median(pacedRuns.map((result) => result.listRenders / result.commits)),
          bubbleRendersPerCommit: median(pacedRuns.map((result) => result.bubbleRenders / result.commits)),
          wallMicrosPerToken: median(burstRuns.map((result) => perToken(result.wallMs))),
          burstActualMicrosPerToken: median(burstRuns.map((result) => perToken(result.actualMs))),
          burstCommits: median(burstRuns.map((result) => result.commits)),
        });
      }
    }
    const costOf = (list: TokenCostList, n: number) =>
      rows.find((row) => row.list === list && row.n === n)?.actualMicrosPerToken ?? Number.NaN;
    const [small, large] = TOKEN_COST_THREADS;
    const ratios: TokenCostReport['ratios'] = {};
    for (const list of lists) ratios[list] = costOf(list, large) / costOf(list, small);
    return { tokens: TOKEN_COST_TOKENS, perFrame: TOKEN_COST_PER_FRAME, chromium: browser.version(), rows, ratios };
  } finally {
    await browser.close();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}

/** What each list variant is, for the tables. */
export const TOKEN_COST_LIST_NAMES: Record<TokenCostList, string> = {
  subscribed: 'list of ids; memoized bubbles with useXChatMessage',
  props: 'list maps `messages`; memoized bubbles given the AgentMessageInfo',
  grouped: 'XChatMessageList: memoized groups of 32 in sections of 8; memoized bubbles with useXChatMessage',
};

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  // The page is a production build (see `define` in bundlePage); so is this process.
  process.env.NODE_ENV = 'production';
  if (!existsSync(CHROMIUM)) {
    console.error(`No Chromium at ${CHROMIUM}: the token cost benchmark needs one (apt-get install -y chromium).`);
    process.exit(2);
  }
  const listsArgument = process.argv.find((argument) => argument.startsWith('--lists='));
  const lists = listsArgument === undefined ? TOKEN_COST_LISTS : (listsArgument.slice(8).split(',') as TokenCostList[]);
  const runsArgument = process.argv.find((argument) => argument.startsWith('--runs='));
  const report = await measureTokenCost(
    runsArgument === undefined ? TOKEN_COST_RUNS : Number(runsArgument.slice(7)),
    lists,
  );
  if (process.argv.includes('--json')) {
    console.log(JSON.stringify(report));
  } else {
    const fixed = (value: number, digits: number) => value.toFixed(digits);
    console.log(
      `Chromium ${report.chromium}; ${report.tokens} tokens, ${report.perFrame} a frame (paced) or all at once (burst); medians of ${report.rows[0]?.runs} runs.`,
    );
    console.log(
      'list       | earlier | µs/token (Profiler, paced) | commits | list renders/commit | bubble renders/commit | µs/token main thread (paced) | µs/token script (paced) | µs/token wall (burst) | µs/token Profiler (burst) | commits (burst)',
    );
    for (const row of report.rows)
      console.log(
        [
          row.list.padEnd(10),
          String(row.n).padStart(7),
          fixed(row.actualMicrosPerToken, 2).padStart(26),
          String(row.commits).padStart(7),
          fixed(row.listRendersPerCommit, 2).padStart(19),
          fixed(row.bubbleRendersPerCommit, 2).padStart(21),
          fixed(row.taskMicrosPerToken, 2).padStart(28),
          fixed(row.scriptMicrosPerToken, 2).padStart(23),
          fixed(row.wallMicrosPerToken, 2).padStart(21),
          fixed(row.burstActualMicrosPerToken, 2).padStart(25),
          String(row.burstCommits).padStart(15),
        ].join(' | '),
      );
    for (const list of lists)
      console.log(
        `cost(1000) / cost(10), ${list}: ${fixed(report.ratios[list] ?? Number.NaN, 2)} (target ≤ ${TOKEN_COST_TARGET})`,
      );
  }
  process.exit(0);
}
