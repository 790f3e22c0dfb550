// `npm run bench`: the pipelines side by side in one process, entity scaling, checkpoint
// cost, the agent host under load and bundle sizes. Prints tables and writes bench/RESULTS.md.
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { bundleSize, statedBundles } from '../scripts/bundleSize';
import { redisClusterAvailable } from '../tests/support/redisCluster';
import {
  TOKEN_COST_LIST_NAMES,
  TOKEN_COST_LISTS,
  TOKEN_COST_TARGET,
  TOKEN_COST_THREADS,
  type TokenCostReport,
} from './browser/tokenCost';
import {
  CHECKPOINT_BUDGET_MS,
  CHECKPOINT_MIN_PAIRS,
  type CheckpointOverhead,
  measureCheckpointOverhead,
} from './checkpointOverhead';
import { AGUI_CLIENT_PIPELINE, floor, PIPELINES } from './pipelines';
import {
  type RedisClusterReport,
  redisClusterSection,
  redisClusterTarget,
  SCALE_OUT,
  scaleOutArguments,
} from './redisClusterReport';
import { type ServerLoadReport, serverLoadSection, serverLoadTarget } from './serverLoadReport';
import { createWorkload, encodeAgUI, encodeOpenAI, encodeUIMessageStream, storeWithEntities } from './workload';

const execFileAsync = promisify(execFile);
const gc = (globalThis as { gc?: () => void }).gc ?? (() => {});
const SIZES = [10_000, 50_000, 100_000];
const RUNS = 5;
/** @ag-ui/client gets its five runs at a size only while they fit in this... */
const CLIENT_BUDGET_MS = 300_000;
/** ...and one run, reported as one, while that fits in this; above it, the size is skipped. */
const CLIENT_SINGLE_RUN_MS = 150_000;

interface Measurement {
  median: number;
  runs: number;
}

/**
 * Runs once and says how long it took. No collection is forced before a timed run: a full
 * collection deoptimizes code specialized on objects that died with the previous run
 * (\`--trace-deopt\` shows about 15 "weak objects" deopts per run), so every run would
 * measure V8 optimizing the pipeline again, which a stream in an application does not
 * pay. The heap is collected once before each size's warm-up instead.
 */
async function timed(run: () => unknown): Promise<number> {
  const start = performance.now();
  await run();
  return performance.now() - start;
}

function median(samples: number[]): number {
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.floor((sorted.length - 1) / 2)] as number;
}

async function measure(run: () => unknown, options: { warmup: boolean; runs: number }): Promise<Measurement> {
  gc();
  // Two warm-up runs: the first size would otherwise measure the JIT as much as the code.
  if (options.warmup) {
    await run();
    await run();
  }
  const times: number[] = [];
  while (times.length < options.runs) times.push(await timed(run));
  return { median: median(times), runs: times.length };
}

/**
 * How far one run of a pipeline raises resident memory, measured in a fresh process
 * (bench/memory.ts): in this one, a heap grown by earlier pipelines hides it.
 */
async function peakRssRise(id: string, file: string): Promise<number> {
  const script = fileURLToPath(new URL('./memory.ts', import.meta.url));
  const args = ['--expose-gc', '--import', 'tsx', script, id, file];
  const { stdout } = await execFileAsync(process.execPath, args, { maxBuffer: 1 << 20 });
  return (JSON.parse(stdout) as { peakRiseMb: number }).peakRiseMb;
}

interface PipelineRow {
  size: number;
  name: string;
  /** The pipeline's name in bench/memory.ts, and the file of the bytes it reads. */
  memoryId: string;
  bytesFile?: string;
  peakRssMb?: number;
  frames: number;
  measurement: Measurement | undefined;
  floor: number;
  note?: string;
}

const rows: PipelineRow[] = [];
const checkpointRows: CheckpointOverhead[] = [];
const encoder = new TextEncoder();
/** The last @ag-ui/client median and its size, to project the next size's time. */
let aguiClientLastMedian = 0;
let aguiClientLastSize = 1;
/** The bytes of each size and format, for the memory runs in their own processes. */
const bytesDir = mkdtempSync(join(os.tmpdir(), 'agent-machines-bench-'));

/**
 * Runs the pipelines round-robin: every round runs each once, so a noisy moment of the
 * machine falls on all of them alike; the first two rounds are warm-up.
 */
async function measureSideBySide(
  pipelines: ReadonlyArray<{ name: string; run: () => unknown }>,
): Promise<Map<string, Measurement>> {
  const times = new Map<string, number[]>(pipelines.map((pipeline) => [pipeline.name, []]));
  gc();
  for (let round = 0; round < RUNS + 2; round += 1) {
    for (const pipeline of pipelines) {
      const elapsed = await timed(pipeline.run);
      if (round >= 2) times.get(pipeline.name)?.push(elapsed);
    }
  }
  const result = new Map<string, Measurement>();
  for (const [name, samples] of times) result.set(name, { median: median(samples), runs: samples.length });
  return result;
}

for (const size of SIZES) {
  const workload = createWorkload(size);
  const texts = { agui: encodeAgUI(workload), openai: encodeOpenAI(workload), ui: encodeUIMessageStream(workload) };
  const bytes = {
    agui: encoder.encode(texts.agui),
    openai: encoder.encode(texts.openai),
    ui: encoder.encode(texts.ui),
  };
  const frames = { agui: floor(texts.agui), openai: floor(texts.openai), ui: floor(texts.ui) };
  const files = {
    agui: join(bytesDir, `agui-${size}.sse`),
    openai: join(bytesDir, `openai-${size}.sse`),
    ui: join(bytesDir, `ui-${size}.sse`),
  };
  for (const format of ['agui', 'openai', 'ui'] as const) writeFileSync(files[format], bytes[format]);
  const pipelines = PIPELINES.map((spec) => ({
    ...spec,
    run: () => spec.run({ text: texts[spec.format], bytes: bytes[spec.format] }),
  }));
  const measured = await measureSideBySide(pipelines);
  // The pipeline with a checkpoint coordinator against the one without, in pairs of its own:
  // a ratio near 1 needs more runs than the round-robin above gives.
  for (const format of ['agui', 'openai'] as const)
    checkpointRows.push(await measureCheckpointOverhead(size, format, bytes[format]));
  const floorOf = (format: keyof typeof frames) =>
    (
      measured.get(
        pipelines.find((pipeline) => pipeline.format === format && pipeline.name.startsWith('floor'))?.name ?? '',
      ) as Measurement
    ).median;
  for (const pipeline of pipelines) {
    rows.push({
      size,
      name: pipeline.name,
      memoryId: pipeline.id,
      frames: frames[pipeline.format],
      bytesFile: files[pipeline.format],
      measurement: measured.get(pipeline.name),
      floor: floorOf(pipeline.format),
    });
  }
  // @ag-ui/client is quadratic, so it is measured apart, warmed up at the first size:
  // five runs while they fit in five minutes, else one run while it fits in two and a
  // half, else skipped. Its peak memory is measured only where it got five runs.
  const clientName = AGUI_CLIENT_PIPELINE.name;
  const projectedMs = aguiClientLastMedian * (size / aguiClientLastSize) ** 2;
  const clientRuns = RUNS * projectedMs <= CLIENT_BUDGET_MS ? RUNS : projectedMs <= CLIENT_SINGLE_RUN_MS ? 1 : 0;
  const clientRow: PipelineRow = {
    size,
    name: clientName,
    memoryId: AGUI_CLIENT_PIPELINE.id,
    frames: frames.agui,
    measurement: undefined,
    floor: floorOf('agui'),
  };
  if (clientRuns === 0) {
    clientRow.note = `skipped: quadratic, one run would take about ${Math.round(projectedMs / 1000)} s`;
  } else {
    clientRow.measurement = await measure(() => AGUI_CLIENT_PIPELINE.run({ text: texts.agui, bytes: bytes.agui }), {
      warmup: size === SIZES[0],
      runs: clientRuns,
    });
    if (clientRuns === RUNS) clientRow.bytesFile = files.agui;
    else
      clientRow.note = `one run: five would take about ${Math.round((RUNS * clientRow.measurement.median) / 60_000)} minutes`;
    aguiClientLastMedian = clientRow.measurement.median;
    aguiClientLastSize = size;
  }
  rows.push(clientRow);
  console.log(`measured N=${size}`);
}

// Entity scaling: per-event cost of streaming into one message with K finished entities
// around it. The entity counts take turns round by round, as the pipelines do, and each
// sample streams 200,000 deltas, so that a collection or a growth of the id table falls
// on all of them alike; the variant that reads the state every 130 deltas streams 50,000.
const ENTITY_COUNTS = [100, 1_000, 10_000];
const ENTITY_ROUNDS = 10;

/** Microseconds per delta, streaming into the live message; reading the state every `readEvery` deltas if given. */
function streamDeltas(entities: number, deltaCount: number, readEvery?: number): number {
  const { store, deltas } = storeWithEntities(entities, deltaCount);
  const start = performance.now();
  for (let index = 0; index < deltas.length; index += 1) {
    store.dispatch(deltas[index]);
    if (readEvery !== undefined && index % readEvery === readEvery - 1) store.getSnapshot();
  }
  store.getSnapshot();
  const micros = ((performance.now() - start) * 1000) / deltas.length;
  store.destroy();
  return micros;
}

const plainSamples = new Map<number, number[]>(ENTITY_COUNTS.map((count) => [count, []]));
const readingSamples = new Map<number, number[]>(ENTITY_COUNTS.map((count) => [count, []]));
gc();
for (let round = 0; round < ENTITY_ROUNDS + 1; round += 1) {
  for (const entities of ENTITY_COUNTS) {
    const plain = streamDeltas(entities, 200_000);
    const reading = streamDeltas(entities, 50_000, 130);
    // The first round is the warm-up.
    if (round > 0) {
      plainSamples.get(entities)?.push(plain);
      readingSamples.get(entities)?.push(reading);
    }
  }
}
const entityDispatch = ENTITY_COUNTS.map((entities) => ({
  entities,
  microsPerEvent: median(plainSamples.get(entities) ?? []),
  microsPerEventWithReads: median(readingSamples.get(entities) ?? []),
}));

// Bundle sizes, measured as the size check measures them.
const bundle = async (contents: string, external: string[] = []) => (await bundleSize(contents, external)).gzipKb;
const bundles: Array<[string, number]> = [
  // First, the sizes the README states (the size check checks these rows against them).
  ...(await Promise.all(
    statedBundles.map(
      async (stated): Promise<[string, number]> => [stated.name, await bundle(stated.contents, [...stated.external])],
    ),
  )),
  ['agent-machines/providers', await bundle("export * from './dist/providers.js';")],
  ['agent-machines/providers/agui', await bundle("export * from './dist/providers-agui.js';")],
  ['agent-machines/providers/openai', await bundle("export * from './dist/providers-openai.js';")],
  ['agent-machines/providers/anthropic', await bundle("export * from './dist/providers-anthropic.js';")],
  ['agent-machines/transports', await bundle("export * from './dist/transports.js';")],
  [
    'agent-machines + providers/openai (an app)',
    await bundle(
      "export * from './dist/index.js'; export * from './dist/providers-openai.js'; export { runAgentProvider } from './dist/providers.js';",
    ),
  ],
  ['@ag-ui/client (HttpAgent)', await bundle("export { HttpAgent } from '@ag-ui/client';")],
  [
    '@ai-sdk/react (useChat), React external',
    await bundle("export { useChat } from '@ai-sdk/react';", ['react', 'react-dom']),
  ],
];

// Peak memory: every measured pipeline once more, each in its own process, two at a time.
const memoryJobs = rows.filter((row) => row.measurement !== undefined && row.bytesFile !== undefined);
let nextJob = 0;
async function memoryWorker(): Promise<void> {
  while (nextJob < memoryJobs.length) {
    const row = memoryJobs[nextJob++] as PipelineRow;
    row.peakRssMb = await peakRssRise(row.memoryId, row.bytesFile as string);
  }
}
await Promise.all([memoryWorker(), memoryWorker()]);
rmSync(bytesDir, { recursive: true, force: true });
console.log('measured peak memory');

// Checkpoint cost (bench/checkpoint.ts), in a process of its own: measured here, after the pipelines, a
// heap grown to hundreds of megabytes slowed the JSON round trip alone from about 30 ms to
// 52 ms; measured before them, its restore path left the pipelines slower.
const checkpoint = JSON.parse(
  (
    await execFileAsync(
      process.execPath,
      ['--expose-gc', '--import', 'tsx', fileURLToPath(new URL('./checkpoint.ts', import.meta.url))],
      { maxBuffer: 1 << 20 },
    )
  ).stdout,
) as {
  roundTripAndResetMs: number;
  roundTripMs: number;
  messages: number;
  restoreRuns: number;
  restore: Record<'memory' | 'webStorage', { saveMs: number; loadMs: number; resetMs: number; totalMs: number }>;
};
console.log('measured the checkpoint');

// Per-token render cost in Chromium (bench/browser/tokenCost.ts), in a process of its own;
// skipped where there is no Chromium.
const chromiumPath = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
let tokenCost: TokenCostReport | undefined;
if (existsSync(chromiumPath)) {
  tokenCost = JSON.parse(
    (
      await execFileAsync(
        process.execPath,
        ['--import', 'tsx', fileURLToPath(new URL('./browser/tokenCost.ts', import.meta.url)), '--json'],
        { maxBuffer: 1 << 20 },
      )
    ).stdout,
  ) as TokenCostReport;
  console.log('measured the per-token render cost in Chromium');
} else {
  console.log(`skipped the per-token render cost: no Chromium at ${chromiumPath} (apt-get install -y chromium)`);
}

// The agent host under load (bench/server.ts): its host and its clients in processes of
// their own, the clients' cost kept out of the host's memory.
const serverLoad = JSON.parse(
  (
    await execFileAsync(
      process.execPath,
      ['--expose-gc', '--import', 'tsx', fileURLToPath(new URL('./server.ts', import.meta.url)), '--json'],
      { maxBuffer: 1 << 20 },
    )
  ).stdout,
) as ServerLoadReport[];
console.log('measured the agent host under load');

// The host over a Redis Cluster: 1 and 2 host processes with 400 light readers, in rounds that
// take turns, and a failover.
const benchScript = async (file: string, args: string[]) =>
  JSON.parse(
    (
      await execFileAsync(
        process.execPath,
        ['--expose-gc', '--import', 'tsx', fileURLToPath(new URL(file, import.meta.url)), ...args],
        { maxBuffer: 1 << 20 },
      )
    ).stdout,
  ) as unknown;
let redisCluster: RedisClusterReport | undefined;
if (redisClusterAvailable()) {
  const scaleOut: ServerLoadReport[] = [];
  for (let round = 0; round < SCALE_OUT.rounds; round += 1) {
    for (const hosts of SCALE_OUT.hosts) {
      // The same client processes either way: only the host processes change.
      scaleOut.push(...((await benchScript('./server.ts', scaleOutArguments(hosts))) as ServerLoadReport[]));
    }
  }
  const failover = (await benchScript('./redisClusterFailover.ts', ['--json'])) as RedisClusterReport['failover'];
  redisCluster = { scaleOut, failover };
  console.log('measured the host over a Redis Cluster');
} else {
  console.log('skipped the Redis Cluster figures: no redis-server 7 and redis-cli on the PATH');
}

// Report.
const fmt = (value: number, digits = 1) => value.toFixed(digits);
const lines: string[] = [];
const cpu = os.cpus()[0]?.model ?? 'unknown CPU';
lines.push('# Benchmark results', '');
lines.push(
  `Run on ${new Date().toISOString().slice(0, 10)}: ${cpu}, ${os.cpus().length} cores, ${fmt(os.totalmem() / 1024 ** 3, 0)} GiB, ${os.platform()} ${os.release()}, Node ${process.version}.`,
);
lines.push(
  'Produced by `npm run bench`; medians of 5 runs after a warm-up, all in one process, the heap collected before each size. Ratios are measured side by side in this run. Peak RSS rise: one more run of the pipeline in a fresh process, from the resident memory after the workload is encoded to the high-water mark.',
  '',
);
lines.push('## Pipelines: bytes to state', '');
lines.push(
  'Workload: one run with one assistant message of N text deltas (4-8 characters), 20 tool calls with 50 argument deltas each, one reasoning message of 5,000 deltas. "Frames" counts SSE data frames.',
  '',
);
lines.push(
  '| N | pipeline | frames | runs | median ms | µs / frame | × floor | peak RSS rise MB |',
  '|---|---|---|---|---|---|---|---|',
);
for (const row of rows) {
  const m = row.measurement;
  lines.push(
    m === undefined
      ? `| ${row.size} | ${row.name} | ${row.frames} | - | - | - | - | ${row.note ?? ''} |`
      : `| ${row.size} | ${row.name}${row.note ? ` (${row.note})` : ''} | ${row.frames} | ${m.runs} | ${fmt(m.median)} | ${fmt((m.median * 1000) / row.frames, 2)} | ${fmt(m.median / row.floor, 2)} | ${row.peakRssMb === undefined ? '-' : fmt(row.peakRssMb)} |`,
  );
}
/** A pipeline's smallest and largest measured sizes, and how frames and time grew between them. */
function scalingOf(name: string) {
  const measuredRows = rows.filter((row) => row.name === name && row.measurement !== undefined);
  const small = measuredRows[0];
  const large = measuredRows[measuredRows.length - 1];
  if (!small?.measurement || !large?.measurement || small === large) return undefined;
  return {
    sizes: `${small.size} → ${large.size}`,
    framesRatio: large.frames / small.frames,
    timeRatio: large.measurement.median / small.measurement.median,
  };
}
lines.push('', '## Scaling: time(largest N) / time(10k)', '');
lines.push('| pipeline | sizes | frames ratio | time ratio | time ratio / frames ratio |', '|---|---|---|---|---|');
for (const name of [...new Set(rows.map((row) => row.name))]) {
  const scale = scalingOf(name);
  lines.push(
    scale === undefined
      ? `| ${name} | - | - | - | measured at one size only |`
      : `| ${name} | ${scale.sizes} | ${fmt(scale.framesRatio, 2)} | ${fmt(scale.timeRatio, 2)} | ${fmt(scale.timeRatio / scale.framesRatio, 2)} |`,
  );
}
lines.push('', '## Checkpoints while streaming: a coordinator saving to memory storage', '');
lines.push(
  `The agent-machines pipeline (read at the end) with a checkpoint coordinator subscribed as the runtime subscribes it: \`schedule('batch')\` on every store notification, \`schedule('cursor')\` on every cursor (these SSE streams carry no \`id\`, so none), \`schedule('terminal')\` once the run's terminal event is dispatched; the checkpoint built by the runtime's \`buildConversationCheckpoint\`, saved to \`createMemoryAgentCheckpointStorage()\` with the default throttle (1000 ms): a run shorter than a second saves twice, at its first event and at its end. Against the same pipeline without it, the two taking turns (the first of a pair alternating) after 3 warm-up pairs, for ${CHECKPOINT_MIN_PAIRS} pairs or as many as fit in about ${CHECKPOINT_BUDGET_MS / 1000} s; the ratio is the median of the paired ratios.`,
  '',
);
lines.push('| N | format | pairs | median ms without | median ms with | with / without (median of pairs) |');
lines.push('|---|---|---|---|---|---|');
const formatName = { agui: 'AG-UI', openai: 'OpenAI-compatible' } as const;
for (const row of checkpointRows)
  lines.push(
    `| ${row.size} | ${formatName[row.format]} | ${row.pairs} | ${fmt(row.withoutMs)} | ${fmt(row.withMs)} | ${fmt(row.ratio, 3)} |`,
  );
lines.push('', '## Entity scaling: deltas into one message beside K finished entities', '');
lines.push(
  '| entities | µs / delta (200,000 deltas) | µs / delta, state read every 130 deltas (50,000 deltas) |',
  '|---|---|---|',
);
for (const row of entityDispatch)
  lines.push(`| ${row.entities} | ${fmt(row.microsPerEvent, 3)} | ${fmt(row.microsPerEventWithReads, 3)} |`);
const at100 = entityDispatch[0];
const at10k = entityDispatch[2];
if (at100 && at10k) {
  lines.push(
    '',
    `Per-delta cost at 10,000 entities / at 100: ${fmt(at10k.microsPerEvent / at100.microsPerEvent, 2)} (reads at the end), ${fmt(at10k.microsPerEventWithReads / at100.microsPerEventWithReads, 2)} (a read every 130 deltas: each read copies the container of the entity that changed).`,
  );
}
lines.push('', '## Checkpoint-shaped cost: 10,000-entity AgentState', '');
lines.push(
  `JSON round trip + \`reset(state)\`: ${fmt(checkpoint.roundTripAndResetMs)} ms (JSON round trip alone: ${fmt(checkpoint.roundTripMs)} ms; ${checkpoint.messages} messages; medians of 5 runs in a fresh process).`,
);
lines.push('', '## Checkpoint save and restore: 10,000-entity session', '');
lines.push(
  `A session of 10,000 finished messages and one running run (its input and cursor saved). Save: the coordinator builds the checkpoint, checks it (inputs plain JSON, size) and calls \`storage.save\` (JSON.stringify); load + validate: \`loadAgentCheckpoint\` (JSON.parse, \`parseAgentCheckpoint\`); reset: \`store.reset(checkpoint.state)\` into an empty store and its first \`getSnapshot()\`. Each run has a session of its own (a checkpoint measured once has its sizes remembered); medians of ${checkpoint.restoreRuns} runs after 2 warm-ups in a fresh process, the two storages taking turns. The memory storage keeps JSON text too, so both rows go through it.`,
  '',
);
lines.push('| storage | save ms | load + validate ms | reset ms | total ms |', '|---|---|---|---|---|');
const storageName = {
  memory: '`createMemoryAgentCheckpointStorage()`',
  webStorage: '`createWebStorageAgentCheckpointStorage` over an in-memory Storage',
} as const;
for (const name of ['memory', 'webStorage'] as const) {
  const times = checkpoint.restore[name];
  lines.push(
    `| ${storageName[name]} | ${fmt(times.saveMs)} | ${fmt(times.loadMs)} | ${fmt(times.resetMs)} | ${fmt(times.totalMs)} |`,
  );
}
lines.push('', '## Per-token render cost in Chromium: 10 and 1,000 earlier messages', '');
if (tokenCost === undefined) {
  lines.push(`Skipped: no Chromium at ${chromiumPath}.`);
} else {
  lines.push(
    `\`bench/browser/tokenCost.ts\`: Chromium ${tokenCost.chromium} headless, a page bundled with esbuild in production mode (react-dom/profiling). A thread of N earlier messages is put into the conversation's store before the first render, then a local in-page runtime streams ${tokenCost.tokens.toLocaleString('en')} tokens into one new assistant message, ${tokenCost.perFrame} a frame (paced) or all at once (burst); \`useXChat\` with its default batching (one commit per animation frame). Profiler: the summed \`actualDuration\` of the commits from the request to the last one, per token. Main thread and script: Chromium's TaskDuration and ScriptDuration over the stream (store, flushes, selectors, React, layout, paint), per token. Wall: request to the run's end, burst. Each run a fresh load of the page, the sizes taking turns; medians of ${tokenCost.rows[0]?.runs} runs after a warm-up round.`,
    '',
  );
  lines.push(
    '| list | earlier messages | µs / token, Profiler | commits | list renders / commit | bubble renders / commit | µs / token, main thread | µs / token, script | µs / token, wall (burst) | commits (burst) |',
    '|---|---|---|---|---|---|---|---|---|---|',
  );
  for (const row of tokenCost.rows)
    lines.push(
      `| ${TOKEN_COST_LIST_NAMES[row.list]} | ${row.n} | ${fmt(row.actualMicrosPerToken, 2)} | ${row.commits} | ${fmt(row.listRendersPerCommit, 2)} | ${fmt(row.bubbleRendersPerCommit, 2)} | ${fmt(row.taskMicrosPerToken, 2)} | ${fmt(row.scriptMicrosPerToken, 2)} | ${fmt(row.wallMicrosPerToken, 2)} | ${row.burstCommits} |`,
    );
}
lines.push('', ...serverLoadSection(serverLoad));
lines.push('', ...redisClusterSection(redisCluster));
lines.push('', '## Bundle size (esbuild, minified, gzip, browser)', '');
lines.push('| entry | KB |', '|---|---|');
for (const [name, size] of bundles) {
  lines.push(`| ${name} | ${fmt(size)} |`);
}

/** A measured row's ratio to its floor, by pipeline name and size. */
function floorRatio(name: string, size: number): string {
  const row = rows.find((candidate) => candidate.size === size && candidate.name === name);
  return row?.measurement ? `${fmt(row.measurement.median / row.floor, 2)}×` : 'not measured';
}
const ourPipelines = PIPELINES.filter((pipeline) => pipeline.id.startsWith('agent-machines:')).map(
  (pipeline) => pipeline.name,
);
const worstLinearity = Math.max(
  ...ourPipelines.map((name) => {
    const scale = scalingOf(name);
    return scale === undefined ? Number.NaN : scale.timeRatio / scale.framesRatio;
  }),
);
lines.push('', '## Targets', '');
lines.push(
  `- agent-machines at N=50,000 ≤ 3× the floor: AG-UI ${floorRatio('agent-machines, AG-UI, read at end', 50_000)} (reading every 16 KiB: ${floorRatio('agent-machines, AG-UI, read per 16 KiB frame', 50_000)}), OpenAI-compatible ${floorRatio('agent-machines, OpenAI-compatible, read at end', 50_000)} (${floorRatio('agent-machines, OpenAI-compatible, read per 16 KiB frame', 50_000)}).`,
  `- Linear: time(100k) / time(10k) ≤ 1.2× the frame ratio: at most ${fmt(worstLinearity, 2)}× over the four agent-machines pipelines.`,
);
if (at100 && at10k)
  lines.push(
    `- Per-event cost at 10,000 entities ≤ 1.5× the cost at 100: ${fmt(at10k.microsPerEvent / at100.microsPerEvent, 2)}×.`,
  );
lines.push(`- reset + JSON round trip of 10,000 entities ≤ 100 ms: ${fmt(checkpoint.roundTripAndResetMs)} ms.`);
const worstCheckpoint = checkpointRows.reduce<CheckpointOverhead | undefined>(
  (worst, row) => (worst === undefined || row.ratio > worst.ratio ? row : worst),
  undefined,
);
if (worstCheckpoint)
  lines.push(
    `- Pipeline with the checkpoint coordinator (memory storage, throttled) ≤ 1.10× without: at most ${fmt(worstCheckpoint.ratio, 3)}× (${formatName[worstCheckpoint.format]}, N=${worstCheckpoint.size}).`,
  );
lines.push(
  `- Checkpoint save + restore of a 10,000-entity session < 100 ms: ${fmt(checkpoint.restore.memory.totalMs)} ms through memory storage, ${fmt(checkpoint.restore.webStorage.totalMs)} ms through Web Storage.`,
);
if (tokenCost !== undefined) {
  const [small, large] = TOKEN_COST_THREADS;
  const ratios = TOKEN_COST_LISTS.map(
    (list) => `${fmt(tokenCost.ratios[list] ?? Number.NaN, 2)}× (${TOKEN_COST_LIST_NAMES[list]})`,
  );
  const commits = tokenCost.rows.map((row) => row.commits);
  lines.push(
    `- Per-token render cost (Profiler) with ${large.toLocaleString('en')} earlier messages ≤ ${TOKEN_COST_TARGET}× the cost with ${small}: ${ratios.join(', ')}. Commits for a ${tokenCost.tokens.toLocaleString('en')}-token stream: ${Math.min(...commits)}-${Math.max(...commits)} at ${tokenCost.perFrame} tokens a frame.`,
  );
}
lines.push(serverLoadTarget(serverLoad));
lines.push(redisClusterTarget(redisCluster));

const report = `${lines.join('\n')}\n`;
writeFileSync(new URL('./RESULTS.md', import.meta.url), report);
console.log(`\n${report}`);
process.exit(0);
