// Side by side, in one process: this checkout's pipelines against another checkout's, the
// two taking turns on the same bytes, so that the machine's drift between runs cancels out.
// Usage: npm run bench:compare -- <other checkout> [N] [agui|openai] [end|per-read]
// (the other checkout needs its node_modules, a symlink to this one's will do).
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import * as current from './pipelines';
import { createWorkload, encodeAgUI, encodeOpenAI } from './workload';

/** A checkout from before the rename names its pipeline `agentstate`. */
type Pipelines = Partial<typeof current> & { agentstate?: typeof current.agentMachines };

const [other, size = '50000', format = 'openai', mode = 'per-read'] = process.argv.slice(2);
if (other === undefined || (format !== 'agui' && format !== 'openai') || (mode !== 'end' && mode !== 'per-read')) {
  console.error('usage: npm run bench:compare -- <other checkout> [N] [agui|openai] [end|per-read]');
  process.exit(2);
}
const baselineModule = (await import(pathToFileURL(path.resolve(other, 'bench/pipelines.ts')).href)) as Pipelines;
const baseline = baselineModule.agentMachines ?? baselineModule.agentstate;
if (baseline === undefined) throw new Error(`${other}/bench/pipelines.ts exports no pipeline to compare`);
const workload = createWorkload(Number(size));
const bytes = new TextEncoder().encode(format === 'openai' ? encodeOpenAI(workload) : encodeAgUI(workload));

async function time(run: () => Promise<unknown>): Promise<number> {
  (globalThis as { gc?: () => void }).gc?.();
  const start = performance.now();
  await run();
  return performance.now() - start;
}

const median = (values: readonly number[]) =>
  [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] as number;
for (let warmUp = 0; warmUp < 3; warmUp += 1) {
  await baseline(format, bytes, mode);
  await current.agentMachines(format, bytes, mode);
}
const before: number[] = [];
const after: number[] = [];
const ratios: number[] = [];
for (let turn = 0; turn < 21; turn += 1) {
  const then = await time(() => baseline(format, bytes, mode));
  const now = await time(() => current.agentMachines(format, bytes, mode));
  before.push(then);
  after.push(now);
  ratios.push(now / then);
}
console.log(
  `${format}, read ${mode === 'end' ? 'at the end' : 'every 16 KiB'}, N=${size}: ${other} ${median(before).toFixed(1)} ms, ` +
    `this checkout ${median(after).toFixed(1)} ms; median of 21 paired ratios ${median(ratios).toFixed(3)}`,
);
