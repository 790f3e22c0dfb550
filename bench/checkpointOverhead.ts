// The cost of saving checkpoints while streaming: the agent-machines pipeline with and without a
// coordinator (bench/checkpointedRun.ts), taking turns on the same bytes in one process, as
// bench/compare.ts runs two checkouts. The figure is the median of the paired ratios, which
// cancels the machine's drift between pairs.
import { agentMachines } from './pipelines';

export interface CheckpointOverhead {
  size: number;
  format: 'agui' | 'openai';
  pairs: number;
  withoutMs: number;
  withMs: number;
  /** Median of with / without over the pairs. */
  ratio: number;
}

export const CHECKPOINT_WARMUP_PAIRS = 3;
/** At least this many pairs... */
export const CHECKPOINT_MIN_PAIRS = 21;
/**
 * ...and as many more as fit in about this many milliseconds: one run of a short stream
 * varies by ±20% (a collection falls in it or not), and the median of 21 ratios of those
 * moves by several percent, as much as the cost being measured.
 */
export const CHECKPOINT_BUDGET_MS = 8_000;
const MAX_PAIRS = 201;

function median(values: readonly number[]): number {
  return [...values].sort((a, b) => a - b)[Math.floor((values.length - 1) / 2)] as number;
}

async function timed(run: () => Promise<unknown>): Promise<number> {
  const start = performance.now();
  await run();
  return performance.now() - start;
}

/**
 * Runs both variants in pairs after warm-up pairs (see `CHECKPOINT_BUDGET_MS`), the one that goes first
 * changing every pair: the garbage of the first run is collected during the second, and
 * that falls on each alike. No collection is forced between runs (see `timed` in run.ts).
 */
export async function measureCheckpointOverhead(
  size: number,
  format: 'agui' | 'openai',
  bytes: Uint8Array,
): Promise<CheckpointOverhead> {
  const without = () => agentMachines(format, bytes, 'end');
  const saved = () => agentMachines(format, bytes, 'end', { checkpoint: true });
  let warmUpMs = 0;
  for (let pair = 0; pair < CHECKPOINT_WARMUP_PAIRS; pair += 1) {
    warmUpMs += await timed(without);
    warmUpMs += await timed(saved);
  }
  const fitting = Math.ceil(CHECKPOINT_BUDGET_MS / (warmUpMs / CHECKPOINT_WARMUP_PAIRS));
  // Odd, so that the median is one of the ratios.
  const pairs = Math.min(MAX_PAIRS, Math.max(CHECKPOINT_MIN_PAIRS, fitting)) | 1;
  const withoutTimes: number[] = [];
  const withTimes: number[] = [];
  const ratios: number[] = [];
  for (let pair = 0; pair < pairs; pair += 1) {
    let plain: number;
    let checkpointed: number;
    if (pair % 2 === 0) {
      plain = await timed(without);
      checkpointed = await timed(saved);
    } else {
      checkpointed = await timed(saved);
      plain = await timed(without);
    }
    withoutTimes.push(plain);
    withTimes.push(checkpointed);
    ratios.push(checkpointed / plain);
  }
  return {
    size,
    format,
    pairs: ratios.length,
    withoutMs: median(withoutTimes),
    withMs: median(withTimes),
    ratio: median(ratios),
  };
}
